"""Spreadsheet formula injection: class names, ids, ``--names`` and label names that start with ``= + - @``, a tab
or a carriage return get a leading ``'`` in every CSV featx writes (numbers untouched), the JSON stays exact, and
featx reading its own CSVs (explain, plot, report, compare) shows the original names."""

from __future__ import annotations

import csv
import json
import math
import random

import pandas as pd
import pytest
from click.testing import CliRunner
from support.tiny import WORDS, write_csv

import featx
from featx.cli import main
from featx.io import FORMULA_STARTS, csv_text, neutral_cell, read_csv, restored_cell
from featx.report import load_results

CLASSES = ['=HYPERLINK("x")', "+cmd|' /C calc'!A0", "-1", "@SUM(A1)"]
IDS = ["=id", "+id", "-id", "@id", "id"]
TOPICS = ["-a", "+b"]

CELLS = [  # (written by featx, as the CSV holds it)
    ('=HYPERLINK("x")', '\'=HYPERLINK("x")'),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-x", "'-x"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"),
    ("\rx", "'\rx"),
    ("'=x", "''=x"),  # an existing quote is kept: reading back gives '=x again
    ("-1", "-1"),  # plain numbers run nothing: unchanged
    ("+2.5e3", "+2.5e3"),
    ("-", "-"),  # featx's "none" mark
    ("'-1", "'-1"),
    ("plain", "plain"),
    ("a=b", "a=b"),
    ("", ""),
    (-1, -1),
    (None, None),
]


@pytest.mark.parametrize(("value", "written"), CELLS)
def test_a_cell_is_neutralised_and_restored(value, written):
    assert neutral_cell(value) == written
    assert restored_cell(written) == value


def test_a_table_round_trips_with_numbers_untouched(tmp_path):
    frame = pd.DataFrame(
        {"=name": [value for value, _ in CELLS[:14]], "n": range(-7, 7), "x": [-0.5] * 14, "ok": [True] * 14}
    )
    path = tmp_path / "t.csv"
    path.write_text(csv_text(frame))
    raw = list(csv.reader(path.open(newline="")))
    assert raw[0] == ["'=name", "n", "x", "ok"] and raw[1][1:] == ["-7", "-0.5", "True"]
    assert [row[0] for row in raw[1:]] == [written for _, written in CELLS[:14]]
    back = read_csv(path, dtype={"=name": str}, keep_default_na=False)
    pd.testing.assert_frame_equal(back, frame)


def _dangerous(cell: str) -> bool:
    from featx.io.csv_files import _PLAIN_NUMBER

    return cell[:1] in FORMULA_STARTS and cell != "-" and not _PLAIN_NUMBER.fullmatch(cell)


@pytest.fixture(scope="module")
def hostile(tiny_model, tmp_path_factory):
    """Features of 60 rows whose ids, class names and label names all start like formulas."""
    folder = tmp_path_factory.mktemp("hostile-csv")
    rng = random.Random(0)
    rows = [
        (f"{IDS[i % 5]}{i}", " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(3, 9))), CLASSES[i % 4])
        + (TOPICS[i % 2],)
        for i in range(60)
    ]
    corpus = write_csv(folder / "corpus.csv", rows, header=("id", "text", "=cmd", "-topic"))
    features = folder / "f.h5"
    featx.extract(corpus, model=str(tiny_model), output=features, id_col="id", progress=False)
    return features


def _run(*args):
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_every_csv_is_neutralised_and_names_come_back(hostile):
    folder = hostile.parent
    fast = ("--pooling", "mean", "--jobs", "1", "--folds", "3")
    _run("probe", hostile, "--label", "=cmd", "--train-sizes", "0.5,1.0", *fast)
    _run("probe", hostile, "--label", "-topic", *fast)
    results = folder / "f.=cmd.probe.csv"
    _run("compare", results, folder / "f.-topic.probe.csv", "--names", "=A,-B", "-o", folder / "cmp.png")
    _run("erase", hostile, "--label", "=cmd", "--pooling", "mean", "--jobs", "1", "-o", folder / "erased.h5")
    _run("neurons", hostile, "--label", "=cmd", "--layer", "1", "--jobs", "1", "--draws", "2")
    written = sorted(path for path in folder.glob("*.csv") if path.name != "corpus.csv")
    assert len(written) >= 9, written
    for path in written:
        cells = [cell for row in csv.reader(path.open(newline="", encoding="utf-8")) for cell in row]
        assert not [cell for cell in cells if _dangerous(cell)], path.name
    predictions = list(csv.DictReader((folder / "f.=cmd.predictions.csv").open(newline="", encoding="utf-8")))
    assert {row["label"] for row in predictions} == {"'" + CLASSES[0], "'" + CLASSES[1], "-1", "'" + CLASSES[3]}
    assert predictions[0]["id"] == "'=id0"
    assert [row[0] for row in csv.reader((folder / "cmp.csv").open())][1:] == ["'=A", "'-B"]

    payload = json.loads((folder / "f.=cmd.probe.json").read_text())  # the JSON: exact names
    assert payload["meta"]["label"] == "=cmd" and payload["meta"]["label_names"] == sorted(CLASSES)
    assert {record["label"] for record in payload["results"]} == {"=cmd"}

    table, _ = load_results(results)  # featx reading its own CSV: the original names
    assert set(table["label"]) == {"=cmd"} and '=HYPERLINK("x")' in table["per_class_f1"].iloc[-1]
    explained = _run("explain", results, "--limit", "60")
    assert '=HYPERLINK("x")' in explained and "=id" in explained and "@SUM(A1)" in explained
    assert not [text for text in ("'=HYPERLINK", "'=id", "'+cmd", "'@SUM", "'-id") if text in explained], explained
    _run("plot", results)
    _run("plot", folder / "f.=cmd.curve.csv")
    _run("report", results, "-o", folder / "page.html")
    page = (folder / "page.html").read_text(encoding="utf-8")
    assert "=HYPERLINK(&quot;x&quot;)" in page and "&#x27;=" not in page and "'=HYPERLINK" not in page
    assert not math.isnan(float(table["accuracy"].iloc[-1]))

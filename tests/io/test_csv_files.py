"""``featx.io.write_csv``, the one CSV writer: formula-like text neutralised exactly as featx always wrote it (the
golden files were written by the code this writer replaced), atomic, ``-`` for standard output, and one clear
error for a path that cannot be written."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

GOLDEN = Path(__file__).parent / "golden"
HOSTILE = ['=HYPERLINK("x")', "+cmd|' /C calc'!A0", "-x", "@SUM(A1)", "\tx", "'=x", "-1", "+2.5e3", "-", "a=b", ""]


def hostile_frame(carriage_return: bool = False) -> pd.DataFrame:
    """Text cells of every kind the guard sees, numbers, booleans and a missing value; ``carriage_return``: one
    cell holds ``\\r`` (the table is then written with its text quoted)."""
    texts = [*HOSTILE, "line\rbreak" if carriage_return else "plain"]
    frame = pd.DataFrame(
        {
            "=name": texts,
            "n": range(-6, 6),
            "x": [-0.5, 1e-9, math.nan, 2.0, -3.25, 0.0, 1.5, -1.0, 4.0, 5.0, 6.0, 7.0],
            "ok": [True, False] * 6,
            "@class": ["-a", "+b", "c"] * 4,
        }
    )
    return frame.set_index(pd.Index([f"+r{i}" for i in range(12)], name="-row"))


def prediction_frame() -> pd.DataFrame:
    """A ``featx predict`` table: ids and classes that start like formulas, plain column names."""
    return pd.DataFrame(
        {
            "id": ["=id0", "+id1", "-id2", "@id3", "id4"],
            "prediction": ['=HYPERLINK("x")', "-1", "@SUM(A1)", "plain", "+cmd"],
            "p_a": [0.25, 0.5, 0.125, 1.0, 0.0],
            "p_b": [0.75, 0.5, 0.875, 0.0, 1.0],
        }
    )


@pytest.mark.parametrize(
    ("name", "frame", "options"),
    [
        ("hostile.csv", hostile_frame, {"index": True}),
        ("hostile-cr.csv", lambda: hostile_frame(carriage_return=True), {"index": True}),
        ("predictions.csv", prediction_frame, {}),
        ("predictions.tsv", prediction_frame, {"sep": "\t"}),
    ],
)
def test_the_guard_writes_what_featx_always_wrote(tmp_path, name, frame, options):
    from featx.io import write_csv

    path = write_csv(frame(), tmp_path / name, **options)
    assert path.read_bytes() == (GOLDEN / name).read_bytes()


def test_featx_reads_its_own_csv_back(tmp_path):
    from featx.io import read_csv, write_csv

    frame = hostile_frame().reset_index()
    back = read_csv(write_csv(frame, tmp_path / "t.csv"), dtype={"=name": str}, keep_default_na=False)
    assert list(back.columns) == list(frame.columns)
    assert back["=name"].tolist() == frame["=name"].tolist() and back["-row"].tolist() == frame["-row"].tolist()


def test_a_dash_writes_to_standard_output(tmp_path, capsys):
    from featx.io import csv_text, write_csv

    write_csv(prediction_frame(), "-")
    assert capsys.readouterr().out == csv_text(prediction_frame())
    assert not list(tmp_path.iterdir())


def test_a_path_that_cannot_be_written_is_one_clear_error(tmp_path):
    from featx.errors import StoreError
    from featx.io import write_csv

    with pytest.raises(StoreError, match=r"cannot write .*missing/t.csv: No such file or directory") as raised:
        write_csv(prediction_frame(), tmp_path / "missing" / "t.csv", hint="choose another folder")
    assert raised.value.hint == "choose another folder"


@pytest.mark.parametrize(
    ("python", "hint"), [(False, "choose a writable path with -o"), (True, "choose a writable path with output")]
)
def test_the_default_hint_names_the_output_as_its_caller_does(tmp_path, python, hint):
    """A writer that gives no hint of its own: ``-o`` on the command line, the ``output`` keyword from Python."""
    from featx.errors import StoreError
    from featx.io import write_csv
    from featx.options import Options, command_line, keywords_of

    with pytest.raises(StoreError) as raised, keywords_of(Options) if python else command_line():
        write_csv(prediction_frame(), tmp_path / "missing" / "t.csv")
    assert raised.value.hint == hint


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    import featx.io.csv_files as module
    from featx.errors import StoreError
    from featx.io import write_csv

    path = tmp_path / "t.csv"
    path.write_text("old\n")

    def refuse(target, text, encoding="utf-8"):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(module, "atomic_write_text", refuse)
    with pytest.raises(StoreError, match="Permission denied"):
        write_csv(prediction_frame(), path)
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def compare_table(folder: Path) -> str:
    """``featx compare`` of two synthetic results files with formula-like names: its table, paths made relative."""
    from featx.cli import main

    paths = []
    for name, label, peak in (("a.probe", "=label", (2, "mean")), ("b.probe", "-label", (1, "cls"))):
        frame, meta = synthetic_results(label=label, names=("=neg", "+pos"), peak=peak)
        paths.append(write_results(frame, meta, folder / name)[0])
    outcome = CliRunner().invoke(main, ["compare", *map(str, paths), "--names", "=A,-B", "-o", str(folder / "c.png")])
    assert outcome.exit_code == 0, outcome.output
    return (folder / "c.csv").read_text(encoding="utf-8").replace(str(folder), "FOLDER")


def test_compare_writes_the_table_it_always_wrote(tmp_path):
    assert compare_table(tmp_path) == (GOLDEN / "compare.csv").read_text(encoding="utf-8")

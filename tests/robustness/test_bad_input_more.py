"""More bad input, round two: compressed and semicolon files, JSON arrays, a FIFO corpus, a label name with
'/', an empty cat(), a tiny test set, and the output removed during a run."""

from __future__ import annotations

import bz2
import csv
import json
import os
import shutil
import threading

import pytest
from click.testing import CliRunner
from support.faults import many_rows_csv

import featx
from featx.cli import main
from featx.store import FeatureWriter, partial_path


def extract_cli(corpus, model, output, *extra):
    return ["extract", str(corpus), "--model", str(model), "-o", str(output), "-q", "--batch-size", "8", *extra]


def one_error(result, *fragments):
    assert result.exit_code == 2, result.output
    assert result.output.startswith("featx: error: ") and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


@pytest.mark.parametrize("kind", ["bzip2", "json array"])
def test_misleading_formats_get_the_right_hint(tiny_model, tmp_path, kind):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 12)
    text = corpus.read_text()
    if kind == "bzip2":  # .csv.gz is read; other compressions are named
        path, expected = tmp_path / "corpus.csv.bz2", ("bzip2-compressed", "bzcat")
        path.write_bytes(bz2.compress(text.encode()))
    else:
        path, expected = tmp_path / "corpus.json", ("JSON array", "JSON Lines")
        path.write_text(json.dumps(list(csv.DictReader(corpus.open()))))
    one_error(CliRunner().invoke(main, extract_cli(path, tiny_model, tmp_path / "o.h5")), *expected)


def test_a_fifo_corpus_is_read_once_without_hanging(tiny_model, tmp_path):
    data = many_rows_csv(tmp_path / "corpus.csv", 12).read_bytes()
    fifo = tmp_path / "corpus.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(data), daemon=True)
    writer.start()
    result = CliRunner().invoke(main, extract_cli(fifo, tiny_model, tmp_path / "o.h5"))
    writer.join(timeout=5)
    assert result.exit_code == 0, result.output
    with featx.open(tmp_path / "o.h5") as features:
        assert features.n_rows == 12


def test_a_label_name_with_a_slash_round_trips(tiny_model, tmp_path):
    corpus = tmp_path / "slash.csv"
    corpus.write_text(many_rows_csv(tmp_path / "c.csv", 12).read_text().replace("sentiment", "senti/ment", 1))
    result = CliRunner().invoke(main, extract_cli(corpus, tiny_model, tmp_path / "o.h5"))
    assert result.exit_code == 0, result.output
    with featx.open(tmp_path / "o.h5") as features:
        assert "senti/ment" in features.label_columns and len(features.labels("senti/ment")) == 12


@pytest.fixture(scope="module")
def small_split_file(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    corpus = many_rows_csv(folder / "c.csv", 40)
    lines, tests = corpus.read_text().splitlines(), 0
    kept = [lines[0]]
    for line in lines[1:]:
        if line.endswith(",test"):
            tests += 1
            line = line if tests <= 3 else line[: -len("test")] + "train"
        kept.append(line)
    corpus.write_text("\n".join(kept) + "\n")
    return featx.extract(corpus, model=str(tiny_model), output=folder / "small.h5", progress=False).output


def test_empty_cat_is_refused(small_split_file):
    one_error(CliRunner().invoke(main, ["probe", str(small_split_file), "--layer", "cat()"]), "concatenates no layers")


@pytest.mark.parametrize(("metric", "scores"), [("accuracy", "accuracies"), ("macro_f1", "macro-F1 scores")])
def test_a_three_row_test_set_warns_in_the_runs_metric(small_split_file, metric, scores):
    args = ["--label", "sentiment", "--layer", "1", "--pooling", "mean", "--no-control", "--metric", metric]
    result = CliRunner().invoke(main, ["probe", str(small_split_file), *args])
    assert result.exit_code == 0, result.output
    assert f"warning: only 3 test rows: {scores} and their intervals are too coarse" in result.output


def test_fit_warns_of_a_three_row_test_set_beside_its_score(small_split_file, tmp_path):
    """featx fit's test score on 3 rows gets featx probe's warning, under the score it is about."""
    args = ["fit", str(small_split_file), "--label", "sentiment", "--layer", "1", "--pooling", "mean"]
    result = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "small.featx")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    score = next(i for i, line in enumerate(lines) if line.startswith("test accuracy:"))
    assert " on 3 test rows;" in lines[score]
    assert lines[score + 1].startswith("warning: only 3 test rows: accuracies and their intervals are too coarse")


@pytest.mark.parametrize("what", ["the file", "its directory"])
def test_output_removed_during_the_run_is_one_message(tiny_model, tmp_path, monkeypatch, what):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 40)
    output = tmp_path / "out" / "out.h5"
    output.parent.mkdir()
    original = FeatureWriter.commit

    def commit_then_remove(self, rows_done):
        original(self, rows_done)
        if what == "the file":
            partial_path(output).unlink(missing_ok=True)
        else:
            shutil.rmtree(output.parent, ignore_errors=True)

    monkeypatch.setattr(FeatureWriter, "commit", commit_then_remove)
    result = CliRunner().invoke(main, extract_cli(corpus, tiny_model, output, "--commit-rows", "8"))
    one_error(result, "was removed or replaced while featx was writing it")
    assert result.output.count("featx: error") == 1


def test_excel_semicolon_export_is_read_and_the_delimiter_said(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 12)
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + corpus.read_text().replace(",", ";").replace("\n", "\r\n").encode())
    result = CliRunner().invoke(main, extract_cli(path, tiny_model, tmp_path / "o.h5"))
    assert result.exit_code == 0, result.output
    assert "read as semicolon-separated" in result.output
    with featx.open(tmp_path / "o.h5") as features:
        assert features.n_rows == 12 and "sentiment" in features.label_columns


def test_skip_empty_ids_round_trip_to_the_csv(tiny_model, tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("text,label\nfirst text,a\n,b\nthird text,a\n  ,b\nfifth text,b\n")
    result = CliRunner().invoke(main, extract_cli(path, tiny_model, tmp_path / "o.h5") + ["--skip-empty"])
    assert result.exit_code == 0, result.output
    original = list(csv.DictReader(path.open()))
    with featx.open(tmp_path / "o.h5") as features:
        assert features.ids == ["0", "2", "4"]
        assert [original[int(i)]["text"] for i in features.ids] == features.texts

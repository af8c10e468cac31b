"""Probe-side inputs that used to end in a traceback or a misleading message: a label name with '/', two
rows a class for svm and INLP, a word arcs report with classes absent from the test part, --allow-partial
on a word-level file, sentence-level analyses asked for a word label, and --join row with a longer labels
file. Each is now one clear error or a run that works."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.probe_data import N_ROWS
from support.tiny import WORDS

import featx
from featx.cli import main

RELATIONS = ["dep", *(f"rel{k}" for k in range(12))]  # more than the per-class figure colours


def _treebank(path, n_sentences: int, relations: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocabulary = [word for word in WORDS if word.isalpha()]
    lines = []
    for s in range(n_sentences):
        words = list(rng.choice(vocabulary, size=4))
        lines += [f"# sent_id = {path.stem}{s}", f"# text = {' '.join(words)}"]
        for i, word in enumerate(words):
            relation = "root" if i == 0 else relations[(s + i) % len(relations)]
            tag = ("NOUN", "VERB")[len(word) % 2]
            lines.append(f"{i + 1}\t{word}\t{word}\t{tag}\t_\t_\t{0 if i == 0 else 1}\t{relation}\t_\t_")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def treebank_file(tiny_model, tmp_path_factory):
    """A word-level file split by file name: the train part has 13 relations, the test part only 'dep'."""
    folder = tmp_path_factory.mktemp("treebank")
    _treebank(folder / "train.conllu", 60, RELATIONS, 0)
    _treebank(folder / "test.conllu", 10, ["dep"], 1)
    output = folder / "tb.h5"
    args = ["extract", str(folder / "train.conllu"), str(folder / "test.conllu"), "--model", str(tiny_model)]
    result = CliRunner().invoke(main, [*args, "-o", str(output), "-q"])
    assert result.exit_code == 0, result.output
    return output


def invoke(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def labels_file(path, header: str, values: list[str]):
    path.write_text(header + "\n" + "".join(value + "\n" for value in values))
    return path


# -- refused with one line -------------------------------------------------------------------------------
# (case, file: "sentences" or "words", command with {file}/{labels}, the expected error)
REFUSALS = [
    (
        "svm-two-rows-a-class",
        "sentences",
        "probe {file} --label few --classifier svm --folds 2 --jobs 1",
        r"too few labelled rows per class for the svm probe's search over C: the part of a training fold it "
        r"fits on \(1 row\(s\)\) holds one class only\s+hint: label more rows of each class \(at least 5\), "
        r"or use --classifier logreg",
    ),
    (
        "inlp-two-rows-a-class",
        "sentences",
        "erase {file} --label few --method inlp --folds 2",
        r"too few labelled rows per class for INLP: its probes are fitted on \d+ of the \d+ training rows, and "
        r"these hold one class only\s+hint: .*or use --method leace",
    ),
    (
        "sweep-word-label",
        "words",
        "probe {file} --label upos --sweep --jobs 1",
        r"'upos' is a word label of \S*tb\.h5: featx erase, featx neurons and --sweep work on sentence labels only"
        r"\s+hint: for word probes: featx probe \S*tb\.h5 --label upos",
    ),
    ("erase-word-label", "words", "erase {file} --label upos", r"'upos' is a word label .* sentence labels only"),
    ("neurons-word-label", "words", "neurons {file} --label upos", r"'upos' is a word label .* sentence labels only"),
    (
        "join-row-longer-labels",
        "sentences",
        "probe {file} --labels {labels} --label mood --join row --jobs 1",
        rf"mood\.csv has {N_ROWS + 10} data rows but \S*feats\.h5 has {N_ROWS} corpus rows: with --join row the "
        r"label file's rows must be the corpus rows, in order\s+hint: remove the extra rows",
    ),
]


@pytest.mark.parametrize(("case", "file", "command", "pattern"), REFUSALS, ids=[row[0] for row in REFUSALS])
def test_refused_with_one_clear_line(features_copy, treebank_file, tmp_path, case, file, command, pattern):
    features = features_copy if file == "sentences" else treebank_file
    if "few" in command:  # two labelled rows of each of two classes, the rest missing
        few = labels_file(
            tmp_path / "few.csv", "id,few", [f"{i},{'ab'[i % 2] if i < 4 else ''}" for i in range(N_ROWS)]
        )
        assert invoke("labels", "add", features, few).exit_code == 0
    labels = labels_file(tmp_path / "mood.csv", "mood", [("sad", "glad")[i % 2] for i in range(N_ROWS + 10)])
    args = command.format(file=features, labels=labels).split()
    result = invoke(*args, "-o", tmp_path / "out") if args[0] == "probe" else invoke(*args)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)


# -- now works --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_label_with_a_slash_is_probed_plotted_and_reported(features_copy, tmp_path):
    labels = labels_file(tmp_path / "slash.csv", "id,a/b", [f"{i},{'xy'[i % 2]}" for i in range(N_ROWS)])
    assert invoke("labels", "add", features_copy, labels).exit_code == 0
    result = invoke("probe", features_copy, "--label", "a/b", "--layer", "1", "--pooling", "mean", "--jobs", "1")
    assert result.exit_code == 0, result.output
    written = tmp_path / "feats.a%2Fb.probe.csv"  # escaped as the store escapes HDF5 names
    assert written.exists() and json.loads(written.with_suffix(".json").read_text())["meta"]["label"] == "a/b"
    assert invoke("plot", written).exit_code == 0
    report = invoke("report", written)
    assert report.exit_code == 0, report.output
    assert (tmp_path / "feats.a%2Fb.report.html").exists() and (tmp_path / "feats.a%2Fb.probe.png").exists()


@pytest.mark.slow
def test_a_word_arcs_report_shows_classes_absent_from_the_test_part(treebank_file, tmp_path):
    prefix = tmp_path / "arcs"
    result = invoke("probe", treebank_file, "--arcs", "--label", "deprel", "--jobs", "1", "-o", prefix)
    assert result.exit_code == 0, result.output
    rows = json.loads(prefix.with_suffix(".json").read_text())["results"]
    scores = [json.loads(row["per_class_f1"] or "{}") for row in rows if row["classifier"] != "majority"]
    assert any(value is None for row in scores for value in row.values())  # absent from the test part
    report = invoke("report", prefix.with_suffix(".csv"), "-o", tmp_path / "arcs.html")
    assert report.exit_code == 0, report.output
    assert "Per-class F1 by layer" in (tmp_path / "arcs.html").read_text()


@pytest.mark.slow
def test_allow_partial_probes_the_committed_sentences_of_a_word_level_file(treebank_file, tmp_path):
    partial = shutil.copy(treebank_file, tmp_path / "partial.h5")
    with h5py.File(partial, "r+") as file:
        file.attrs["complete"] = False
        file["progress/rows_done"][0] = 40
    args = ("probe", partial, "--label", "upos", "--layer", "1", "--jobs", "1", "-o", tmp_path / "r")
    assert_one_clear_error(invoke(*args).output, r"partial\.h5 is incomplete: 40 of 70 rows written")
    result = invoke(*args, "--allow-partial")
    assert result.exit_code == 0, result.output
    with featx.open(partial, allow_partial=True) as features:
        assert features.n_rows == 40

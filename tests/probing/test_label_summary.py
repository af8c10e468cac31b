"""``featx labels FEATURES``: each label column as featx probe will read it (classes and their counts, numbers
and their range), missing rows, the split, and a word input's word labels and heads."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.report_runs import treebank
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.probing.label_summary import describe_labels


@pytest.fixture(scope="module")
def sentences(tiny_model, tmp_path_factory):
    """40 rows: a 3-class label with two missing cells and a quoted-looking class, a 40-valued score, a split."""
    folder = tmp_path_factory.mktemp("labels")
    colours = [("red", "blue", "3")[i % 3] if i not in (4, 7) else "" for i in range(40)]
    rows = [[f"row {i} text", colours[i], f"{i * 0.37:.2f}", "test" if i % 4 else "train"] for i in range(40)]
    corpus = write_csv(folder / "c.csv", rows, header=("text", "colour", "score", "split"))
    output = folder / "c.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output


def test_each_column_as_probe_reads_it(sentences):
    lines = describe_labels(sentences)
    assert lines[0] == f"{sentences}: 40 rows; split: test 30, train 10"
    assert lines[1] == "sentence labels (featx probe --label NAME):"
    colour = next(line for line in lines if line.strip().startswith("colour"))
    with featx.open(sentences) as features:
        codes, names = features.labels("colour"), features.label_names("colour")
    counts = {name: int(np.sum(codes == code)) for code, name in enumerate(names)}
    assert counts == {"red": 14, "blue": 11, "3": 13}
    assert colour.split(None, 1)[1] == "3 classes: red 14, '3' 13, blue 11; 2 missing"
    score = next(line for line in lines if line.strip().startswith("score"))
    assert "numbers: 40 distinct, 0 to 14.43, mean 7.215 (a regression: ridge, R²)" in score
    assert not any(line.startswith("word labels") for line in lines)


def test_numbers_of_which_none_is_known_are_listed_as_classes(sentences, tmp_path):
    """A file whose stored numbers of a continuous-looking column are all missing (NaN; another writer's file):
    the column is listed by its classes, as featx probe reads it then, not a traceback of an empty minimum."""
    import shutil

    import h5py

    copy = tmp_path / "nan.h5"
    shutil.copy(sentences, copy)
    with h5py.File(copy, "r+") as file:
        file["label_values/score"][...] = np.nan
    score = next(line for line in describe_labels(copy) if line.strip().startswith("score"))
    assert "40 classes" in score and "numbers" not in score


def test_a_pair_file_says_so(tiny_model, tmp_path):
    rows = [[f"a {i}", f"b {i}", ("yes", "no")[i % 2]] for i in range(6)]
    corpus = write_csv(tmp_path / "p.csv", rows, header=("text", "other", "same"))
    output = tmp_path / "p.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", text_pair_col="other", progress=False)
    lines = describe_labels(output)
    assert lines[0] == f"{output}: 6 rows of sentence pairs (second text: other, cross mode)"
    assert lines[2].split() == ["same", "2", "classes:", "no", "3,", "yes", "3"]


def test_word_labels_and_heads(tiny_model, tmp_path):
    conllu = treebank(tmp_path / "toy-ud-train.conllu", 12, 0, "s")
    output = tmp_path / "toy.h5"
    featx.extract(conllu, model=str(tiny_model), output=output, progress=False)
    lines = describe_labels(output)
    with featx.open(output) as features:
        n_words = int(features.word_offsets()[-1])
        tags = np.asarray(features.word_label_names("upos"))[features.word_labels("upos")]
        roots = int(np.sum(features.word_heads() < 0))
    assert f"word labels ({n_words:,} words; featx probe --label NAME):" in lines
    upos = next(line for line in lines if line.strip().startswith("upos"))
    values, counts = np.unique(tags, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    assert upos.split(None, 1)[1] == f"{len(values)} classes: " + ", ".join(f"{values[i]} {counts[i]}" for i in order)
    assert lines[-1] == f"dependency heads of {n_words - roots:,} words: featx probe --arcs"


def test_the_cli_lists_by_path_by_list_and_the_last_extraction(sentences, tmp_path, monkeypatch):
    runner = CliRunner()
    by_path = runner.invoke(main, ["labels", str(sentences)])
    assert by_path.exit_code == 0, by_path.output
    assert by_path.output.splitlines() == describe_labels(sentences)
    assert runner.invoke(main, ["labels", "list", str(sentences)]).output == by_path.output
    monkeypatch.chdir(tmp_path)
    from featx.state import remember

    remember("features", sentences)
    last = runner.invoke(main, ["labels"])
    assert last.exit_code == 0, last.output
    assert last.output.splitlines() == [
        f"using the last extraction in this directory: {sentences}",
        *describe_labels(sentences),
    ]


def test_a_missing_file_is_one_clear_error_and_a_mistyped_command_stays_one(tmp_path):
    result = CliRunner().invoke(main, ["labels", str(tmp_path / "none.h5")])
    assert result.exit_code == 2
    assert_one_clear_error(result.output, "none.h5 does not exist")
    mistyped = CliRunner().invoke(main, ["labels", "ad", str(tmp_path / "f.h5"), "more.csv"])
    assert mistyped.exit_code == 2 and "No such command 'ad'" in mistyped.output


def test_hostile_class_names_are_escaped_on_the_terminal(tiny_model, tmp_path):
    corpus = write_csv(tmp_path / "h.csv", [["a b", "\x1b[31mred"], ["c d", "blue"]], header=("text", "colour"))
    output = tmp_path / "h.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    result = CliRunner().invoke(main, ["labels", str(output)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\\x1b[31mred" in result.output

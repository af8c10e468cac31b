"""--bins' edges: drawn from a split's train and val rows only (a test row's value never moves an edge), from
every labelled row under cross-validation, and recorded in the meta."""

from __future__ import annotations

import numpy as np
import pytest

import featx
from featx.io import LabelColumn
from featx.probing.label_classes import binned
from featx.report import format_probe

FAST = dict(layers="0", poolings="mean", jobs=1, control=False, n_bootstrap=10, write=False, folds=3)


def _numbers(values) -> LabelColumn:
    names = sorted({f"{value:g}" for value in values}, key=float)
    codes = np.array([names.index(f"{value:g}") for value in values], np.int32)
    return LabelColumn(name="score", codes=codes, names=names, numeric=True)


def test_a_splits_bins_are_the_quantiles_of_its_train_and_val_rows():
    rng = np.random.default_rng(0)
    split = np.array(["train", "val", "test", "train", "TEST"] * 20, dtype=object)
    values = np.round(rng.uniform(0, 10, size=len(split)), 2)
    is_test = np.char.lower(split.astype(str)) == "test"
    values[is_test] += 100  # the test rows' values shifted: every-row quantiles would differ
    column, bins = binned(_numbers(values), 4, split)
    expected = np.quantile(values[~is_test], np.linspace(0, 1, 5))
    np.testing.assert_allclose(bins.edges, expected)
    assert (bins.rows, bins.n_rows) == ("train and val", int((~is_test).sum()))
    assert not np.allclose(bins.edges, np.quantile(values, np.linspace(0, 1, 5)))
    moved = values.copy()
    moved[is_test] = rng.uniform(-50, 500, size=int(is_test.sum()))  # other test values: the same edges
    assert binned(_numbers(moved), 4, split)[1].edges == bins.edges
    assert set(column.codes[is_test]) == {3}  # beyond the highest edge: the last bin


def test_without_a_test_part_every_labelled_row_draws_the_bins():
    values = np.arange(40, dtype=float)
    for split in (None, np.array(["train"] * 30 + ["val"] * 10, dtype=object)):
        _, bins = binned(_numbers(values), 4, split)
        np.testing.assert_allclose(bins.edges, np.quantile(values, np.linspace(0, 1, 5)))
        assert (bins.rows, bins.n_rows) == ("every labelled row", 40)


def test_a_probe_records_the_edges_drawn_from_the_training_rows(split_features, tmp_path):
    with featx.open(split_features) as features:
        is_test = np.asarray(features.split, dtype=str) == "test"
    values = np.arange(len(is_test)) % 17 + np.where(is_test, 50.0, 0.0)
    path = tmp_path / "scores.csv"
    path.write_text("value\n" + "".join(f"{value:g}\n" for value in values))
    result = featx.probe(split_features, labels=path, join="row", bins=3, **FAST)
    recorded = result.meta.to_dict()["bins"]
    assert recorded["rows"] == "train and val" and recorded["n_rows"] == int((~is_test).sum())
    np.testing.assert_allclose(recorded["edges"], np.quantile(values[~is_test], np.linspace(0, 1, 4)))
    assert any("edges from the train and val rows" in note for note in result.notes)


@pytest.mark.slow
def test_cross_validation_bins_every_labelled_row(features_copy, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("value\n" + "".join(f"{i % 13}\n" for i in range(80)))
    result = featx.probe(features_copy, labels=path, join="row", bins=3, **FAST)
    assert result.meta.to_dict()["bins"]["rows"] == "every labelled row"
    with pytest.raises(KeyError):
        featx.probe(features_copy, label="label", **FAST).meta.to_dict()["bins"]


def test_rows_of_another_split_value_are_left_out_before_the_bins_are_drawn(split_features, tmp_path):
    """A stored or a joined label alike: the rows of a split value featx does not use count as missing labels,
    their values never draw a bin edge, and one note names them; the regression probe leaves them out too."""
    from support.shared_files import resplit

    path = resplit(split_features, tmp_path, lambda split: np.where(np.arange(len(split)) % 7 == 1, "extra", split))
    with featx.open(path) as features:
        split = np.asarray(features.split, dtype=str)
    extra = split == "extra"
    values = np.arange(len(split)) % 17 + np.where(extra, 1000.0, 0.0)  # the extra rows' values would move the edges
    scores = tmp_path / "scores.csv"
    scores.write_text("value\n" + "".join(f"{value:g}\n" for value in values))
    note = f"{int(extra.sum())} rows with split 'extra' left out: split values other than train, val"
    result = featx.probe(path, labels=scores, join="row", bins=3, **FAST)
    assert sum(entry.startswith(note) for entry in result.notes) == 1
    assert result.meta.to_dict()["n_labelled"] == int((~extra).sum())
    # every row has a label: those left out are said to be left out as the note says, not to lack one
    assert (result.meta.to_dict()["n_missing_labels"], result.meta.to_dict()["n_unlabelled"]) == (int(extra.sum()), 0)
    assert f"{int(extra.sum())} left out as a note above says" in format_probe(result).splitlines()[1]
    drawn = ~extra & (split != "test")
    np.testing.assert_allclose(result.meta.to_dict()["bins"]["edges"], np.quantile(values[drawn], [0, 1 / 3, 2 / 3, 1]))
    regression = featx.probe(path, label="score", task="regression", **FAST)
    assert regression.meta.to_dict()["n_labelled"] == int((~extra).sum())
    assert regression.meta.to_dict()["n_unlabelled"] == 0
    assert sum(entry.startswith(note) for entry in regression.notes) == 1


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (dict(label="upos", bins=4), ["--bins 4 ignored: it applies to a sentence label, and 'upos' is a word label"]),
        (dict(label="deprel", arcs=True, bins=4), ["--bins 4 ignored: it applies to a sentence label, and 'deprel'"]),
        (
            dict(label="upos", min_class_rows=3, task="regression"),
            ["--min-class-rows 3 ignored: it applies to a sentence label", "--task regression ignored: it applies"],
        ),
    ],
    ids=["bins", "arcs-bins", "min-class-rows-and-task"],
)
def test_a_sentence_labels_options_with_a_word_label_are_said_ignored(word_features, options, said, tmp_path):
    """--bins, --min-class-rows and --task regression shape a sentence label; a word label's tags are classes
    already. They were silently ignored; now a note says so (a study's [probe] gives them to a treebank's labels
    too, so they are not refused). The word probe is the same as without them."""
    from click.testing import CliRunner

    from featx.cli import main

    path, _ = word_features
    base = dict(layers="1", poolings="mean", classifiers="logreg", write=False)
    given = featx.probe(path, **options, **base)
    plain = featx.probe(path, label=options["label"], arcs=options.get("arcs", False), **base)
    for start in said:
        assert sum(note.startswith(start) for note in given.notes) == 1, given.notes
    assert not any("ignored: it applies to a sentence label" in note for note in plain.notes)
    columns = ["layer", "pooling", "accuracy"]
    assert given.table[columns].equals(plain.table[columns])
    if "bins" in options:
        flags = ["--label", options["label"], *(["--arcs"] if options.get("arcs") else []), "--bins", "4"]
        out = tmp_path / "cli"
        result = CliRunner().invoke(main, ["probe", str(path), *flags, "--layer", "1", "--pooling", "mean", "-o", out])
        assert result.exit_code == 0 and "--bins 4 ignored" in result.output, result.output


def test_bins_that_collapse_into_one_are_refused_naming_the_values():
    """A 0/1 column (SST-2's label) binned in 3: its quantiles are 0, 0, 1, 1, one bin '[0, 1]'; the probe said
    "only one class ('[0, 1]' in all 400 labelled rows)". It is refused at --bins, naming the few values."""
    from featx.errors import InputError

    values = np.array([0.0] * 17 + [1.0] * 23)
    for bins in (2, 3):
        with pytest.raises(InputError) as caught:
            binned(_numbers(values), bins, None)
        assert f"--bins {bins}" in caught.value.message and "one bin" in caught.value.message
        assert "2 distinct values (0, 1)" in caught.value.message and "without --bins" in caught.value.hint

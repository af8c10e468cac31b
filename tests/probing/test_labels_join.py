"""Labels after extraction: --labels joined by id or by row, mismatches named, continuous columns
refused or binned, rare classes dropped, split values said, and the unknown --label error."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.probe_data import N_ROWS

import featx
from featx.cli import main
from featx.errors import InputError

FAST = dict(layers="0", poolings="mean", jobs=1, control=False, n_bootstrap=10, write=False, folds=3)


def labels_file(tmp_path, rows, header="id,valence", name="more.csv"):
    path = tmp_path / name
    path.write_text(header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows))
    return path


def test_labels_joined_by_id_in_any_order(features_copy, tmp_path):
    rows = [(i, ("low", "high")[i % 2]) for i in reversed(range(N_ROWS))] + [(999, "low")]  # extra rows ignored
    result = featx.probe(features_copy, labels=labels_file(tmp_path, rows), label="valence", **FAST)
    assert result.meta["label"] == "valence" and result.meta["label_names"] == ["high", "low"]
    assert any("labels from" in note and "joined by id" in note for note in result.notes)


def test_labels_joined_by_row(features_copy, tmp_path):
    path = labels_file(tmp_path, [(("a", "b")[i % 2],) for i in range(N_ROWS)], header="valence")
    result = featx.probe(features_copy, labels=path, join="row", **FAST)
    assert result.meta["label"] == "valence" and result.meta["n_labelled"] == N_ROWS


def test_unmatched_and_duplicate_ids_are_named(features_copy, tmp_path):
    rows = [(i, "x" if i % 2 else "y") for i in range(N_ROWS) if i not in (3, 7)]
    with pytest.raises(InputError, match=r"2 of the 80 stored rows have no match in .*more\.csv .*: 3, 7"):
        featx.probe(features_copy, labels=labels_file(tmp_path, rows), **FAST)
    rows = [(i, "x" if i % 2 else "y") for i in range(N_ROWS)] + [(5, "x")]
    with pytest.raises(InputError, match=r"id '5' appears twice in column 'id' \(line 7 and line 82\)"):
        featx.probe(features_copy, labels=labels_file(tmp_path, rows), **FAST)
    short = labels_file(tmp_path, [("x",)] * 10, header="valence")
    with pytest.raises(InputError, match=r"70 of the 80 stored rows have no match .*data row numbers.*: 10, 11"):
        featx.probe(features_copy, labels=short, join="row", **FAST)


@pytest.mark.parametrize(
    "encoded", [b"id,valence\n0,caf\xe9\n", "id,valence\n0,a\n".encode("utf-16")], ids=["latin-1", "utf-16"]
)
def test_a_label_file_not_in_utf8_gets_a_hint_it_can_follow(tiny_features, tmp_path, encoded):
    """A label file is read as UTF-8 (featx probe --labels, featx labels add: neither has --encoding); the corpus
    reader's hint said to pass --encoding."""
    path = tmp_path / "more.csv"
    path.write_bytes(encoded)
    with pytest.raises(InputError, match="not valid utf-8|is UTF-16 text") as refused:
        featx.probe(tiny_features, labels=path, label="valence", **FAST)
    assert refused.value.hint == "re-save the label file as UTF-8: it is read as such"


def test_unknown_label_points_at_labels(features_copy):
    result = CliRunner().invoke(main, ["probe", str(features_copy), "--label", "valence", "--layer", "0"])
    assert result.exit_code == 2
    assert "no label column 'valence'; label columns: label, topic" in result.output
    assert "--labels FILE.csv" in result.output


def test_continuous_label_is_refused_then_binned(features_copy, tmp_path):
    path = labels_file(tmp_path, [(i, f"{i / N_ROWS:.3f}") for i in range(N_ROWS)], header="id,score")
    with pytest.raises(
        InputError,
        match=r"(?s)label 'score' looks continuous \(80 distinct numbers from 0.000 to "
        r"0.988\).*bins=N.*regression probe",
    ):
        featx.probe(features_copy, labels=path, **FAST)
    result = featx.probe(features_copy, labels=path, bins=4, **FAST)
    assert len(result.meta["label_names"]) == 4
    assert any("in 4 quantile bins" in note for note in result.notes)


def test_a_score_with_a_few_cells_that_are_not_numbers_is_refused_by_name(features_copy, tmp_path):
    """One 'inf' among 80 scores made the column 81 classes, refused later by the split check or the probe with a
    puzzling message; it is now named, with the way to leave it out."""
    rows = [(i, "inf" if i == 3 else f"{i / N_ROWS:.3f}") for i in range(N_ROWS)]
    with pytest.raises(
        InputError, match=r"holds numbers \(79 distinct\) except in 1 of its 80 rows: 'inf' \(1 row"
    ) as caught:
        featx.probe(features_copy, labels=labels_file(tmp_path, rows, header="id,score"), **FAST)
    assert "--missing-labels inf" in caught.value.hint
    classes = [(i, "n/a" if i < 20 else f"{i / N_ROWS:.3f}") for i in range(N_ROWS)]  # a quarter: not a typo
    with pytest.raises(InputError) as caught:
        featx.probe(features_copy, labels=labels_file(tmp_path, classes, header="id,score"), **FAST)
    assert "holds numbers" not in str(caught.value)


def test_a_joined_number_is_not_sent_to_a_regression_probe_it_cannot_have(features_copy, tmp_path):
    """A --labels file's columns are probed as classes: --task regression of one was refused with "looks
    continuous ... or probe it with a regression probe" (what was asked); it now says to store the column first."""
    path = labels_file(tmp_path, [(i, f"{i / N_ROWS:.3f}") for i in range(N_ROWS)], header="id,score")
    with pytest.raises(InputError, match=r"task='regression' probes a stored label column") as caught:
        featx.probe(features_copy, labels=path, label="score", task="regression", **FAST)
    assert f"featx labels add {features_copy} {path}" in caught.value.hint
    with pytest.raises(InputError, match=r"looks continuous") as caught:
        featx.probe(features_copy, labels=path, label="score", **FAST)
    assert "featx labels add" in caught.value.hint and "label='score'" in caught.value.hint


def test_min_class_rows_drops_and_reports(features_copy, tmp_path):
    rows = [(i, "rare" if i < 2 else ("a", "b")[i % 2]) for i in range(N_ROWS)]
    result = featx.probe(features_copy, labels=labels_file(tmp_path, rows), min_class_rows=3, **FAST)
    assert result.meta["label_names"] == ["a", "b"]
    assert any("dropped 1 class(es) of label 'valence' with fewer rows: 'rare' (2)" in note for note in result.notes)


@pytest.mark.parametrize(("threshold", "left"), [(100, "no class"), (30, r"only one class \('a', 52 rows\)")])
def test_min_class_rows_that_leaves_under_two_classes_names_the_option(features_copy, tmp_path, threshold, left):
    rows = [(i, "rare" if i < 2 else ("b" if i % 3 == 0 else "a")) for i in range(N_ROWS)]  # a 52, b 26
    path = labels_file(tmp_path, rows)
    with pytest.raises(InputError, match=rf"^min_class_rows={threshold} leaves {left} of label 'valence'") as error:
        featx.probe(features_copy, labels=path, min_class_rows=threshold, **FAST)  # featx.probe: the keyword
    assert "min_class_rows=26 or less" in error.value.hint


def test_split_values_are_said():
    import numpy as np

    from featx.probing import evaluation as ev
    from featx.probing.labels import split_note

    split = np.array(["train", "val", "train", "test", "TRAIN", "test", "train", "val"] * 5, dtype=object)
    y = np.array([0, 0, 1, 1] * 10)
    plan = ev.make_plan(y, split, 3, 0, ["a", "b"])
    kept = np.arange(len(y))
    assert (
        split_note(plan, split, kept) == "split: train = 'TRAIN', 'train' (20 rows); dev = 'val' (10 rows); "
        "test = 'test' (10 rows)"
    )


def test_labels_add_stores_columns_for_good(features_copy, tmp_path):
    rows = [(i, f"{i / N_ROWS:.3f}", ("x", "y")[i % 2]) for i in range(N_ROWS)]
    path = labels_file(tmp_path, rows, header="id,score,mood")
    result = CliRunner().invoke(main, ["labels", "add", str(features_copy), str(path)])
    assert result.exit_code == 0, result.output
    assert "added to" in result.output and "mood (2 classes, 0 missing)" in result.output
    assert f"score (numbers: {N_ROWS} distinct, 0 missing)" in result.output  # a score, as featx labels lists it
    with featx.open(features_copy) as features:
        assert features.label_columns == ["label", "topic", "score", "mood"]
        assert features.label_names("mood") == ["x", "y"]
        assert abs(features.label_values("score")[79] - 0.988) < 1e-9  # continuous: float values kept
    again = CliRunner().invoke(main, ["labels", "add", str(features_copy), str(path)])
    assert again.exit_code == 2 and "already has label column(s) score, mood" in again.output


def test_interrupted_labels_add_leaves_the_file_unchanged(features_copy, tmp_path, monkeypatch):
    from featx.store import writer

    before = features_copy.read_bytes()
    path = labels_file(tmp_path, [(i, "a", "b") for i in range(N_ROWS)], header="id,one,two")
    calls = []

    def dying(file, name, column):
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        original(file, name, column)

    original = writer.write_label
    monkeypatch.setattr(writer, "write_label", dying)
    result = CliRunner().invoke(main, ["labels", "add", str(features_copy), str(path)])
    assert result.exit_code != 0 and calls == ["one", "two"]
    assert features_copy.read_bytes() == before
    assert sorted(p.name for p in features_copy.parent.iterdir() if p.name.startswith(".feats")) == []


def test_join_is_declared_once_for_probe_and_labels_add():
    """``--join`` of ``featx probe --labels`` and of ``featx labels add``: one declaration, one check."""
    import dataclasses

    from featx.options import flag_of
    from featx.probing import LabelsAddConfig, ProbeConfig

    probe, add = (
        {item.name: item for item in dataclasses.fields(cls)}["join"] for cls in (ProbeConfig, LabelsAddConfig)
    )
    assert probe.default == add.default == "id"
    assert flag_of(probe).flags == flag_of(add).flags and flag_of(probe).help == flag_of(add).help
    for make in (
        lambda: ProbeConfig(join="rows", labels="l.csv"),
        lambda: LabelsAddConfig("f.h5", "l.csv", join="rows"),
    ):
        with pytest.raises(InputError, match="--join 'rows' is not understood"):
            make()

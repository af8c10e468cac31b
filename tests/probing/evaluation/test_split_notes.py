"""The run's note under a split: which rows trained and tested the probes, and what the val rows did for each
classifier (C chosen for logreg and svm, alpha for ridge, early stopping for an mlp or attn probe; a regression
mlp early-stops on a holdout of its own and the val rows only score it)."""

from __future__ import annotations

import numpy as np
import pytest

import featx
from featx.probing import evaluation as ev
from featx.probing.meta import Level, Task
from featx.probing.plan import trained_note

SPLIT = ev.Plan("split", [(np.arange(90), np.arange(90, 120))], [np.arange(120, 150)])
NO_VAL = ev.Plan("split", [(np.arange(90), np.arange(90, 120))], [None])


@pytest.mark.parametrize(
    ("classifiers", "task", "said"),
    [
        (["logreg"], Task.CLASSIFICATION, "C chosen on the 30 val rows"),
        (["svm"], Task.CLASSIFICATION, "C chosen on the 30 val rows"),
        (["mlp"], Task.CLASSIFICATION, "early-stopped on the 30 val rows"),
        (["attn"], Task.CLASSIFICATION, "early-stopped on the 30 val rows"),
        (["ridge"], Task.REGRESSION, "alpha chosen on the 30 val rows"),
        (
            ["mlp"],
            Task.REGRESSION,
            "scored on the 30 val rows (the mlp early-stops on a holdout of the train rows)",
        ),
        (
            ["logreg", "svm", "mlp"],
            Task.CLASSIFICATION,
            "C chosen (logreg, svm) and early-stopped (mlp) on the 30 val rows",
        ),
        (
            ["ridge", "mlp"],
            Task.REGRESSION,
            "alpha chosen (ridge) and scored (mlp) on the 30 val rows (the mlp early-stops on a holdout of the "
            "train rows)",
        ),
    ],
)
def test_the_note_says_what_the_val_rows_did_for_each_classifier(classifiers, task, said):
    note = trained_note(SPLIT, classifiers, task, Level.SENTENCE)
    assert note == f"trained on the 90 train rows, {said}; tested on the 30 test rows"
    if "mlp" in classifiers and len(classifiers) == 1:
        assert "C chosen" not in note and "alpha" not in note


def test_word_probes_say_it_of_their_words_and_only_with_val_words():
    assert trained_note(SPLIT, ["mlp"], Task.CLASSIFICATION, Level.WORD) == (
        "trained on the 90 train words, early-stopped on the 30 val words; tested on the 30 test words"
    )
    assert "C chosen on the 30 val word pairs" in str(trained_note(SPLIT, ["svm"], Task.CLASSIFICATION, Level.ARC))
    assert trained_note(NO_VAL, ["logreg"], Task.CLASSIFICATION, Level.WORD) is None
    assert trained_note(NO_VAL, ["mlp"], Task.CLASSIFICATION, Level.SENTENCE) == (
        "trained on the 90 train rows; tested on the 30 test rows"
    )
    assert trained_note(ev.Plan("5-fold cv", [], []), ["logreg"], Task.CLASSIFICATION, Level.SENTENCE) is None


def test_a_word_split_without_train_says_what_its_holdout_chose():
    from support.planted_words import PlantedWords

    from featx.probing.tasks.word_items import sentence_plan, word_task

    source = PlantedWords(n_sentences=40)
    source.split = np.where(source.split == "train", "dev", source.split)
    for classifiers, said in ((["mlp"], "early-stopped"), (["logreg", "mlp"], "C chosen (logreg) and early-stopped")):
        notes: list[str] = []
        sentence_plan(word_task(source, "upos"), source.split, 5, 0, notes, classifiers)
        assert f"trains the probes ({said}" in notes[0] and "on a holdout of its sentences" in notes[0]


def test_an_mlp_probe_under_a_val_split_says_it_early_stopped(split_features, tmp_path):
    """The probe said "C chosen on the val rows" for an mlp too, which has no C: the val rows early-stop it."""
    import h5py
    from support.shared_files import copy_features

    path = copy_features(split_features, tmp_path)
    with h5py.File(path, "r+") as file:
        split = file["rows/split"]
        values = [value.decode() if isinstance(value, bytes) else value for value in split[:]]
        for row in [row for row, value in enumerate(values) if value == "train"][::4]:
            split[row] = "val"
    with featx.open(path) as features:
        stored = np.asarray(features.split, dtype=str)
    n_train, n_val, n_test = (int((stored == name).sum()) for name in ("train", "val", "test"))
    options = dict(label="label", layers="1", poolings="mean", write=False, jobs=1, control=False, lexical=False)
    for classifiers, said in (("mlp", "early-stopped"), ("logreg,mlp", "C chosen (logreg) and early-stopped (mlp)")):
        result = featx.probe(path, classifiers=classifiers, **options)
        expected = f"trained on the {n_train} train rows, {said} on the {n_val} val rows; tested on the {n_test} test"
        expected += " rows"
        assert expected in result.notes and expected in result.meta.to_dict()["notes"]

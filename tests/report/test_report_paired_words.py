"""Paired tests between two word-level runs rebuild the probe's own folds: whole sentences, never words."""

from __future__ import annotations

import numpy as np
import pandas as pd

from featx.report.paired import paired_layer_tests, paired_test_at


def _word_runs(tmp_path, evaluation: str, folds: int | None):
    """Two word-level runs over the same 40 sentences of 5 words, one class seen once (rarer than the folds)."""
    rng = np.random.default_rng(0)
    sentences = np.repeat(np.arange(40), 5)
    labels = rng.choice(["NOUN", "VERB", "DET"], size=len(sentences))
    labels[7] = "INTJ"
    metas = []
    for name in ("a", "b"):
        predicted = np.where(rng.random(len(labels)) < 0.8, labels, "NOUN")
        frame = pd.DataFrame({"row": sentences, "id": [f"s{s}:{i}" for i, s in enumerate(sentences)], "label": labels})
        for layer in range(3):
            frame[f"layer_{layer}"] = predicted
        frame.to_csv(tmp_path / f"{name}.upos.predictions.csv", index=False)
        metas.append(
            {
                "results_path": str(tmp_path / f"{name}.upos.probe.csv"),
                "predictions_file": f"{name}.upos.predictions.csv",
                "level": "word",
                "label": "upos",
                "label_names": ["DET", "INTJ", "NOUN", "VERB"],
                "evaluation": evaluation,
                "folds": folds,
                "seed": 0,
                "rows_sha256": "same",
            }
        )
    return metas


def test_word_runs_under_cross_validation_with_a_class_rarer_than_the_folds_are_paired(tmp_path):
    meta_a, meta_b = _word_runs(tmp_path, "5-fold cv", 5)
    table = paired_layer_tests(meta_a, meta_b)
    assert list(table["layer"]) == [0, 1, 2]
    assert table["p"].between(0, 1).all()
    tested = paired_test_at(meta_a, 1, meta_b, 2)
    assert 0 <= tested["p"] <= 1


def test_the_folds_of_a_word_run_keep_each_sentence_whole(tmp_path):
    from featx.probing import run_plan as _plan

    meta, _ = _word_runs(tmp_path, "5-fold cv", 5)
    frame = pd.read_csv(tmp_path / "a.upos.predictions.csv")
    y = frame["label"].map({"DET": 0, "INTJ": 1, "NOUN": 2, "VERB": 3}).to_numpy()
    plan = _plan(meta, y, meta["label_names"], frame["row"].to_numpy())
    fold_of = np.empty(len(y), int)
    for index, (_, test) in enumerate(plan.folds):
        fold_of[test] = index
    assert len(plan.folds) == 5
    assert (pd.Series(fold_of).groupby(frame["row"]).nunique() == 1).all()


def test_a_word_run_on_a_split_resamples_whole_sentences(tmp_path):
    from featx.probing import run_plan as _plan

    meta, _ = _word_runs(tmp_path, "split", None)
    frame = pd.read_csv(tmp_path / "a.upos.predictions.csv")
    plan = _plan(meta, np.zeros(len(frame), int), meta["label_names"], frame["row"].to_numpy())
    assert list(plan.groups) == list(frame["row"])

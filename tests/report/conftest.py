"""Fixtures of the featx.report tests. ``real_runs``: real (tiny) probing runs, a tiny BERT and its random-init
twin on the same rows, each probed with per-row predictions, plus learning curves and MDL on the first.
``task_runs``: one results file of every other kind ``featx report`` renders (``support.report_runs``)."""

from __future__ import annotations

import pytest
from support.report_runs import every_kind
from support.results import tiny_rows
from support.tiny import write_csv

import featx


@pytest.fixture(scope="session")
def real_runs(tiny_model, tmp_path_factory):
    """``{"folder", "corpus", "features", "random", "main", "baseline"}``: paths of two features files of the
    same rows and their results CSVs (main with --mdl and --train-sizes). Built once per session for the five
    modules that read it; a test writes only a report beside the results, never into the features files."""
    folder = tmp_path_factory.mktemp("report-runs")
    corpus = write_csv(folder / "corpus.csv", tiny_rows(80), header=("text", "sentiment", "split"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # featx remembers its outputs in the working directory's .featx/
        features = featx.extract(
            corpus, model=str(tiny_model), output=folder / "corpus.features.h5", poolings="cls,mean", progress=False
        ).output
        random = featx.extract(
            corpus,
            model=str(tiny_model),
            output=folder / "corpus.random.h5",
            poolings="cls,mean",
            random_init=True,
            seed=1,
            progress=False,
        ).output
        main = featx.probe(
            features,
            label="sentiment",
            jobs=1,
            n_bootstrap=100,
            mdl=True,
            train_sizes="0.5,1.0",
            predictions="mean/logreg",
            output=folder / "main.sentiment.probe",
        )
        baseline = featx.probe(
            random,
            label="sentiment",
            jobs=1,
            n_bootstrap=100,
            predictions="mean/logreg",
            output=folder / "random.sentiment.probe",
        )
    return {
        "folder": folder,
        "corpus": corpus,
        "features": features,
        "random": random,
        "main": main.csv_path,
        "baseline": baseline.csv_path,
    }


@pytest.fixture(scope="module")
def task_runs(tiny_model, pair_features, word_features, tmp_path_factory):
    """``{kind: results path}`` for regression, pairs, words, erase, neurons and sweep (tiny real runs)."""
    folder = tmp_path_factory.mktemp("report-tasks")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        return every_kind(folder, tiny_model, pair_features, word_features[0])

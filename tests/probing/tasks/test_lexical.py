"""The lexical baseline of sentence labels (``probing/tasks/lexical.py``): equal to scikit-learn's
TfidfVectorizer + LogisticRegression (or Ridge) on the same folds, for single texts and pairs; its row in
the table, JSON, terminal table and figure references; ``--no-lexical``; a file without texts."""

from __future__ import annotations

import json
import random
import re
import shutil
from types import SimpleNamespace

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold
from support.tiny import WORDS, write_csv

import featx
from featx.cli import main
from featx.probing.results import load_results
from featx.report import format_probe
from featx.report.load import references
from featx.store import FeatureFile

N_ROWS = 100
COMMON = {"jobs": 1, "n_bootstrap": 200, "write": False, "control": False, "layers": "0,1"}


def _rows(split: bool):
    rng = random.Random(3)
    rows = []
    for i in range(N_ROWS):
        label = ("neg", "pos")[i % 2]
        words = [rng.choice(WORDS[:-4]) for _ in range(rng.randint(3, 9))]
        if rng.random() < 0.8:  # a word that gives the label away, most of the time
            words.insert(rng.randint(0, len(words)), "good" if label == "pos" else "awful")
        score = len(words) + 2.0 * words.count("very") + rng.random()
        other = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 6)))
        rows.append([" ".join(words), label, score, other] + (["test" if i % 5 == 0 else "train"] if split else []))
    return rows


def _extract(folder, tiny_model, split: bool, pairs: bool = False):
    header = ("text", "label", "score", "other") + (("split",) if split else ())
    corpus = write_csv(folder / "corpus.csv", _rows(split), header=header)
    output = folder / "lexical.features.h5"
    extra = {"text_pair_col": "other", "pair_mode": "separate"} if pairs else {}
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False, **extra)
    return output


@pytest.fixture(scope="module")
def split_file(tiny_model, tmp_path_factory):
    return _extract(tmp_path_factory.mktemp("lexical-split"), tiny_model, split=True)


@pytest.fixture(scope="module")
def cv_file(tiny_model, tmp_path_factory):
    return _extract(tmp_path_factory.mktemp("lexical-cv"), tiny_model, split=False)


@pytest.fixture(scope="module")
def pair_file(tiny_model, tmp_path_factory):
    return _extract(tmp_path_factory.mktemp("lexical-pairs"), tiny_model, split=True, pairs=True)


def _vectorizers():
    return (
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
        TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=2),
    )


def _by_hand(texts, train, test, others=None):
    """TF-IDF features fitted on ``train`` only, built by hand: (X_train, X_test)."""
    words, chars = _vectorizers()
    fitted = [t for t in texts[train]] + ([t for t in others[train]] if others is not None else [])
    words.fit(fitted)
    chars.fit(fitted)

    def transform(side, rows):
        return sparse.hstack([words.transform(side[rows]), chars.transform(side[rows])]).tocsr()

    if others is None:
        return transform(texts, train), transform(texts, test)
    parts = []
    for rows in (train, test):
        a, b = transform(texts, rows), transform(others, rows)
        parts.append(sparse.hstack([a, b, abs(a - b)]).tocsr())
    return parts


def _table_rows(path):
    with FeatureFile(path) as features:
        split = features.split
        return np.array(features.texts, dtype=object), None if split is None else np.asarray(split, dtype=object)


def _lexical(result):
    rows = result.table[result.table.kind == "lexical"]
    assert len(rows) == 1, result.table[["kind", "layer_spec"]]
    return rows.iloc[0]


def _labels():
    rows = _rows(False)
    return np.array([row[1] == "pos" for row in rows], dtype=int), np.array([row[2] for row in rows])


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_split_equals_sklearn_tfidf_logreg(split_file, C):
    result = featx.probe(split_file, label="label", cs=(C,), **COMMON)
    row = _lexical(result)
    texts, split = _table_rows(split_file)
    y, _ = _labels()
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    X_train, X_test = _by_hand(texts, train, test)
    model = LogisticRegression(C=C, max_iter=1000).fit(X_train, y[train])
    expected = float(np.mean(model.predict(X_test) == y[test]))
    assert row.accuracy == pytest.approx(expected, abs=1e-12)
    assert (row.layer_spec, row.classifier, row.C, row.n_test) == ("lexical", "logreg", C, len(test))
    assert row.accuracy_low <= row.accuracy <= row.accuracy_high
    assert np.isfinite(row.p_vs_best) and row.p_vs_best_holm == row.p_vs_best
    assert not row.is_best


def test_cv_equals_sklearn_on_the_same_folds(cv_file):
    result = featx.probe(cv_file, label="label", cs=(1.0,), folds=4, **COMMON)
    row = _lexical(result)
    texts, _ = _table_rows(cv_file)
    y, _ = _labels()
    scores = []
    for train, test in StratifiedKFold(n_splits=4, shuffle=True, random_state=0).split(np.zeros(len(y)), y):
        X_train, X_test = _by_hand(texts, train, test)
        model = LogisticRegression(C=1.0, max_iter=1000).fit(X_train, y[train])
        scores.append(np.mean(model.predict(X_test) == y[test]))
    assert row.accuracy == pytest.approx(float(np.mean(scores)), abs=1e-12)
    assert row.evaluation == "4-fold cv" and row.n_test == len(y)


def test_c_is_chosen_from_the_grid_on_the_training_part(split_file):
    """With a grid, the C reported is one of it; refitting at that C by hand gives the same accuracy."""
    grid = (1e-2, 1.0, 100.0)
    row = _lexical(featx.probe(split_file, label="label", cs=grid, **COMMON))
    assert row.C in grid
    texts, split = _table_rows(split_file)
    y, _ = _labels()
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    X_train, X_test = _by_hand(texts, train, test)
    model = LogisticRegression(C=row.C, max_iter=1000).fit(X_train, y[train])
    assert row.accuracy == pytest.approx(float(np.mean(model.predict(X_test) == y[test])), abs=1e-12)


@pytest.mark.parametrize("layers", ["cat(0,1)", "stack"])
def test_a_run_of_combined_layers_only_tests_the_lexical_row_against_its_chosen_row(split_file, layers):
    """Without a single layer the chosen row is a cat(...) or stack row: the lexical row is tested against it
    (it was left untested, "no layer to compare with", beside a chosen row and its test score)."""
    result = featx.probe(split_file, label="label", cs=(1.0,), **{**COMMON, "layers": layers})
    row, chosen = _lexical(result), result.table[result.table.is_best]
    assert len(chosen) == 1 and np.isfinite(row.p_vs_best) and row.p_vs_best_holm == row.p_vs_best
    assert f"vs the best layer (mean {chosen.layer_spec.iloc[0]}, logreg) p=" in format_probe(result)


def test_regression_equals_sklearn_ridge(cv_file):
    result = featx.probe(cv_file, label="score", task="regression", alphas=(1.0,), folds=3, **COMMON)
    row = _lexical(result)
    texts, _ = _table_rows(cv_file)
    _, y = _labels()
    scores = []
    for train, test in KFold(n_splits=3, shuffle=True, random_state=0).split(np.zeros(len(y))):
        X_train, X_test = _by_hand(texts, train, test)
        prediction = Ridge(alpha=1.0).fit(X_train, y[train]).predict(X_test)
        scores.append(1 - np.sum((y[test] - prediction) ** 2) / np.sum((y[test] - y[test].mean()) ** 2))
    assert row.r2 == pytest.approx(float(np.mean(scores)), abs=1e-9)
    assert (row.classifier, row.alpha) == ("ridge", 1.0)
    assert np.isfinite(row.p_vs_best)
    assert result.meta["lexical"]["classifier"] == "ridge"
    assert "lexical baseline" in format_probe(result)


def test_pairs_see_both_texts(pair_file):
    result = featx.probe(pair_file, label="label", cs=(1.0,), **COMMON)
    row = _lexical(result)
    texts, split = _table_rows(pair_file)
    others = np.array([r[3] for r in _rows(True)], dtype=object)
    y, _ = _labels()
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    X_train, X_test = _by_hand(texts, train, test, others)
    model = LogisticRegression(C=1.0, max_iter=1000).fit(X_train, y[train])
    assert row.accuracy == pytest.approx(float(np.mean(model.predict(X_test) == y[test])), abs=1e-12)
    assert result.meta["lexical"]["pair_feature"].startswith("[tfidf(a), tfidf(b)")


def test_row_in_csv_json_table_and_figure_references(split_file, tmp_path):
    options = {**COMMON, "write": True}
    result = featx.probe(split_file, label="label", cs=(1.0,), output=tmp_path / "r", **options)
    written = json.loads(result.json_path.read_text())
    assert written["meta"]["lexical"]["classifier"] == "logreg"
    assert [r["layer_spec"] for r in written["results"]][:2] == ["majority", "lexical"]
    frame = load_results(result.csv_path)[0]
    assert list(frame.kind[:2]) == ["majority", "lexical"]
    text = format_probe(result)
    assert "lexical baseline (TF-IDF" in text
    assert re.search(r"vs the best layer \(mean [01], logreg\) p=", text)
    assert "lexical" not in "\n".join(line for line in text.splitlines() if line.startswith("mean"))
    names = [name for name, _ in references(result.table, "accuracy", "logreg")]
    assert names[:2] == ["majority class", "lexical baseline (TF-IDF n-grams)"]


def test_no_lexical_turns_it_off(split_file):
    result = featx.probe(split_file, label="label", cs=(1.0,), lexical=False, **COMMON)
    assert "lexical" not in set(result.table.kind)
    assert result.meta["lexical"] is None
    cli = CliRunner().invoke(main, ["probe", str(split_file), "--label", "label", "--no-lexical", "--jobs", "1"])
    assert cli.exit_code == 0, cli.output
    assert "lexical baseline" not in cli.output


def test_a_file_without_texts_says_so(split_file, tmp_path):
    path = tmp_path / "blank.h5"
    shutil.copy(split_file, path)
    with h5py.File(path, "r+") as file:
        file["rows/text"][...] = [""] * len(file["rows/text"])
    result = featx.probe(path, label="label", cs=(1.0,), **COMMON)
    assert "lexical" not in set(result.table.kind)
    assert "no texts stored: no lexical baseline" in result.notes


def test_word_level_runs_keep_their_own_baseline_name():
    import pandas as pd

    frame = pd.DataFrame(
        {"kind": ["lexical", "single"], "accuracy": [0.5, 0.7], "level": "word", "features": "main", "pooling": "mean"}
    )
    frame = frame.assign(layer=pd.array([None, 0], dtype="Int64"), classifier="logreg", site="hidden")
    assert references(frame, "accuracy")[0][0] == "most frequent label per word type"


@pytest.mark.slow  # job workers in processes (~2 s)
def test_the_lexical_job_runs_beside_the_probe_jobs(split_file):
    """With two workers the lexical baseline is a job of its own (first, so it starts at once); the table is
    the one a single worker gives, the baseline's row included."""
    options = {**COMMON, "jobs": 2}
    parallel = featx.probe(split_file, label="label", cs=(0.1, 1.0), **options).table
    serial = featx.probe(split_file, label="label", cs=(0.1, 1.0), **COMMON).table
    timing = [column for column in serial.columns if "seconds" in column]
    assert parallel.drop(columns=timing).equals(serial.drop(columns=timing))
    assert (parallel.kind == "lexical").sum() == 1


@pytest.mark.slow
def test_the_lexical_folds_run_as_jobs_of_their_own_and_give_the_serial_row(cv_file):
    """Under cross-validation each outer fold of the baseline is a job of its own (first in the list, spread
    over the workers); the row assembled from them is the one a single worker gives."""
    from featx.probing.tasks import lexical

    options = {**COMMON, "folds": 4}
    parallel = featx.probe(cv_file, label="label", cs=(0.1, 1.0), **{**options, "jobs": 2}).table
    serial = featx.probe(cv_file, label="label", cs=(0.1, 1.0), **options).table
    timing = [column for column in serial.columns if "seconds" in column]
    assert parallel.drop(columns=timing).equals(serial.drop(columns=timing))
    texts = lexical.LexicalTexts(["a b", "c d"])
    plan = SimpleNamespace(folds=[(None, None)] * 4, dev=[None] * 4)
    jobs = lexical.with_lexical_job([("probe",)], texts, "logreg", SimpleNamespace(plan=plan))
    assert [job[0].fold for job in jobs[:4]] == [0, 1, 2, 3] and jobs[4] == ("probe",)


def test_a_lexical_folds_error_comes_back_as_the_runs_note():
    from featx.probing.tasks.lexical import LexicalOutput, take_lexical

    notes = ["earlier"]
    outputs = [
        [{"a": 1}],
        LexicalOutput(1, "logreg", error="why"),
        LexicalOutput(0, "logreg", result=object()),
        [{"b": 2}],
    ]
    probes, record = take_lexical(outputs, notes, SimpleNamespace())
    assert probes == [[{"a": 1}], [{"b": 2}]] and record is None
    assert notes == ["earlier", "no lexical baseline: why"]
    assert take_lexical([[{"a": 1}]], notes) == ([[{"a": 1}]], None)


def test_the_warm_started_c_path_chooses_as_fits_from_zeros_would():
    """The C path starts each C from the previous C's weights; the validation log-losses, and so the C chosen,
    are those of a fit from zeros at every C (here, on 100 texts)."""
    from featx.probing import evaluation as ev
    from featx.probing.tasks import lexical

    rows = _rows(False)
    texts = lexical.LexicalTexts([row[0] for row in rows])
    y = np.array([row[1] == "pos" for row in rows], dtype=int)
    train = np.arange(80)
    transform = lexical.featuriser(texts, train)
    X_train = transform(train)
    grid = (1e-2, 1e-1, 1.0, 10.0, 100.0)
    fit_rows, val_rows = ev.inner_split(y[train], np.arange(len(train)), 0)
    by_hand = ev.log_loss_path()
    for C in grid:
        model = LogisticRegression(C=C, max_iter=1000).fit(X_train[fit_rows], y[train][fit_rows])
        by_hand.record(C, -ev.model_log_loss(model, X_train[val_rows], y[train][val_rows], False), lambda: None)
    chosen, start = lexical.choose_c(transform, X_train, y, train, None, grid, False, 0)
    assert chosen == by_hand.best_c
    assert chosen == start.C  # the path's fit at the C chosen, where the fit on the whole training part starts
    np.testing.assert_array_equal(start.classes_, [0, 1])


def test_with_a_dev_part_the_path_and_the_final_fit_share_the_training_rows():
    """With a dev part the C path fits the whole training part (its rows prepared once for the path and the final
    fit): the C and the test predictions of scikit-learn fits from zeros, chosen on the dev rows."""
    from featx.probing import evaluation as ev
    from featx.probing.tasks import lexical

    rows = _rows(False)
    texts = lexical.LexicalTexts([row[0] for row in rows])
    y = np.array([row[1] == "pos" for row in rows], dtype=int)
    train, dev, test = np.arange(60), np.arange(60, 80), np.arange(80, len(rows))
    grid = (1e-2, 1e-1, 1.0, 10.0, 100.0)
    transform = lexical.featuriser(texts, train)
    X_train, X_dev = transform(train), transform(dev)
    by_hand = ev.log_loss_path()
    for C in grid:
        model = LogisticRegression(C=C, max_iter=1000).fit(X_train, y[train])
        by_hand.record(C, -ev.model_log_loss(model, X_dev, y[dev], False), lambda: None)
    expected = LogisticRegression(C=by_hand.best_c, max_iter=1000).fit(X_train, y[train]).predict(transform(test))
    result = lexical.classify_fold(texts, y, train, test, dev, grid, False, 0)
    assert by_hand.best_c == result.C
    np.testing.assert_array_equal(result.predictions, expected)


def test_the_c_path_walks_the_whole_grid_past_a_flat_strongly_regularised_stretch():
    """TF-IDF rows are not standardised: at the small Cs of the probes' grid the fits are a flat stretch (a
    holdout log-loss within 0.02 of the prior's 1.10 here), where a stopping rule with the probes' patience
    could stop short of the Cs that fit. The path walks the whole grid and chooses where scikit-learn's fits
    from zeros give the holdout its lowest log-loss."""
    from featx.probing import evaluation as ev
    from featx.probing.tasks import lexical

    rng = random.Random(0)
    texts, labels = [], []
    for i in range(90):
        label = i % 3 if i < 86 else i % 2
        words = [rng.choice(WORDS[:-4]) for _ in range(rng.randint(3, 8))]
        words.insert(rng.randint(0, len(words)), ("good", "awful", "plan")[label])
        texts.append(" ".join(words))
        labels.append(label)
    y, train = np.array(labels), np.arange(90)
    lexical_texts = lexical.LexicalTexts(texts)
    transform = lexical.featuriser(lexical_texts, train)
    X_train = transform(train)
    grid = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
    fit_rows, val_rows = ev.inner_split(y, train, 0)
    losses = [
        ev.model_log_loss(LogisticRegression(C=C, max_iter=1000).fit(X_train[fit_rows], y[fit_rows]),
                          X_train[val_rows], y[val_rows], False)
        for C in grid
    ]  # fmt: skip
    assert max(losses[:3]) - min(losses[:3]) < 0.02 < losses[2] - min(losses)  # the flat stretch, then better Cs
    chosen, start = lexical.choose_c(transform, X_train, y, train, None, grid, False, 0)
    assert chosen == grid[int(np.argmin(losses))] == start.C

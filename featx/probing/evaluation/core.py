"""How a probe is evaluated: outer splits, the inner C search, metrics and their 95% intervals.

Honesty rule: everything that is fitted (the scaler, the choice of C, early stopping, the stacking
meta-classifier) sees only the training part of each outer fold. The test part is used once, to score.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ..solvers import classifiers as clf

TRAIN_VALUES = ("train",)
DEV_VALUES = ("dev", "validation", "valid", "val")
TEST_VALUES = ("test",)
INNER_HOLDOUT = 0.2  # share of a training part held out to choose C / stop early
STACK_INNER_FOLDS = 3


# -- outer plan ------------------------------------------------------------------------------------
@dataclass
class Plan:
    """The outer evaluation: (train, test) row indices per fold, optionally a fixed dev part per fold."""

    evaluation: str  # "split" or "<k>-fold cv"
    folds: list[tuple[np.ndarray, np.ndarray]]
    dev: list[np.ndarray | None] = field(default_factory=list)

    @property
    def is_split(self) -> bool:
        return self.evaluation == "split"


def check_labels(y: np.ndarray, names: list[str], column: str, path) -> None:
    present = np.unique(y)
    if len(y) == 0:
        raise InputError(
            f"label column '{column}' of {path} has no values: every row's label is missing",
            "pick another column with --label NAME",
        )
    if len(present) < 2:
        only = names[present[0]] if len(present) else "?"
        raise InputError(
            f"label column '{column}' of {path} has only one class ('{only}' in all {len(y)} labelled rows); "
            "a probe needs at least two",
            "pick another column with --label NAME",
        )


def make_plan(
    y: np.ndarray, split: np.ndarray | None, folds: int, seed: int, names: list[str], column: str = "label"
) -> Plan:
    """A fixed train/test split when the rows carry one, else seeded stratified k-fold."""
    if split is not None:
        values = np.char.lower(np.asarray(split, dtype=str))
        train = np.flatnonzero(np.isin(values, TRAIN_VALUES))
        test = np.flatnonzero(np.isin(values, TEST_VALUES))
        dev = np.flatnonzero(np.isin(values, DEV_VALUES))
        if len(train) and len(test):
            _check_split_classes(y, train, test, names, column)
            return Plan("split", [(train, test)], [dev if len(dev) else None])
    counts = np.bincount(y, minlength=len(names))
    present = np.flatnonzero(counts)
    smallest = present[np.argmin(counts[present])]
    if counts[smallest] < folds:
        raise InputError(
            f"class '{names[smallest]}' of label '{column}' has only {counts[smallest]} labelled row(s), "
            f"fewer than the {folds} cross-validation folds",
            f"use fewer folds (--folds {max(2, int(counts[smallest]))}) or more data"
            if counts[smallest] >= 2
            else "a class with a single row cannot be cross-validated; add rows or drop that class",
        )
    from sklearn.model_selection import StratifiedKFold

    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    pairs = [(train, test) for train, test in splitter.split(np.zeros(len(y)), y)]
    return Plan(f"{folds}-fold cv", pairs, [None] * len(pairs))


def _check_split_classes(y, train, test, names, column) -> None:
    missing = sorted(set(np.unique(y[test])) - set(np.unique(y[train])))
    if len(np.unique(y[train])) < 2:
        raise InputError(f"the train split has only one class of label '{column}'", "check the split column")
    if missing:
        shown = ", ".join(f"'{names[code]}'" for code in missing)
        raise InputError(
            f"class(es) {shown} of label '{column}' appear in the test split but never in train",
            "check the split column, or drop it from the corpus to cross-validate instead",
        )


def inner_split(y: np.ndarray, rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A stratified (when possible) holdout of the training rows: (fit rows, validation rows)."""
    from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

    n_val = max(1, int(round(INNER_HOLDOUT * len(rows))))
    counts = np.bincount(y[rows])
    if counts[counts > 0].min() >= 2 and n_val >= np.count_nonzero(counts):
        splitter = StratifiedShuffleSplit(n_splits=1, test_size=n_val, random_state=seed)
    else:
        splitter = ShuffleSplit(n_splits=1, test_size=n_val, random_state=seed)
    fit, val = next(splitter.split(np.zeros(len(rows)), y[rows]))
    return rows[np.sort(fit)], rows[np.sort(val)]


# -- standardisation -------------------------------------------------------------------------------
class Scaler:
    """Per-feature standardisation fitted on given rows only (float32, constant features kept at 0)."""

    def __init__(self, X: np.ndarray):
        self.mean = X.mean(axis=0, dtype=np.float64).astype(np.float32)
        std = X.std(axis=0, dtype=np.float64)
        std[std < 1e-12] = 1.0
        self.scale = std.astype(np.float32)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean) / self.scale


def fit_scaler(X: np.ndarray, rows: np.ndarray) -> Scaler:
    return Scaler(X[rows])


# -- linear probes with an inner search over C ------------------------------------------------------
def _accuracy(model, X, y) -> float:
    return float(np.mean(model.predict(X) == y))


PATH_PATIENCE = 2  # stop the C path after this many larger Cs without a better validation score
PATH_TOL = 1e-3  # looser solver tolerance along the path; the final fit uses the probe's own


def search_c(name: str, Xs: np.ndarray, y: np.ndarray, fit_rows, val_rows, cs, balanced, seed):
    """Fit along the C grid (smallest C first) on ``fit_rows``; score on ``val_rows``. Used for the
    linear probes other than logreg (``search_logreg``); a warm-startable one reuses the previous fit.

    Validation accuracy is close to unimodal in log C, so the path stops after ``PATH_PATIENCE``
    Cs without improvement: the weakly regularised fits it skips are the slowest ones.
    Returns (best C, the model fitted at it). Ties go to the smaller C (the simpler probe).
    """
    model = clf.make_linear(name, cs[0], balanced, seed)
    final_tol = model.get_params()["tol"]
    model.set_params(tol=max(final_tol, PATH_TOL))
    path = _CPath(y[val_rows])
    for C in sorted(cs):
        model.set_params(C=C)
        clf.fit_quietly(model, Xs[fit_rows], y[fit_rows])
        if not path.record(C, _accuracy(model, Xs[val_rows], y[val_rows]), lambda: _snapshot(model)):
            break
    chosen = path.best_state
    chosen.set_params(tol=final_tol)
    return path.best_c, chosen


class _CPath:
    """The stopping rule of one C path: best validation score so far, and patience.

    Strongly regularised probes predict the majority class; on imbalanced data that plateau can span
    several Cs, so patience only starts counting once the path beats the majority class.
    """

    def __init__(self, y_val: np.ndarray):
        self.majority = np.bincount(y_val).max() / max(1, len(y_val))
        self.best_score, self.best_c, self.best_state, self.waited = -1.0, None, None, 0

    def record(self, C: float, score: float, state) -> bool:
        """Log the fit at ``C``; False once the path should stop. ``state()`` is called for a new best."""
        if score > self.best_score + 1e-12:
            self.best_score, self.best_c, self.best_state, self.waited = score, C, state(), 0
        elif self.best_score > self.majority + 1e-12:
            self.waited += 1
        return self.waited < PATH_PATIENCE


def _snapshot(model):
    from sklearn.base import clone

    copy = clone(model)
    for attr in ("coef_", "intercept_", "classes_", "n_features_in_", "n_iter_"):
        if hasattr(model, attr):
            setattr(copy, attr, np.array(getattr(model, attr), copy=True))
    return copy


def search_logreg(Xs: np.ndarray, labels: list[np.ndarray], fit_rows, val_rows, n_classes: int, cs, balanced):
    """``search_c`` for logreg and several label vectors over the same rows, solved together.

    One C path per label vector (each with its own stopping rule); at every C the vectors still on
    their path are fitted in one batched solve (``softmax.solve``), warm-started from their last C.
    Returns (best C, theta at it, offsets) per label vector.
    """
    from ..solvers import softmax

    X_fit, X_val = Xs[fit_rows], Xs[val_rows]
    paths = [_CPath(y[val_rows]) for y in labels]
    current: list = [None] * len(labels)
    live = list(range(len(labels)))
    for C in sorted(cs):
        if not live:
            break
        solution = softmax.solve(
            X_fit,
            [labels[t][fit_rows] for t in live],
            n_classes,
            [C] * len(live),
            balanced,
            init=[current[t] for t in live],
            tol=PATH_TOL,
        )
        still = []
        for j, t in enumerate(live):
            current[t] = solution.theta[j]
            score = float(np.mean(np.argmax(solution.scores(X_val, j), axis=1) == labels[t][val_rows]))
            if paths[t].record(C, score, lambda j=j: (solution.theta[j].copy(), solution.offsets[j].copy())):
                still.append(t)
        live = still
    return [(path.best_c, *path.best_state) for path in paths]


def fit_logreg(X: np.ndarray, labels: list[np.ndarray], train: np.ndarray, dev, n_classes: int, cs, balanced, seed):
    """Scaler + C search + final fit for several label vectors on the same training part, solved
    together (e.g. the real labels and the control task's). Returns [(model, scaler, C)] per vector.

    The inner holdout is stratified on the first vector's labels and shared by all of them.
    """
    from ..solvers import softmax

    scaler = fit_scaler(X, train)
    tol = clf.LOGREG_TOL
    if dev is not None:
        rows = np.concatenate([train, dev])
        Xs = scaler(X[rows])
        targets = [y[rows] for y in labels]
        local_train, local_dev = np.arange(len(train)), np.arange(len(train), len(rows))
        found = search_logreg(Xs, targets, local_train, local_dev, n_classes, cs, balanced)
        return [(clf.logreg_from(theta, offsets, C, balanced), scaler, C) for C, theta, offsets in found]
    Xs = scaler(X[train])
    targets = [y[train] for y in labels]
    if len(cs) == 1:
        chosen, init = [cs[0]] * len(labels), None
    else:
        fit_rows, val_rows = inner_split(targets[0], np.arange(len(train)), seed)
        found = search_logreg(Xs, targets, fit_rows, val_rows, n_classes, cs, balanced)
        chosen, init = [C for C, _, _ in found], [theta for _, theta, _ in found]
    # The final fit on the whole training part, warm-started from the path's solution at that C.
    solution = softmax.solve(Xs, targets, n_classes, chosen, balanced, init=init, tol=tol)
    return [
        (clf.logreg_from(solution.theta[p], solution.offsets[p], chosen[p], balanced), scaler, chosen[p])
        for p in range(len(labels))
    ]


def fit_linear(name: str, X: np.ndarray, y: np.ndarray, train: np.ndarray, dev, cs, balanced, seed):
    """Scaler + C search + final fit, all on the training part; returns (model, scaler, C)."""
    if name == "logreg":
        return fit_logreg(X, [y], train, dev, int(y.max()) + 1, cs, balanced, seed)[0]
    scaler = fit_scaler(X, train)
    if dev is not None:
        rows = np.concatenate([train, dev])
        Xs = scaler(X[rows])
        local_train, local_dev = np.arange(len(train)), np.arange(len(train), len(rows))
        C, model = search_c(name, Xs, y[rows], local_train, local_dev, cs, balanced, seed)
        return model, scaler, C
    Xs = scaler(X[train])
    y_train = y[train]
    if len(cs) == 1:
        C = cs[0]
        model = clf.make_linear(name, C, balanced, seed)
    else:
        fit_rows, val_rows = inner_split(y_train, np.arange(len(train)), seed)
        C, model = search_c(name, Xs, y_train, fit_rows, val_rows, cs, balanced, seed)
    clf.fit_quietly(model, Xs, y_train)  # the final fit on the whole training part
    return model, scaler, C


# -- one outer fold --------------------------------------------------------------------------------
@dataclass
class FoldResult:
    predictions: np.ndarray
    C: float = float("nan")
    fit_seconds: float = 0.0
    layer_weights: np.ndarray | None = None


def run_linear_tasks(name, X, labels, train, test, dev, n_classes, cs, balanced, seed) -> list[FoldResult]:
    """One outer fold for each label vector in ``labels``; logreg solves them together, and each
    result's ``fit_seconds`` is its share of the joint time."""
    started = time.perf_counter()
    if name == "logreg":
        fitted = fit_logreg(X, labels, train, dev, n_classes, cs, balanced, seed)
    else:
        fitted = [fit_linear(name, X, y, train, dev, cs, balanced, seed) for y in labels]
    X_test = fitted[0][1](X[test])  # one scaler: the training part is the same for every vector
    predictions = [model.predict(X_test) for model, _, _ in fitted]
    seconds = (time.perf_counter() - started) / len(labels)
    return [FoldResult(p, C, seconds) for p, (_, _, C) in zip(predictions, fitted, strict=False)]


def run_stack(name, blocks: list[np.ndarray], y, train, test, dev, n_classes, cs, balanced, seed) -> FoldResult:
    """One probe per layer; a logistic meta-classifier on their out-of-fold scores (training part only)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    started = time.perf_counter()
    train_scores, test_scores, chosen = [], [], []
    counts = np.bincount(y[train], minlength=n_classes)
    inner_folds = int(min(STACK_INNER_FOLDS, counts[counts > 0].min()))
    for X in blocks:
        model, scaler, C = fit_linear(name, X, y, train, dev, cs, balanced, seed)
        chosen.append(C)
        test_scores.append(clf.linear_scores(model, scaler(X[test]), n_classes))
        oof = np.zeros((len(train), n_classes))
        if inner_folds >= 2:
            splitter = StratifiedKFold(n_splits=inner_folds, shuffle=True, random_state=seed)
            for fit_idx, val_idx in splitter.split(np.zeros(len(train)), y[train]):
                inner = clf.make_linear(name, C, balanced, seed)
                inner_scaler = fit_scaler(X, train[fit_idx])
                clf.fit_quietly(inner, inner_scaler(X[train[fit_idx]]), y[train[fit_idx]])
                oof[val_idx] = clf.linear_scores(inner, inner_scaler(X[train[val_idx]]), n_classes)
        else:
            oof = clf.linear_scores(model, scaler(X[train]), n_classes)
        train_scores.append(np.nan_to_num(oof, neginf=0.0))
        test_scores[-1] = np.nan_to_num(test_scores[-1], neginf=0.0)
    meta = LogisticRegression(C=1.0, max_iter=1000, class_weight="balanced" if balanced else None)
    meta.fit(np.concatenate(train_scores, axis=1), y[train])
    predictions = meta.predict(np.concatenate(test_scores, axis=1))
    per_block = np.abs(meta.coef_).reshape(meta.coef_.shape[0], len(blocks), n_classes).sum(axis=(0, 2))
    weights = per_block / per_block.sum() if per_block.sum() > 0 else np.full(len(blocks), 1 / len(blocks))
    return FoldResult(predictions, float(np.exp(np.mean(np.log(chosen)))), time.perf_counter() - started, weights)


def run_mlp(X, y, train, test, dev, n_classes, balanced, seed) -> FoldResult:
    import torch

    started = time.perf_counter()
    scaler = fit_scaler(X, train)
    Xs = torch.from_numpy(np.ascontiguousarray(scaler(X)))
    fit_rows, val_rows = (train, dev) if dev is not None else inner_split(y, train, seed)
    torch.manual_seed(seed)
    model = clf.build_mlp(X.shape[1], n_classes)
    clf.train_head(model, lambda rows: Xs[rows], y, fit_rows, val_rows, n_classes, seed, balanced)
    predictions = clf.head_scores(model, lambda rows: Xs[rows], test).argmax(axis=1)
    return FoldResult(predictions, float("nan"), time.perf_counter() - started)


class TokenBatches:
    """Token-level states of the probed rows, padded per batch and standardised with given statistics.

    Row ``i`` owns ``states[starts[i] : starts[i] + lengths[i]]`` (real tokens only, specials included).
    """

    def __init__(self, states: np.ndarray, starts: np.ndarray, lengths: np.ndarray):
        self.states = states
        self.starts = np.asarray(starts, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.mean = np.zeros(states.shape[1], np.float32)
        self.scale = np.ones(states.shape[1], np.float32)

    def fit_scaler(self, rows: np.ndarray) -> None:
        """Standardisation statistics from the tokens of ``rows`` only (a fold's training part)."""
        index = np.concatenate([np.arange(self.starts[r], self.starts[r] + self.lengths[r]) for r in rows])
        scaler = Scaler(self.states[index])
        self.mean, self.scale = scaler.mean, scaler.scale

    def __call__(self, rows: np.ndarray):
        import torch

        lengths = self.lengths[rows]
        width = int(lengths.max())
        batch = np.zeros((len(rows), width, self.states.shape[1]), np.float32)
        mask = np.zeros((len(rows), width), bool)
        for i, (start, length) in enumerate(zip(self.starts[rows], lengths, strict=False)):
            batch[i, :length] = (self.states[start : start + length] - self.mean) / self.scale
            mask[i, :length] = True
        return torch.from_numpy(batch), torch.from_numpy(mask)


def run_attention(tokens: TokenBatches, y, train, test, dev, n_classes, balanced, seed) -> FoldResult:
    import torch

    started = time.perf_counter()
    tokens.fit_scaler(train)
    fit_rows, val_rows = (train, dev) if dev is not None else inner_split(y, train, seed)
    torch.manual_seed(seed)
    model = clf.build_attention(tokens.states.shape[1], n_classes)
    clf.train_head(model, tokens, y, fit_rows, val_rows, n_classes, seed, balanced, lr=2e-3)
    predictions = clf.head_scores(model, tokens, test, batch_size=256).argmax(axis=1)
    return FoldResult(predictions, float("nan"), time.perf_counter() - started)


def run_majority(y, train, test, n_classes) -> FoldResult:
    counts = np.bincount(y[train], minlength=n_classes)
    return FoldResult(np.full(len(test), int(np.argmax(counts))))


# -- metrics ---------------------------------------------------------------------------------------
def confusion(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    return np.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def metrics_from_confusion(cm: np.ndarray) -> dict[str, np.ndarray]:
    """accuracy, macro-F1 and balanced accuracy of one (k, k) or many (B, k, k) confusion matrices.

    Classes with no true rows are left out of balanced accuracy, and classes with neither true nor
    predicted rows out of macro-F1 (as scikit-learn does).
    """
    cm = np.asarray(cm, dtype=np.float64)
    tp = np.diagonal(cm, axis1=-2, axis2=-1)
    true = cm.sum(axis=-1)
    pred = cm.sum(axis=-2)
    total = true.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = tp.sum(axis=-1) / total
        recall = np.where(true > 0, tp / true, np.nan)
        f1 = np.where(true + pred > 0, 2 * tp / (true + pred), np.nan)
        balanced = np.nanmean(recall, axis=-1)
        macro_f1 = np.nanmean(f1, axis=-1)
    return {"accuracy": accuracy, "macro_f1": macro_f1, "balanced_accuracy": balanced, "per_class_f1": f1}


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval of per-fold scores."""
    from scipy import stats

    values = np.asarray(values, dtype=np.float64)
    mean = float(values.mean())
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def bootstrap_intervals(y_true, y_pred, n_classes: int, n_boot: int, seed: int) -> dict[str, tuple[float, float]]:
    """95% percentile intervals of each metric over resamples of the fixed test set."""
    rng = np.random.default_rng(seed)
    codes = y_true * n_classes + y_pred
    n, k2 = len(codes), n_classes * n_classes
    intervals: dict[str, list] = {"accuracy": [], "macro_f1": [], "balanced_accuracy": []}
    chunk = max(1, min(n_boot, 4_000_000 // max(1, n)))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        sample = codes[rng.integers(0, n, size=(size, n))]
        offset = (sample + np.arange(size)[:, None] * k2).ravel()
        cms = np.bincount(offset, minlength=size * k2).reshape(size, n_classes, n_classes)
        values = metrics_from_confusion(cms)
        for name in intervals:
            intervals[name].append(values[name])
    out = {}
    for name, parts in intervals.items():
        values = np.concatenate(parts)
        out[name] = (float(np.nanpercentile(values, 2.5)), float(np.nanpercentile(values, 97.5)))
    return out


def summarise(plan: Plan, y: np.ndarray, folds: list[FoldResult], n_classes: int, n_boot: int, seed: int) -> dict:
    """The metric columns of one results row from the per-fold predictions."""
    row: dict = {}
    per_fold = [confusion(y[test], result.predictions, n_classes) for (_, test), result in zip(plan.folds, folds, strict=False)]
    pooled = sum(per_fold)
    pooled_metrics = metrics_from_confusion(pooled)
    if plan.is_split:
        bounds = bootstrap_intervals(y[plan.folds[0][1]], folds[0].predictions, n_classes, n_boot, seed)
        for name in ("accuracy", "macro_f1", "balanced_accuracy"):
            row[name] = float(pooled_metrics[name])
            row[f"{name}_low"], row[f"{name}_high"] = bounds[name]
    else:
        fold_metrics = [metrics_from_confusion(cm) for cm in per_fold]
        for name in ("accuracy", "macro_f1", "balanced_accuracy"):
            row[name], row[f"{name}_low"], row[f"{name}_high"] = t_interval([m[name] for m in fold_metrics])
    row["per_class_f1"] = pooled_metrics["per_class_f1"]
    row["n_train"] = int(round(np.mean([len(train) for train, _ in plan.folds])))
    row["n_test"] = int(sum(len(test) for _, test in plan.folds))
    row["fit_seconds"] = float(sum(result.fit_seconds for result in folds))
    cs = [result.C for result in folds if np.isfinite(result.C)]
    row["C"] = float(np.median(cs)) if cs else float("nan")
    weights = [result.layer_weights for result in folds if result.layer_weights is not None]
    row["layer_weights"] = np.mean(weights, axis=0) if weights else None
    return row

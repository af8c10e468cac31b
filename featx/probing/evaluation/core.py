"""How a probe is fitted and scored on one outer fold: the scaler, the final fits after the C search
(``search``), and one ``run_*`` per kind of probe (linear, stacked layers, MLP, attention, majority).

Honesty rule: everything that is fitted (the scaler, the choice of C, early stopping, the stacking
meta-classifier) sees only the training part of each outer fold. The test part is used once, to score.
The outer plans live in ``plans``, the C search in ``search``, the metrics in ``metrics``.
"""

from __future__ import annotations

import time

import numpy as np

from ..solvers import classifiers as clf
from .groups import stratified_group_splits
from .plans import FoldResult, inner_split
from .search import search_c, search_logreg, search_logreg_on

STACK_INNER_FOLDS = 3
STACK_META_C = 1.0  # the stacked probe's meta-classifier's C
SCALER_BLOCK = 8192  # rows per block of the scaler's variance pass
# A feature whose standard deviation is under this times the root mean square of every value is float32
# rounding noise (about 8 ulps of the values' size), scaled as a constant one (``Scaler``).
ROUNDING_SPREAD = 1e-6
# Logreg fits of several label vectors (the real labels and the control task's) on a matrix of at least this
# many values (rows x dims) evaluate them with one matrix product per pass over it (``softmax.solve(joint=True)``):
# a thin product is bound by reading the matrix, so two problems cost about one (AG News, MiniLM, 6,400 x 384,
# 4 classes: 5.7 -> 3.6 ms an evaluation of both). With OpenBLAS these products are bit for bit the stacked ones
# (measured for 2 x 4 classes: every score of the 10,000-row probe unchanged); where a BLAS rounds them
# otherwise, the real labels' fit agrees with its fit alone within rounding instead of bit for bit. Smaller fits
# keep the stacked products, whose solutions never depend on the other problems of the batch.
JOINT_VALUES = 1_000_000
# Logreg fits on a matrix of at least this many values (rows x dims) start L-BFGS from the rows' second moments
# (``softmax_problem.Preconditioner``, as the word probes at scale do): standardised hidden states are strongly
# correlated, and on AG News (MiniLM, 6,400 x 384) the C path takes 2 to 3.5 times fewer evaluations and the
# final fit 2 to 7 times fewer. It changes where a fit stops within its tolerance, not the optimum it solves for.
PRECONDITION_VALUES = 1_000_000


# -- standardisation -------------------------------------------------------------------------------
class Scaler:
    """Per-feature standardisation fitted on given rows only (float32, constant features kept at 0). A feature
    whose spread is float32 rounding noise (a standard deviation under ``ROUNDING_SPREAD`` times the root mean
    square of all the values) counts as constant: MiniLM's top layer has a dimension that is 0 or -1.19e-7 (std
    1.3e-8 beside 0.27 for the layer), which, standardised, became a feature of several units, and a probe's
    weight on it, divided by 1.3e-8 in the model's space, a direction along that axis alone."""

    def __init__(self, X: np.ndarray):
        # Mean, then variance about it, in float64 over blocks of rows: no float64 copy of the whole of X.
        mean = X.mean(axis=0, dtype=np.float64)
        squares = np.zeros(X.shape[1])
        for start in range(0, len(X), SCALER_BLOCK):
            block = X[start : start + SCALER_BLOCK] - mean
            squares += np.einsum("ij,ij->j", block, block)
        std = np.sqrt(squares / max(len(X), 1))
        rms = float(np.sqrt(np.mean(std**2 + mean**2))) if std.size else 0.0
        std[std < max(1e-12, ROUNDING_SPREAD * rms)] = 1.0
        self.mean = mean.astype(np.float32)
        self.scale = std.astype(np.float32)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean) / self.scale


def fit_scaler(X: np.ndarray, rows: np.ndarray) -> Scaler:
    return Scaler(X[rows])


def joint_products(Xs: np.ndarray, targets: list) -> bool:
    """Whether the logreg fits of ``targets`` on ``Xs`` share one matrix product per pass (``JOINT_VALUES``)."""
    return len(targets) > 1 and Xs.size >= JOINT_VALUES


def preconditioner_of(X_fit: np.ndarray):
    """The L-BFGS preconditioner of the logreg fits on ``X_fit`` (the C path's rows), or None below
    ``PRECONDITION_VALUES`` (the plain path, bit for bit)."""
    from ..solvers.softmax_problem import Preconditioner

    return Preconditioner.from_rows(X_fit, np.float32) if X_fit.size >= PRECONDITION_VALUES else None


def fit_logreg(
    X: np.ndarray,
    labels: list[np.ndarray],
    train: np.ndarray,
    dev,
    n_classes: int,
    cs,
    balanced,
    seed,
    groups=None,
    strata: np.ndarray | None = None,
):
    """Scaler + C search + final fit for several label vectors on the same training part, solved
    together (e.g. the real labels and the control task's). Returns [(model, scaler, C, validation)] per
    vector, ``validation`` the (rows, predictions) of the dev rows or of the inner holdout at that C.

    The inner holdout is stratified on the first vector's labels and shared by all of them (with ``groups``,
    the group of every row, whole groups held out); it is drawn even for a single C, whose holdout score is
    what the best layer is chosen on. ``strata`` (indexed as the labels): the labels it is stratified on instead,
    as ``featx fit``'s control head, fitted alone, draws it on the real labels as probe's joint solve does.
    """
    scaler = fit_scaler(X, train)
    if dev is not None:
        rows = np.concatenate([train, dev])
        Xs = scaler(X[rows])
        targets = [y[rows] for y in labels]
        local_train, local_dev = np.arange(len(train)), np.arange(len(train), len(rows))
        joint, preconditioner = joint_products(Xs, targets), preconditioner_of(Xs[local_train])
        found = search_logreg(Xs, targets, local_train, local_dev, n_classes, cs, balanced, joint, preconditioner)
        return [
            (clf.logreg_from(theta, offsets, C, balanced), scaler, C, (dev, predicted))
            for C, theta, offsets, predicted in found
        ]
    Xs = scaler(X[train])
    targets = [y[train] for y in labels]
    drawn_on = targets[0] if strata is None else strata[train]
    fit_rows, val_rows = inner_split(drawn_on, np.arange(len(train)), seed, _within(groups, train))
    return final_logreg(Xs, targets, fit_rows, val_rows, n_classes, cs, balanced, scaler, train)


def final_logreg(Xs, targets, fit_rows, val_rows, n_classes: int, cs, balanced, scaler, train: np.ndarray):
    """The C search on ``fit_rows``/``val_rows`` (positions in the training part ``train``), then the final
    fit on the whole training part, warm-started from the path's solution at the C chosen."""
    joint, preconditioner = joint_products(Xs, targets), preconditioner_of(Xs[fit_rows])
    found, chosen, solution = path_then_final(
        Xs, targets, fit_rows, val_rows, n_classes, cs, balanced, joint, preconditioner
    )
    return [
        (
            clf.logreg_from(solution.theta[p], solution.offsets[p], chosen[p], balanced),
            scaler,
            chosen[p],
            (train[val_rows], found[p][3]),
        )
        for p in range(len(targets))
    ]


def path_then_final(Xs, targets, fit_rows, val_rows, n_classes: int, cs, balanced, joint=False, preconditioner=None):
    """The C path of each label vector on ``fit_rows``/``val_rows`` (positions along the rows of ``Xs``: one
    ``(n, d)`` matrix, or a stacked ``(P, n, d)`` one per vector), then the final fit on every row of ``Xs``,
    warm-started from the path's solution at the C chosen: (``search_logreg_on``'s found, the Cs chosen, the
    final ``softmax.solve`` solution)."""
    from ..solvers import softmax

    found = search_logreg_on(
        Xs[..., fit_rows, :],
        [y[fit_rows] for y in targets],
        Xs[..., val_rows, :],
        [y[val_rows] for y in targets],
        n_classes,
        cs,
        balanced,
        joint=joint,
        preconditioner=preconditioner,
    )
    chosen, init = [C for C, *_ in found], [theta for _, theta, *_ in found]
    solution = softmax.solve(
        Xs,
        targets,
        n_classes,
        chosen,
        balanced,
        init=init,
        tol=clf.LOGREG_TOL,
        joint=joint,
        preconditioner=preconditioner,
    )
    return found, chosen, solution


def _within(groups: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    """The groups of ``rows`` (None: no groups)."""
    return None if groups is None else groups[rows]


def fit_linear(
    name: str, X: np.ndarray, y: np.ndarray, train: np.ndarray, dev, cs, balanced, seed, groups=None, strata=None
):
    """Scaler + C search + final fit, all on the training part; returns (model, scaler, C, validation).
    ``strata``: a logreg's inner holdout drawn on these labels (``fit_logreg``); an svm's is drawn on its own."""
    if name == "logreg":
        return fit_logreg(X, [y], train, dev, int(y.max()) + 1, cs, balanced, seed, groups, strata)[0]
    scaler = fit_scaler(X, train)
    if dev is not None:
        rows = np.concatenate([train, dev])
        Xs = scaler(X[rows])
        local_train, local_dev = np.arange(len(train)), np.arange(len(train), len(rows))
        C, model, predicted = search_c(name, Xs, y[rows], local_train, local_dev, cs, balanced, seed)
        return model, scaler, C, (dev, predicted)
    Xs = scaler(X[train])
    y_train = y[train]
    fit_rows, val_rows = inner_split(y_train, np.arange(len(train)), seed, _within(groups, train))
    C, model, predicted = search_c(name, Xs, y_train, fit_rows, val_rows, cs, balanced, seed)
    clf.fit_quietly(model, Xs, y_train)  # the final fit on the whole training part
    return model, scaler, C, (train[val_rows], predicted)


# -- one outer fold --------------------------------------------------------------------------------
def run_linear_tasks(name, X, labels, train, test, dev, n_classes, cs, balanced, seed, groups=None) -> list[FoldResult]:
    """One outer fold for each label vector in ``labels``; logreg solves them together, and each
    result's ``fit_seconds`` is its share of the joint time."""
    started = time.perf_counter()
    if name == "logreg":
        fitted = fit_logreg(X, labels, train, dev, n_classes, cs, balanced, seed, groups)
    else:
        fitted = [fit_linear(name, X, y, train, dev, cs, balanced, seed, groups) for y in labels]
    X_test = fitted[0][1](X[test])  # one scaler: the training part is the same for every vector
    predictions = [model.predict(X_test) for model, *_ in fitted]
    seconds = (time.perf_counter() - started) / len(labels)
    return [
        FoldResult(p, C, seconds, validation=validation)
        for p, (_, _, C, validation) in zip(predictions, fitted, strict=False)
    ]


def run_stack(
    name, blocks: list[np.ndarray], y, train, test, dev, n_classes, cs, balanced, seed, groups=None
) -> FoldResult:
    """One probe per layer; a logistic meta-classifier on their out-of-fold scores (training part only;
    with ``groups``, folded by whole group)."""
    started = time.perf_counter()
    train_scores, test_scores, chosen = [], [], []
    inner_folds = stack_folds(y, train, n_classes, groups)
    for X in blocks:
        model, scaler, C, oof = stack_layer(name, X, y, train, dev, n_classes, cs, balanced, seed, inner_folds, groups)
        chosen.append(C)
        train_scores.append(oof)
        test_scores.append(np.nan_to_num(clf.linear_scores(model, scaler(X[test]), n_classes), neginf=0.0))
    meta = stack_meta(np.concatenate(train_scores, axis=1), y[train], balanced)
    predictions = meta.predict(np.concatenate(test_scores, axis=1))
    per_block = np.abs(meta.coef_).reshape(meta.coef_.shape[0], len(blocks), n_classes).sum(axis=(0, 2))
    weights = per_block / per_block.sum() if per_block.sum() > 0 else np.full(len(blocks), 1 / len(blocks))
    validation = _stack_validation(meta, np.concatenate(train_scores, axis=1), y, train, inner_folds, seed, groups)
    C = float(np.exp(np.mean(np.log(chosen))))
    return FoldResult(predictions, C, time.perf_counter() - started, weights, validation)


def stack_layer(name, X, y, train, dev, n_classes: int, cs, balanced, seed, inner_folds: int, groups=None):
    """One layer of the stacked probe (of ``featx probe`` and of ``featx fit``'s stack alike): its probe fitted on
    the training part (``fit_linear``), and the out-of-fold class scores of the training part that the
    meta-classifier reads (``clf.linear_scores``: probabilities for logreg, margins for svm, a binary svm's margin m
    as -m, m; a class never seen as 0), each inner fold's probe a fresh fit at the layer's C (``fit_at_c``).
    Returns ``(model, scaler, C, scores)``."""
    model, scaler, C, _ = fit_linear(name, X, y, train, dev, cs, balanced, seed, groups)
    oof = np.zeros((len(train), n_classes))
    if inner_folds >= 2:
        for fit_idx, val_idx in stack_splits(y, train, inner_folds, seed, groups):
            inner, inner_scaler = fit_at_c(name, X, y, train[fit_idx], C, balanced, seed)
            oof[val_idx] = clf.linear_scores(inner, inner_scaler(X[train[val_idx]]), n_classes)
    else:
        oof = clf.linear_scores(model, scaler(X[train]), n_classes)
    return model, scaler, C, np.nan_to_num(oof, neginf=0.0)


def stack_meta(scores: np.ndarray, y: np.ndarray, balanced: bool):
    """The stacked probe's meta-classifier (logistic, C 1) fitted on its layers' out-of-fold ``scores``."""
    from sklearn.linear_model import LogisticRegression

    meta = LogisticRegression(C=STACK_META_C, max_iter=1000, class_weight="balanced" if balanced else None)
    return meta.fit(scores, y)


def fit_at_c(name: str, X: np.ndarray, y: np.ndarray, rows: np.ndarray, C: float, balanced, seed):
    """A linear probe at a fixed C, its scaler and fit on ``rows`` only: the stacked probe's inner fits (of
    ``featx probe`` and of ``featx fit``'s stack, so that both make the same out-of-fold scores)."""
    model = clf.make_linear(name, C, balanced, seed)
    scaler = fit_scaler(X, rows)
    clf.fit_quietly(model, scaler(X[rows]), y[rows])
    return model, scaler


def stack_folds(y: np.ndarray, train: np.ndarray, n_classes: int, groups: np.ndarray | None) -> int:
    """How many inner folds the stacked probe's out-of-fold scores take (below 2: none)."""
    counts = np.bincount(y[train], minlength=n_classes)
    folds = int(min(STACK_INNER_FOLDS, counts[counts > 0].min()))
    return folds if groups is None else min(folds, len(np.unique(groups[train])))


def stack_splits(y: np.ndarray, train: np.ndarray, inner_folds: int, seed: int, groups: np.ndarray | None) -> list:
    """The stacked probe's inner folds of the training part (positions in it), by whole group with ``groups``."""
    from sklearn.model_selection import StratifiedKFold

    if groups is None:
        splitter = StratifiedKFold(n_splits=inner_folds, shuffle=True, random_state=seed)
        return list(splitter.split(np.zeros(len(train)), y[train]))
    return stratified_group_splits(y[train], groups[train], inner_folds, seed)


def _stack_validation(meta, scores, y: np.ndarray, train: np.ndarray, inner_folds: int, seed: int, groups=None):
    """The stacked probe's held-out predictions of its training part: the meta-classifier cross-validated
    over the layers' out-of-fold scores (None when the training part is too small to fold)."""
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_predict

    if inner_folds < 2:
        return None
    splits = stack_splits(y, train, inner_folds, seed, groups)
    return train, cross_val_predict(clone(meta), scores, y[train], cv=splits)


def fit_mlp(X, y, train, dev, n_classes, balanced, seed, groups=None):
    """The MLP probe of ``featx probe`` and ``featx fit``: the scaler on ``train``, trained on ``train`` and
    early-stopped on the ``dev`` rows when there are some, else on a holdout of ``train`` (``inner_split``; of
    whole ``groups``). Returns (model, scaler, standardised rows as a tensor, validation rows)."""
    import torch

    scaler = fit_scaler(X, train)
    Xs = torch.from_numpy(np.ascontiguousarray(scaler(X)))
    fit_rows, val_rows = (train, dev) if dev is not None else inner_split(y, train, seed, groups)
    torch.manual_seed(seed)
    model = clf.build_mlp(X.shape[1], n_classes)
    clf.train_head(model, lambda rows: Xs[rows], y, fit_rows, val_rows, n_classes, seed, balanced)
    return model, scaler, Xs, val_rows


def run_mlp(X, y, train, test, dev, n_classes, balanced, seed, groups=None) -> FoldResult:
    started = time.perf_counter()
    model, _, Xs, val_rows = fit_mlp(X, y, train, dev, n_classes, balanced, seed, groups)
    predictions = clf.head_scores(model, lambda rows: Xs[rows], test).argmax(axis=1)
    held_out = clf.head_scores(model, lambda rows: Xs[rows], val_rows).argmax(axis=1)
    return FoldResult(predictions, float("nan"), time.perf_counter() - started, validation=(val_rows, held_out))


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


def run_attention(tokens: TokenBatches, y, train, test, dev, n_classes, balanced, seed, groups=None) -> FoldResult:
    import torch

    started = time.perf_counter()
    tokens.fit_scaler(train)
    fit_rows, val_rows = (train, dev) if dev is not None else inner_split(y, train, seed, groups)
    torch.manual_seed(seed)
    model = clf.build_attention(tokens.states.shape[1], n_classes)
    clf.train_head(model, tokens, y, fit_rows, val_rows, n_classes, seed, balanced, lr=2e-3)
    predictions = clf.head_scores(model, tokens, test, batch_size=256).argmax(axis=1)
    held_out = clf.head_scores(model, tokens, val_rows, batch_size=256).argmax(axis=1)
    return FoldResult(predictions, float("nan"), time.perf_counter() - started, validation=(val_rows, held_out))


def baseline_guess(y, train, test, n_classes: int | None = None) -> np.ndarray:
    """The zero-parameter baseline's prediction of every ``test`` row: the majority class of the ``train`` rows
    (the first on a tie) of ``n_classes`` classes, or for a number (``n_classes`` None) their mean. The one
    definition behind the probe tables' ``majority`` / ``train mean`` rows and the learning curves' baselines."""
    if n_classes is None:
        return np.full(len(test), float(np.mean(np.asarray(y, dtype=np.float64)[train])))
    return np.full(len(test), int(np.argmax(np.bincount(y[train], minlength=n_classes))))


def run_majority(y, train, test, n_classes) -> FoldResult:
    """The majority-class reference of one fold (``baseline_guess``)."""
    return FoldResult(baseline_guess(y, train, test, n_classes))

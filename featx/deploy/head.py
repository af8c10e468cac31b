"""``Head``: the fitted part of a deployed probe (scaler plus classifier or regressor), as plain arrays, and
``fit_head``, the one place a head is trained, on the rows it is given and no others.

A head reads standardised features ``(X - mean) / scale`` (float32, as the probes' ``Scaler``) and computes
its scores in float64: class scores ``Xs @ coef + intercept`` (logreg, svm), a value (ridge), or a
one-hidden-layer network (mlp: ``relu(Xs @ w1 + b1) @ w2 + b2``). logreg and mlp give probabilities (softmax
of the scores); svm gives margins only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..probing import fit_linear, fit_mlp

# The arrays of each kind of head, besides the scaler's mean and scale.
ARRAYS = {"linear": ("coef", "intercept"), "ridge": ("coef", "intercept"), "mlp": ("w1", "b1", "w2", "b2")}
KIND_OF = {"logreg": "linear", "svm": "linear", "ridge": "ridge", "mlp": "mlp"}


@dataclass
class Head:
    """A fitted head: its classifier name, scaler, weights and (classification) class names."""

    classifier: str
    mean: np.ndarray  # (d,) float32
    scale: np.ndarray  # (d,) float32
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    classes: list[str] | None = None  # None: a regression head
    C: float = float("nan")  # the C (or ridge alpha) chosen

    @property
    def kind(self) -> str:
        return KIND_OF[self.classifier]

    @property
    def n_features(self) -> int:
        return int(self.mean.shape[0])

    @property
    def has_proba(self) -> bool:
        return self.classifier in ("logreg", "mlp")

    def standardised(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, dtype=np.float32) - self.mean) / self.scale

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Class scores ``(n, k)`` (classification) or values ``(n,)`` (regression), float64."""
        Xs = self.standardised(X).astype(np.float64)
        w = self.weights
        if self.kind == "mlp":
            hidden = np.maximum(Xs @ w["w1"] + w["b1"], 0.0)
            return hidden @ w["w2"] + w["b2"]
        out = Xs @ w["coef"] + w["intercept"]
        return out[:, 0] if self.kind == "ridge" else out

    def proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities ``(n, k)`` (logreg and mlp)."""
        scores = self.scores(X)
        scores = scores - scores.max(axis=1, keepdims=True)
        exp = np.exp(scores)
        return exp / exp.sum(axis=1, keepdims=True)

    def predict_codes(self, X: np.ndarray) -> np.ndarray:
        """Class codes (index into ``classes``), or values for regression."""
        scores = self.scores(X)
        return scores if self.classes is None else np.argmax(scores, axis=1)


def fit_head(
    classifier: str,
    X: np.ndarray,
    y: np.ndarray,
    classes: list[str] | None,
    cs,
    alphas,
    balanced: bool,
    seed: int,
    dev: np.ndarray | None = None,
    groups: np.ndarray | None = None,
    level: str = "sentence",
    strata: np.ndarray | None = None,
) -> Head:
    """Train a head on exactly these rows (``X``, ``y``): the scaler, the C (or alpha) search on a holdout of
    them, then the final fit on all of them. ``classes`` None: regression (``y`` numbers), else ``y`` are codes
    into ``classes``. ``dev``: positions of fixed validation rows (a corpus's val split): the head is trained on
    the other rows and its C (alpha) chosen, or an mlp early-stopped, on these, as ``featx probe`` does.
    ``groups``: each row's group (``--group``, a word's sentence): without ``dev``, the holdout that chooses C
    (alpha), or early-stops an mlp, takes whole groups. ``level`` "word" or "arc": an svm or mlp head is fitted by
    ``featx probe``'s word probes' own function (``probing.fit_word_head``). ``strata``: a logreg's C holdout drawn
    on these labels (the control task's head: on the real labels, as probe's joint solve draws it)."""
    rows = np.arange(len(X)) if dev is None else np.setdiff1d(np.arange(len(X)), dev)
    if level in ("word", "arc") and classifier in ("svm", "mlp"):
        assert classes is not None
        return _word_head(classifier, X, y, rows, dev, list(classes), cs, balanced, seed, groups)
    if classifier == "ridge":
        from ..probing import fit_ridge

        fits, scaler = fit_ridge(X, [y], rows, dev, tuple(alphas), seed, groups)
        fit, alpha, _ = fits[0]
        weights = {"coef": np.asarray(fit.coef, np.float64), "intercept": np.asarray(fit.intercept, np.float64)}
        return Head("ridge", scaler.mean, scaler.scale, weights, None, float(alpha))
    assert classes is not None
    if classifier == "mlp":
        head = _fit_mlp(X, y, rows, dev, len(classes), balanced, seed, groups)
        head.classes = list(classes)
        return head
    model, scaler, C, _ = fit_linear(classifier, X, y, rows, dev, tuple(cs), balanced, seed, groups, strata)
    weights = linear_weights(model, len(classes))
    return Head(classifier, scaler.mean, scaler.scale, weights, list(classes), float(C))


def _word_head(classifier: str, X, y, rows, dev, classes: list[str], cs, balanced: bool, seed: int, groups) -> Head:
    """An svm or mlp word head, fitted as ``featx probe`` fits its word probes (``probing.fit_word_head``)."""
    from ..probing import fit_word_head

    y = np.asarray(y, np.int64)
    model, scaler, C, _ = fit_word_head(classifier, X, y, rows, dev, len(classes), tuple(cs), balanced, seed, groups)
    if classifier == "mlp":
        return Head("mlp", scaler.mean, scaler.scale, mlp_weights(model), classes)
    return Head(classifier, scaler.mean, scaler.scale, linear_weights(model, len(classes)), classes, float(C))


def linear_weights(model, n_classes: int, halved: bool = True) -> dict[str, np.ndarray]:
    """The (d, k) coefficients and (k,) intercepts of a fitted logreg or svm, every class a column (a class
    the fit never saw scores -inf; a binary svm's one margin m becomes the two scores -m/2, m/2, or with
    ``halved=False`` -m, m: a stack's part, whose scores its meta-classifier reads as ``featx probe``'s does)."""
    coef = np.asarray(model.coef_, np.float64)
    intercept = np.asarray(model.intercept_, np.float64).reshape(-1)
    if coef.shape[0] == 1:  # a binary svm: one margin
        half = 2.0 if halved else 1.0
        coef, intercept = np.stack([-coef[0], coef[0]]) / half, np.array([-1.0, 1.0]) * intercept[0] / half
    full_coef = np.zeros((coef.shape[1], n_classes))
    full_intercept = np.full(n_classes, -np.inf)
    present = np.asarray(model.classes_, dtype=np.int64)
    full_coef[:, present] = coef.T
    full_intercept[present] = intercept
    return {"coef": full_coef, "intercept": full_intercept}


def _fit_mlp(X: np.ndarray, y: np.ndarray, rows, dev, n_classes: int, balanced: bool, seed: int, groups=None) -> Head:
    """The probes' MLP head (``evaluation.fit_mlp``, as ``featx probe`` fits it): trained on ``rows``,
    early-stopped on the ``dev`` rows (the val split) when given, else on a holdout of ``rows`` (of whole groups
    with ``groups``)."""
    model, scaler, _, _ = fit_mlp(X, np.asarray(y, np.int64), rows, dev, n_classes, balanced, seed, groups)
    return Head("mlp", scaler.mean, scaler.scale, mlp_weights(model), None)


def mlp_weights(model) -> dict[str, np.ndarray]:
    """The arrays of a trained mlp probe (``probing.build_mlp``: linear, relu, dropout, linear), float64."""
    state = {key: value.detach().double().numpy() for key, value in model.state_dict().items()}
    return {
        "w1": state["0.weight"].T.copy(),
        "b1": state["0.bias"],
        "w2": state["3.weight"].T.copy(),
        "b2": state["3.bias"],
    }


__all__ = ["ARRAYS", "KIND_OF", "Head", "fit_head", "linear_weights"]

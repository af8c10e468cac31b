"""``FittedProbe``: a probe bundle (``featx fit -o model.featx``) as a scikit-learn estimator of texts.

Used as it is, it predicts with the bundle's head; ``fit(texts, y)`` trains a new head of the same kind on the
same layer spec and pooling, encoding the texts with the bundle's extraction settings (so ``clone`` plus
``fit`` inside ``cross_val_predict`` or ``GridSearchCV`` fits only the head, per fold). A classifier or a
regressor, as the bundle is: ``classes_``, ``predict``, ``predict_proba`` (logreg, mlp), ``score``
(accuracy, or R²). ``X`` is a sequence of texts; for a pair probe, a two-column array or a list of
``(text, text_pair)`` tuples; or a float matrix of precomputed features of the bundle's layer and pooling
(checked as scikit-learn checks arrays: finite, 2-D, real, dense, not empty, as wide as the head reads). A
stacked bundle (``--layer 'stack(...)'``) reads one matrix per layer: its features as a list of those matrices (as
``Probe.features`` gives them) or side by side in one matrix, split by the layers' widths; a refit fits a stack.
"""

from __future__ import annotations

import os
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval
from sklearn.utils.metaestimators import available_if

from ..deploy import Probe, fit_any, load
from ..probing import DEFAULT_ALPHAS, DEFAULT_CS


class FittedProbe(BaseEstimator):
    """A saved probe of texts: ``FittedProbe("model.featx").predict(["a new sentence"])``.

    Parameters: ``bundle`` (the bundle folder), ``balanced`` (class weights of a refit), ``seed``.
    """

    _parameter_constraints: dict = {
        "bundle": [str, os.PathLike, None],
        "balanced": ["boolean"],
        "seed": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, bundle: str | Path | None = None, balanced: bool = False, seed: int = 0):
        self.bundle = bundle
        self.balanced = balanced
        self.seed = seed

    # -- the probe ---------------------------------------------------------------------------
    def _probe(self) -> Probe:
        """The probe in use: the one ``fit`` trained, else the bundle's (loaded once). Either belongs to the
        ``bundle`` it came from: after ``set_params(bundle=...)`` the new bundle is loaded, not the old one kept."""
        probe = getattr(self, "probe_", None)
        if probe is not None and _same_path(getattr(self, "_probe_bundle", None), self.bundle):
            return probe
        if self.bundle is None:
            raise ValueError("FittedProbe needs bundle= (a folder written by featx fit)")
        probe = load(self.bundle)
        self._keep(probe)
        return probe

    def _keep(self, probe: Probe, classes: np.ndarray | None = None) -> None:
        """Use ``probe`` from now on, remembered as of the current ``bundle``."""
        self.probe_, self._probe_bundle = probe, self.bundle
        self.__dict__.pop("classes_", None)
        self._set_classes(probe, classes)

    def _set_classes(self, probe: Probe, classes: np.ndarray | None = None) -> None:
        if probe.classes is not None:
            self.classes_ = np.asarray(probe.classes, dtype=object) if classes is None else classes

    def __sklearn_is_fitted__(self) -> bool:
        return self.bundle is not None or getattr(self, "probe_", None) is not None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        from sklearn.utils import ClassifierTags, RegressorTags

        regression = self._task() == "regression"
        tags.estimator_type = "regressor" if regression else "classifier"
        tags.classifier_tags = None if regression else ClassifierTags()
        tags.regressor_tags = RegressorTags() if regression else None
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags

    def _task(self) -> str:
        try:
            return self._probe().task
        except Exception:  # an unloadable bundle: scikit-learn only asks for its tags here
            return "classification"

    def _features(self, X: Any, minimum_rows: int = 1) -> np.ndarray | list[np.ndarray]:
        """The head's input: ``X`` itself when it is a numeric matrix (validated), else the texts' features."""
        from sklearn.utils.validation import check_array

        probe = self._probe()
        if _is_blocks(X):
            return _layer_blocks(X, probe, minimum_rows)
        array = None if isinstance(X, (list, tuple)) or _is_sparse(X) else np.asarray(X)
        if _is_sparse(X) or (array is not None and array.dtype.kind in "fiucb"):
            matrix = check_array(X, dtype=np.float32, ensure_min_samples=minimum_rows)
            if probe.spec.kind == "stack":
                return _split_stack(matrix, probe)
            if minimum_rows == 1 and matrix.shape[1] != probe.head.n_features:
                raise ValueError(
                    f"X has {matrix.shape[1]} features, but FittedProbe is expecting {probe.head.n_features} "
                    "features as input (the width of its layer and pooling)"
                )
            return matrix
        if probe.level in ("word", "arc"):
            what = (
                "word vectors (one row per word)" if probe.level == "word" else "[h_head, h_dep, h_head * h_dep] rows"
            )
            if "offset_buckets" in probe.info:  # a head selector's pair features (docs/reference/bundle.md)
                what = "[h_head, h_dep, h_head * h_dep, the two on the head's side, offset bucket] rows"
            raise ValueError(
                f"this bundle is a {probe.level} probe: FittedProbe takes its {what}, not texts; "
                "featx.load(bundle).predict(sentences) predicts the words of sentences"
            )
        if array is not None and array.ndim == 2 and array.shape[1] == 2:
            return probe.features([str(t) for t in array[:, 0]], [str(t) for t in array[:, 1]])
        if isinstance(X, (list, tuple)) and X and isinstance(X[0], (list, tuple)):
            return probe.features(list(X))  # (text, text_pair) items: the probe splits and checks them
        texts = [str(text) for text in (X.tolist() if hasattr(X, "tolist") else X)]
        if len(texts) < minimum_rows:
            raise ValueError(f"Found {len(texts)} text(s) while a minimum of {minimum_rows} is required")
        return probe.features(texts)

    # -- estimator ---------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> FittedProbe:
        """Train a new head of the bundle's kind on these texts' features (its C or alpha chosen on a holdout)."""
        self._validate_params()
        base = self._probe()
        y = _targets(y, base.classes is None)
        features = self._features(X, minimum_rows=2)
        blocks = features if isinstance(features, list) else [features]  # a stack's layers, else one matrix
        if len(blocks[0]) != len(y):
            raise ValueError(f"X has {len(blocks[0])} rows but y has {len(y)}")
        options = {"cs": DEFAULT_CS, "alphas": DEFAULT_ALPHAS, "balanced": bool(self.balanced), "seed": self.seed}
        if base.classes is None:
            head = fit_any("ridge", features, y.astype(np.float64), None, {**options, "balanced": False})
            classes = None
        else:
            classes, codes = np.unique(y, return_inverse=True)
            if len(classes) < 2:
                raise ValueError(f"y has 1 class ({classes[0]!r}): a classifier needs at least 2")
            names = [str(value) for value in classes]
            head = fit_any(base.head.classifier, features, codes, names, options)  # fit_stack for a stack's blocks
        info = {**base.info, "refit_on": int(len(y))}
        self._keep(Probe(head, base.spec, base.pooling, dict(base.extraction), info), classes)
        self.n_features_in_ = int(sum(block.shape[1] for block in blocks))
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The predicted class names (or values) of the texts ``X``."""
        probe = self._probe()
        codes = probe.head.predict_codes(self._features(X))
        return codes if probe.classes is None else self.classes_[codes]

    @available_if(lambda self: self._probe().head.has_proba)
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``(n, classes)`` of the texts ``X`` (logreg and mlp probes)."""
        probe = self._probe()
        return probe.predict_proba_features(self._features(X))

    @available_if(lambda self: self._probe().classes is not None)
    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores of the texts ``X``; for two classes, the second's score minus the first's."""
        scores = self._probe().scores_features(self._features(X))
        return scores[:, 1] - scores[:, 0] if scores.ndim == 2 and scores.shape[1] == 2 else scores

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy (classification) or R² (regression) of ``predict(X)`` against ``y``."""
        from sklearn.metrics import accuracy_score, r2_score

        predicted = self.predict(X)
        if self._probe().classes is None:
            return float(r2_score(y, predicted, sample_weight=sample_weight))
        return float(accuracy_score(np.asarray(y), predicted, sample_weight=sample_weight))


def _same_path(a: Any, b: Any) -> bool:
    """Whether two ``bundle`` values name the same folder (``None`` only matches ``None``)."""
    if a is None or b is None:
        return a is b
    return os.fspath(a) == os.fspath(b)


def _is_sparse(X: Any) -> bool:
    from scipy import sparse

    return bool(sparse.issparse(X))


def _is_blocks(X: Any) -> bool:
    """Whether ``X`` is a list (or tuple) of matrices: a stacked probe's features, one matrix per layer."""
    return isinstance(X, (list, tuple)) and len(X) > 0 and all(isinstance(x, np.ndarray) and x.ndim == 2 for x in X)


def _layer_blocks(X: Any, probe: Probe, minimum_rows: int) -> list[np.ndarray]:
    """A stacked probe's list of per-layer matrices, each checked as a matrix is and as wide as its layer."""
    from sklearn.utils.validation import check_array

    if probe.spec.kind != "stack":
        raise ValueError(
            f"X is a list of {len(X)} matrices, but FittedProbe reads one matrix of {probe.head.n_features} "
            f"features (layer {probe.spec.name}): only a stacked bundle reads one matrix per layer"
        )
    widths = [int(width) for width in probe.head.widths]
    blocks = [check_array(block, dtype=np.float32, ensure_min_samples=minimum_rows) for block in X]
    if [block.shape[1] for block in blocks] != widths:
        raise ValueError(
            f"X is {len(blocks)} matrices of {[block.shape[1] for block in blocks]} features, but FittedProbe is "
            f"expecting {len(widths)} of {widths} features, one per stacked layer {list(probe.spec.layers)}"
        )
    if len({len(block) for block in blocks}) > 1:
        rows = [len(block) for block in blocks]
        raise ValueError(f"the layers' matrices have {rows} rows: each needs one row per text")
    return blocks


def _split_stack(matrix: np.ndarray, probe: Probe) -> list[np.ndarray]:
    """One matrix of a stack's layers side by side, split into the per-layer matrices its head reads."""
    widths = [int(width) for width in probe.head.widths]
    if matrix.shape[1] != sum(widths):
        raise ValueError(
            f"X has {matrix.shape[1]} features, but FittedProbe is expecting {sum(widths)} features as input "
            f"(its stacked layers {list(probe.spec.layers)} side by side, {'+'.join(map(str, widths))} columns)"
        )
    return np.split(matrix, np.cumsum(widths)[:-1], axis=1)


def _targets(y: Any, regression: bool) -> np.ndarray:
    """``y`` as a 1-D array, checked as scikit-learn's estimators check targets (``check_X_y``): a column vector
    raveled, with a warning; NaN or infinity refused before the classes' type is read (``type_of_target`` casts the
    values to integers first, a RuntimeWarning on NaN and inf, and cannot sort a missing value among strings)."""
    from sklearn.utils import assert_all_finite
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import column_or_1d

    if y is None:
        raise ValueError("FittedProbe requires y to be passed, but the target y is None")
    y = column_or_1d(y, warn=True)
    if regression:
        y = np.asarray(y, dtype=np.float64)
    try:
        assert_all_finite(y, input_name="y")
    except ValueError as error:
        what = "a value" if regression else "a class"
        said = str(error).rstrip(".")
        raise ValueError(f"{said}: FittedProbe needs {what} for every row; leave out the rows without one") from None
    if not regression:
        check_classification_targets(y)
    return y


__all__ = ["FittedProbe"]

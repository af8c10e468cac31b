"""``Probe``: a deployed probe, fitted by ``featx.fit`` or loaded from a bundle by ``featx.load``: a head on
one layer spec and pooling of a known model, which predicts from texts (encoding them with the bundle's
extraction settings, only up to its highest layer) or from precomputed features."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..selection import LayerSpec
from .features import embedded_matrix


@dataclass
class Probe:
    """A fitted head, what it reads (``spec``, ``pooling``) and how those features were made (``extraction``).

    ``info`` holds the rest of the manifest: label, task, the selection's scores, the features file's
    fingerprint, featx's version and the creation time."""

    head: Any  # a Head, or a StackHead (stack.py)
    spec: LayerSpec
    pooling: str
    extraction: dict
    info: dict = field(default_factory=dict)
    path: Path | None = None  # the bundle it was loaded from or written to

    @property
    def classes(self) -> list[str] | None:
        return self.head.classes

    @property
    def task(self) -> str:
        return "regression" if self.head.classes is None else "classification"

    @property
    def label(self) -> str:
        return str(self.info.get("label", "label"))

    @property
    def layers(self) -> list[int]:
        return list(self.spec.layers)

    def __repr__(self) -> str:
        what = f"{len(self.classes)} classes" if self.classes is not None else "regression"
        return (
            f"Probe(label={self.label!r}, {what}, layer={self.spec.name}, pooling={self.pooling!r}, "
            f"classifier={self.head.classifier!r}, model={self.extraction.get('model')!r})"
        )

    # -- precomputed features --------------------------------------------------------------
    def _checked(self, X: Any) -> Any:
        if self.spec.kind == "stack":
            return self._checked_blocks(X)
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.head.n_features:
            raise InputError(
                f"the features have shape {X.shape}; this probe reads {self.head.n_features} columns "
                f"(layer {self.spec.name}, pooling {self.pooling})",
                "pass the matrix of the bundle's layer and pooling, one row per text",
            )
        return X

    def _checked_blocks(self, blocks: Any) -> list[np.ndarray]:
        widths = [int(width) for width in getattr(self.head, "widths", [])]
        arrays = [np.asarray(block, dtype=np.float32) for block in blocks] if isinstance(blocks, list) else []
        if len(arrays) != len(widths) or any(
            a.ndim != 2 or a.shape[1] != w for a, w in zip(arrays, widths, strict=True)
        ):
            raise InputError(
                f"this stacked probe reads a list of {len(widths)} matrices, one per layer {self.spec.layers}, "
                f"of {widths} columns",
                "pass one matrix per stacked layer (pooling " + self.pooling + ")",
            )
        return arrays

    def predict_features(self, X: Any) -> np.ndarray:
        """Predicted class names (or values) of precomputed feature rows."""
        codes = self.head.predict_codes(self._checked(X))
        if self.classes is None:
            return codes
        return np.asarray(self.classes, dtype=object)[codes]

    def predict_proba_features(self, X: Any) -> np.ndarray:
        """Class probabilities ``(n, k)`` of precomputed feature rows (columns in ``classes`` order)."""
        self._require_proba()
        return self.head.proba(self._checked(X))

    def scores_features(self, X: Any) -> np.ndarray:
        """Class scores (margins for svm) or values of precomputed feature rows."""
        return self.head.scores(self._checked(X))

    def _require_proba(self) -> None:
        if self.classes is None:
            raise InputError("a regression probe predicts values, not probabilities", "use predict")
        if not self.head.has_proba:
            raise InputError(
                f"the {self.head.classifier} head gives margins, not probabilities",
                "use predict, or fit with --classifier logreg or mlp",
            )

    # -- texts -------------------------------------------------------------------------------
    def embed_options(self) -> dict:
        """The keywords of ``featx.extraction.embed`` that reproduce the stored features."""
        x = self.extraction
        options = {
            "model": x.get("model_path") or x.get("model"),
            "layers": sorted(set(self.spec.layers)),
            "poolings": [self.pooling],
            "max_length": x.get("max_length"),
            "dtype": x.get("option_dtype") or x.get("compute_dtype"),
            "store_dtype": x.get("store_dtype"),
        }
        if x.get("long_inputs"):
            options["long"] = x["long_inputs"]
        if x.get("stride") is not None:
            options["stride"] = x["stride"]
        if x.get("pair_mode"):
            options["pair_mode"] = x["pair_mode"]
        return options

    def features(self, texts: Any, text_pairs: Any = None, **overrides: Any) -> Any:
        """The feature matrix of ``texts`` (and their pairs), computed as ``featx extract`` stored it."""
        from ..extraction import embed
        from .model_ref import check_model, model_folder

        texts = list(texts)
        if not texts:
            raise InputError("no texts to predict", "pass at least one text")
        if self.extraction.get("pair_mode") and text_pairs is None:
            raise InputError("this probe was fitted on sentence pairs", "pass text_pairs= (the second texts)")
        folder = model_folder(self.extraction)
        if folder is not None:
            check_model(self.extraction, folder)
        options = {**self.embed_options(), **overrides}
        if folder is not None and "model" not in overrides:
            options["model"] = str(folder)
        pairs = None if text_pairs is None else list(text_pairs)
        embeddings = embed(texts, text_pairs=pairs, **options) if pairs is not None else embed(texts, **options)
        return embedded_matrix(
            embeddings, self.spec.layers, self.spec.kind, self.pooling, self.extraction.get("pair_mode")
        )

    def predict(self, texts: Any, text_pairs: Any = None, **overrides: Any) -> np.ndarray:
        """Predicted class names (or values) of ``texts``."""
        return self.predict_features(self.features(texts, text_pairs, **overrides))

    def predict_proba(self, texts: Any, text_pairs: Any = None, **overrides: Any) -> np.ndarray:
        """Class probabilities of ``texts`` (columns in ``classes`` order)."""
        self._require_proba()
        return self.predict_proba_features(self.features(texts, text_pairs, **overrides))

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write this probe as a bundle folder (``bundle.write_bundle``)."""
        from .bundle import write_bundle

        self.path = write_bundle(self, Path(path), overwrite=overwrite)
        return self.path


__all__ = ["Probe"]

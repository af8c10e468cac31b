"""A ``featx fit`` bundle's linear directions in the model's own feature space, per layer: what ``--intervene
project|mean|steer`` edits along and what ``featx directions`` exports (``featx.deploy.directions``).

A linear head scores ``((x - mean) / scale) @ coef + intercept``; in the raw (unstandardised) space of the
features its class ``k`` reads ``x @ (coef[:, k] / scale)``, so ``coef[:, k] / scale`` is class ``k``'s
*direction* there and ``mean`` the training rows' mean of those features (the head's scaler was fitted on
the training rows only). A concatenation of layers splits into each layer's block of rows; a stack has one
head per layer. Logreg and svm heads (classification) and ridge heads (one direction, the regression's);
an mlp head has no linear direction.

The direction *toward* class ``c`` is ``w_c - mean of the other classes' w_k``: the change of ``x`` that
raises class ``c``'s score over the others' average most per unit length (for two classes, ``w_1 - w_0``).

The bundle is read here from its two files (the extraction cannot import ``featx.deploy``, which builds on it):
``manifest.json`` as JSON, ``weights.safetensors`` as safetensors (never unpickled), its sha256 checked against
the manifest's record, the arrays' names, shapes and values checked before use.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...bundle_fields import FIELDS, REFIT_HINT
from ...errors import InputError
from ...json_fields import shown
from ...safe_files import loads_json

MANIFEST, WEIGHTS = "manifest.json", "weights.safetensors"
MAX_MANIFEST_BYTES = 8 << 20
LINEAR = ("logreg", "svm", "ridge")


@dataclass(frozen=True)
class LayerDirections:
    """One layer's raw-space class directions ``(d, k)`` (columns in the head's class order) and the training
    mean ``(d,)`` of that layer's features."""

    layer: int
    directions: np.ndarray
    mean: np.ndarray

    def toward(self, column: int) -> np.ndarray:
        """The unit direction toward class ``column`` (see the module docstring)."""
        w = self.directions
        others = np.delete(w, column, axis=1)
        vector = w[:, column] - (others.mean(axis=1) if others.shape[1] else 0.0)
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise InputError(
                f"the probe's direction toward class column {column} at layer {self.layer} is zero",
                "steer with another class or another bundle",
            )
        return vector / norm


@dataclass(frozen=True)
class BundleDirections:
    """What a bundle says about its directions: its manifest (model, label, classes, layer spec...) and each
    layer's ``LayerDirections``."""

    folder: Path
    manifest: dict
    layers: dict[int, LayerDirections]

    @property
    def classes(self) -> list[str] | None:
        classes = self.manifest.get("classes")
        return [str(name) for name in classes] if isinstance(classes, list) else None

    @property
    def extraction(self) -> dict:
        extraction = self.manifest.get("extraction")
        return extraction if isinstance(extraction, dict) else {}


def known_class(classes: list | None, target: str, asked: str, bundle) -> int:
    """The position of class ``target`` among a bundle's ``classes`` (None: a regression probe), else the one
    ``InputError`` that ``--intervene steer`` and ``featx intervene --toward`` give (``asked``: the option as
    the user wrote it)."""
    if classes is None or target not in classes:
        known = "none: it is a regression probe" if classes is None else ", ".join(map(str, classes))
        raise InputError(
            f"{asked}: bundle {bundle} does not know class '{target}' (its classes: {known})",
            "steer toward one of the bundle's classes",
        )
    return list(classes).index(target)


def split_layers(kind: str, layers: list[int], parts: list[tuple]) -> dict[int, LayerDirections]:
    """Per-layer directions from a head's ``(mean, scale, coef)`` parts: one part per layer for a stack, else one
    part whose rows are the layers' blocks in order."""
    if kind == "stack":
        pieces = [(layer, part, slice(None)) for layer, part in zip(layers, parts, strict=True)]
    else:
        width = len(parts[0][0]) // len(layers)
        pieces = [(layer, parts[0], slice(i * width, (i + 1) * width)) for i, layer in enumerate(layers)]
    out = {}
    for layer, (mean, scale, coef), rows in pieces:
        coef = np.asarray(coef, np.float64)
        coef = coef[:, None] if coef.ndim == 1 else coef
        scale = np.asarray(scale, np.float64)[rows]
        out[int(layer)] = LayerDirections(int(layer), coef[rows] / scale[:, None], np.asarray(mean, np.float64)[rows])
    return out


def _bad(folder: Path, what: str) -> InputError:
    return InputError(f"bundle {folder}: {what}", REFIT_HINT)


def _manifest(folder: Path) -> dict:
    from ...safe_files import NotARegularFile, read_small_text

    try:
        manifest = loads_json(read_small_text(folder / MANIFEST, MAX_MANIFEST_BYTES))
    except (NotARegularFile, OSError, UnicodeDecodeError, ValueError) as err:
        raise _bad(folder, f"{MANIFEST} cannot be read ({err})") from None
    spec = manifest.get("layer_spec") if isinstance(manifest, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("layers"), list) or not spec["layers"]:
        raise _bad(folder, f"{MANIFEST} has no layer spec")
    FIELDS.check(manifest, f"bundle {folder}", REFIT_HINT)  # as featx.load does
    if manifest.get("level") == "arc":
        raise InputError(
            f"bundle {folder}: an arc probe reads [h_head, h_dep, h_head * h_dep] of word pairs, which is no "
            "direction in a layer's space",
            "use the bundle of a sentence or word label",
        )
    extraction = manifest.get("extraction")
    if isinstance(extraction, dict) and extraction.get("pair_mode") == "separate":
        raise InputError(
            f"bundle {folder}: a probe of sentence pairs encoded separately reads [u, v, |u-v|, u*v] of the two "
            "texts' vectors, which is no direction in a layer's space",
            "use the bundle of single texts, or of pairs encoded together (extract --pair-mode cross)",
        )
    if manifest.get("classifier") not in LINEAR:
        raise InputError(
            f"bundle {folder}: its {manifest.get('classifier')} head has no linear directions",
            "fit a linear probe: featx fit ... --classifier logreg (or svm, ridge)",
        )
    return manifest


def _weights(folder: Path, manifest: dict) -> dict[str, np.ndarray]:
    from safetensors import SafetensorError
    from safetensors.numpy import load

    record = (manifest.get("files") or {}).get(WEIGHTS) or {}
    try:
        descriptor = os.open(folder / WEIGHTS, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(descriptor, "rb") as handle:
            data = handle.read(int(record.get("bytes", 0)) + 1)
    except (OSError, TypeError, ValueError) as err:
        raise _bad(folder, f"{WEIGHTS} cannot be read ({err})") from None
    if hashlib.sha256(data).hexdigest() != record.get("sha256"):
        raise _bad(folder, f"{WEIGHTS} was changed after it was written (its sha256 differs from the manifest's)")
    try:
        arrays = load(data)
    except (SafetensorError, ValueError, TypeError, OverflowError):
        raise _bad(folder, f"{WEIGHTS} is not a safetensors file") from None
    if not all(np.all(np.isfinite(array)) for array in arrays.values()):
        raise _bad(folder, f"{WEIGHTS} holds NaN or infinite values")
    return arrays


def read_bundle_directions(path: str | Path) -> BundleDirections:
    """Every layer's directions of the bundle folder ``path`` (a linear head), its files checked first."""
    folder = Path(path)
    manifest = _manifest(folder)
    arrays = _weights(folder, manifest)
    kind, layers = manifest["layer_spec"].get("kind"), _layer_numbers(folder, manifest["layer_spec"])
    prefixes = [f"layer{i}." for i in range(len(layers))] if kind == "stack" else [""]
    names = [f"{prefix}{name}" for prefix in prefixes for name in ("mean", "scale", "coef")]
    missing = [name for name in names if name not in arrays]
    if missing:
        raise _bad(folder, f"{WEIGHTS} lacks {', '.join(missing)}")
    classes = manifest.get("classes")
    k = len(classes) if isinstance(classes, list) else 1
    parts = [_part(folder, arrays, prefix, k, 1 if kind == "stack" else len(layers)) for prefix in prefixes]
    return BundleDirections(folder, manifest, split_layers(str(kind), layers, parts))


def _layer_numbers(folder: Path, spec: dict) -> list[int]:
    """The layer spec's layers, numbers as featx fit writes them, of a kind it writes; else one line (the manifest
    is untrusted: ``int()`` of a text or an object would be a traceback)."""
    layers = spec["layers"]
    if not all(isinstance(layer, int) and not isinstance(layer, bool) and layer >= 0 for layer in layers):
        raise _bad(folder, f"{MANIFEST}'s layer spec: its layers {shown(layers)} are not layer numbers")
    if spec.get("kind") not in ("single", "cat", "stack"):
        raise _bad(folder, f"{MANIFEST}'s layer spec is of kind {shown(spec.get('kind'))}, not single, cat or stack")
    return [int(layer) for layer in layers]


def _part(folder: Path, arrays: dict[str, np.ndarray], prefix: str, k: int, n_layers: int) -> tuple[np.ndarray, ...]:
    """A head's ``(mean, scale, coef)`` (of one layer of a stack, ``prefix``), checked as untrusted: float arrays of
    shapes ``(d,)``, ``(d,)`` and ``(d, k)`` (``k`` the manifest's classes, 1 for a regression; a regression's coef
    may be ``(d,)``), ``d`` a whole number of ``n_layers`` blocks, every scale positive."""
    mean, scale, coef = (arrays[f"{prefix}{name}"] for name in ("mean", "scale", "coef"))
    d = mean.shape[0] if mean.ndim == 1 else 0
    wanted = {"mean": (d,), "scale": (d,), "coef": (d, k)}
    for name, array in (("mean", mean), ("scale", scale), ("coef", coef)):
        if array.dtype.kind != "f":
            raise _bad(folder, f"{WEIGHTS}'s array '{prefix}{name}' has dtype {array.dtype}, not a float")
        if array.shape != wanted[name] and not (name == "coef" and k == 1 and array.shape == (d,)):
            shape = str(wanted[name]) if d else "(d,) with d > 0"
            raise _bad(folder, f"{WEIGHTS}'s array '{prefix}{name}' has shape {array.shape}, not {shape}")
    if d % n_layers or np.any(scale <= 0):
        raise _bad(folder, "its scaler and coefficients do not fit together")
    return mean, scale, coef


__all__ = ["BundleDirections", "LayerDirections", "read_bundle_directions", "split_layers"]

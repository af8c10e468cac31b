"""A fitted probe's directions in the model's own feature space, per layer: what ``featx directions`` exports
for steering tools and what ``featx extract --intervene project|mean|steer`` edits along.

A linear head scores ``((x - mean) / scale) @ coef + intercept``; in the raw (unstandardised) space of the
features its class ``k`` reads ``x @ (coef[:, k] / scale)``, so ``coef[:, k] / scale`` is class ``k``'s
*direction* there and ``mean`` the training rows' mean of those features (the head's scaler was fitted on
the training rows only). A concatenation of layers splits into each layer's block of rows; a stack has one
head per layer. Logreg and svm heads (classification) and ridge heads (one direction, the regression's);
an mlp head has no linear direction.

The direction *toward* class ``c`` is ``w_c - mean of the other classes' w_k``: the change of ``x`` that
raises class ``c``'s score over the others' average most per unit length (for two classes, ``w_1 - w_0``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import InputError
from ..options import Check, Options, option


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


def _linear_parts(probe) -> list:
    head = probe.head
    parts = list(head.parts) if probe.spec.kind == "stack" else [head]
    if any(part.kind not in ("linear", "ridge") for part in parts):
        raise InputError(
            f"bundle {probe.path}: its {head.classifier} head has no linear directions",
            "fit a linear probe: featx fit ... --classifier logreg (or svm, ridge)",
        )
    return parts


def layer_directions(probe) -> dict[int, LayerDirections]:
    """Every layer's directions of a loaded probe (``featx.load``), keyed by layer."""
    parts = _linear_parts(probe)
    layers = list(probe.spec.layers)
    out: dict[int, LayerDirections] = {}
    if probe.spec.kind == "stack":
        pieces = [(layer, part, slice(None)) for layer, part in zip(layers, parts, strict=True)]
    else:
        width = parts[0].n_features // len(layers)
        pieces = [(layer, parts[0], slice(i * width, (i + 1) * width)) for i, layer in enumerate(layers)]
    for layer, part, rows in pieces:
        coef = np.asarray(part.weights["coef"], np.float64)
        coef = coef[:, None] if coef.ndim == 1 else coef
        scale = np.asarray(part.scale, np.float64)[rows]
        out[int(layer)] = LayerDirections(
            int(layer), coef[rows] / scale[:, None], np.asarray(part.mean, np.float64)[rows]
        )
    return out


def directions_arrays(probe) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The arrays and string metadata ``featx directions`` writes: ``layer.{L}.class.{C}`` (float32, the raw-space
    direction of class C, unnormalised), ``layer.{L}.toward.{C}`` (the unit direction toward C) and
    ``layer.{L}.mean`` (the training mean); a regression head's one direction is ``layer.{L}.value``."""
    import json

    classes = probe.classes
    arrays: dict[str, np.ndarray] = {}
    for layer, part in layer_directions(probe).items():
        arrays[f"layer.{layer}.mean"] = part.mean.astype(np.float32)
        if classes is None:
            arrays[f"layer.{layer}.value"] = part.directions[:, 0].astype(np.float32)
            continue
        for column, name in enumerate(classes):
            arrays[f"layer.{layer}.class.{name}"] = part.directions[:, column].astype(np.float32)
            arrays[f"layer.{layer}.toward.{name}"] = part.toward(column).astype(np.float32)
    metadata = {
        "format": "featx-directions",
        "model": str(probe.extraction.get("model")),
        "model_sha256": str(probe.extraction.get("model_sha256") or ""),
        "label": probe.label,
        "classes": json.dumps(classes),
        "layers": json.dumps([int(layer) for layer in probe.spec.layers]),
        "pooling": probe.pooling,
        "classifier": str(probe.head.classifier),
        "space": "raw features (the head's coef divided by its scaler's scale)",
    }
    return arrays, metadata


def _check_output(config: DirectionsConfig) -> None:
    output = Path(config.output) if config.output is not None else None
    if output is None or output.suffix != ".safetensors":
        raise InputError(f"-o {output} should end in .safetensors", "name the file, e.g. -o dirs.safetensors")
    if output.exists() and not config.overwrite:
        raise InputError(f"{output} exists", "pass --overwrite to replace it, or choose another path with -o")
    if not output.parent.is_dir():
        raise InputError(f"directory {output.parent} does not exist", "create it first, or choose another -o")


@dataclass(frozen=True)
class DirectionsConfig(Options):
    """Options of ``featx directions``: the bundle folder and the safetensors file written."""

    bundle: str | Path | None = None
    output: str | Path | None = option(
        None, flag=("-o", "--output"), help="The safetensors file to write (e.g. dirs.safetensors)."
    )
    overwrite: bool = option(False, flag="--overwrite", help="Replace an existing output file.")

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (_check_output,)


def export_directions(config: DirectionsConfig | str | Path, **options) -> Path:
    """Write a bundle's per-layer directions (``directions_arrays``) to a safetensors file; returns its path."""
    import os
    import tempfile

    from safetensors.numpy import save

    from ..safe_files import writing
    from .bundle import load

    config = DirectionsConfig.build(config, **options)
    output = Path(str(config.output))
    arrays, metadata = directions_arrays(load(str(config.bundle)))
    with writing(output.parent):
        descriptor, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(save(arrays, metadata=metadata))
            os.replace(tmp, output)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return output


__all__ = ["DirectionsConfig", "LayerDirections", "directions_arrays", "export_directions", "layer_directions"]

"""``featx directions``: a fitted bundle's per-layer linear directions written as safetensors, for steering tools.

The directions themselves (``coef[:, k] / scale`` per layer, the direction toward a class, the training mean)
are read by ``featx.extraction.read_bundle_directions``, the same reader ``featx extract --intervene`` edits
along (docs/interventions.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..checks import path_like
from ..errors import InputError
from ..options import Check, Options, keywords_of, on_command_line, option, spoken_value
from ..safe_files import output_hint


def directions_arrays(bundle) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The arrays and string metadata ``featx directions`` writes: ``layer.{L}.class.{C}`` (float32, the raw-space
    direction of class C, unnormalised), ``layer.{L}.toward.{C}`` (the unit direction toward C) and
    ``layer.{L}.mean`` (the training mean); a regression head's one direction is ``layer.{L}.value``."""
    import json

    classes = bundle.classes
    arrays: dict[str, np.ndarray] = {}
    for layer, part in bundle.layers.items():
        arrays[f"layer.{layer}.mean"] = part.mean.astype(np.float32)
        if classes is None:
            arrays[f"layer.{layer}.value"] = part.directions[:, 0].astype(np.float32)
            continue
        for column, name in enumerate(classes):
            arrays[f"layer.{layer}.class.{name}"] = part.directions[:, column].astype(np.float32)
            arrays[f"layer.{layer}.toward.{name}"] = part.toward(column).astype(np.float32)
    metadata = {
        "format": "featx-directions",
        "model": str(bundle.extraction.get("model")),
        "model_sha256": str(bundle.extraction.get("model_sha256") or ""),
        "label": str(bundle.manifest.get("label", "label")),
        "classes": json.dumps(classes),
        "layers": json.dumps(sorted(bundle.layers)),
        "pooling": str(bundle.manifest.get("pooling")),
        "classifier": str(bundle.manifest.get("classifier")),
        "space": "raw features (the head's coef divided by its scaler's scale)",
    }
    return arrays, metadata


def _check_output(config: DirectionsConfig) -> None:
    output = Path(config.output) if config.output is not None else None
    if output is None or output.suffix != ".safetensors":
        if on_command_line():
            raise InputError(f"-o {output} should end in .safetensors", "name the file, e.g. -o dirs.safetensors")
        given = spoken_value(config, "output", None if output is None else str(output))
        raise InputError(f"{given} should end in .safetensors", "name the file, e.g. output='dirs.safetensors'")
    if output.exists() and not config.overwrite:
        raise InputError(
            f"{output} exists", output_hint("pass --overwrite to replace it, or choose another path with -o")
        )
    if not output.parent.is_dir():
        raise InputError(
            f"directory {output.parent} does not exist", output_hint("create it first, or choose another -o")
        )


@dataclass(frozen=True)
class DirectionsConfig(Options):
    """Options of ``featx directions``: the bundle folder and the safetensors file written."""

    bundle: str | Path | None = None
    output: str | Path | None = option(
        None, flag=("-o", "--output"), group="Output", help="The safetensors file to write (e.g. dirs.safetensors)."
    )
    overwrite: bool = option(False, flag="--overwrite", group="Output", help="Replace an existing output file.")

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("bundle", "output"),
        _check_output,
    )


@keywords_of(DirectionsConfig)  # from Python, a message names the keyword given (output='x'), the CLI the flag
def export_directions(config: DirectionsConfig | str | Path, **options) -> Path:
    """Write a bundle's per-layer directions (``directions_arrays``) to a safetensors file; returns its path."""
    from safetensors.numpy import save

    from ..extraction import read_bundle_directions
    from ..safe_files import atomic_write, writing

    config = DirectionsConfig.build(config, **options)
    output = Path(str(config.output))
    arrays, metadata = directions_arrays(read_bundle_directions(str(config.bundle)))
    with writing(output.parent):
        atomic_write(output, lambda handle: handle.write(save(arrays, metadata=metadata)))
    return output


__all__ = ["DirectionsConfig", "directions_arrays", "export_directions"]

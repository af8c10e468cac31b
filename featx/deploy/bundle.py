"""The bundle: a folder ``model.featx/`` holding ``manifest.json`` (what the probe is, how its features were
made, the sha256 of every other file) and ``weights.safetensors`` (the scaler and the head's arrays).

Written into a fresh temporary folder beside the target (``mkdtemp``: a new name, mode 0700, never a planted
link) and renamed into place; an existing bundle is replaced only with ``overwrite``, and a link at the target
is never followed. Read by ``load``, which checks everything (``checks``) before anything is used; nothing is
ever unpickled: the arrays are safetensors, the rest JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import InputError
from ..safe_files import NotARegularFile, is_bundle_folder, output_hint, refuse_replacing
from . import checks
from .probe import Probe

MANIFEST, WEIGHTS = checks.MANIFEST, checks.WEIGHTS


def _schema(info: dict) -> int:
    """3: a head selector whose heads are decoded as trees; 2: one with offset buckets; 1 every other bundle (the
    oldest schema that can say what it holds: an earlier featx, which would read it wrong, refuses it as newer)."""
    return 3 if "head_decode" in info else 2 if "offset_buckets" in info else 1


def manifest_of(probe: Probe, weights_sha256: str, weights_bytes: int) -> dict:
    """The manifest of ``probe`` whose weights file has this digest and size."""
    head: Any = probe.head
    return {
        **{key: value for key, value in probe.info.items() if key not in checks.OWN_KEYS},
        "format": checks.FORMAT,
        "schema_version": _schema(probe.info),
        "featx_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "task": probe.task,
        "classes": head.classes,
        "layer_spec": {"kind": probe.spec.kind, "layers": list(probe.spec.layers), "name": probe.spec.name},
        "pooling": probe.pooling,
        "classifier": head.classifier,
        "C" if head.classifier != "ridge" else "alpha": head.C if math.isfinite(head.C) else None,
        "n_features": head.n_features,
        **({"widths": head.widths, "layer_cs": [part.C for part in head.parts]} if probe.spec.kind == "stack" else {}),
        "arrays": {name: list(array.shape) for name, array in checks.arrays_of(head).items()},
        "extraction": probe.extraction,
        "files": {WEIGHTS: {"sha256": weights_sha256, "bytes": weights_bytes}},
    }


def _write_new(folder: Path, name: str, data: bytes) -> None:
    """A new file in a folder featx just made (never through a link)."""
    descriptor = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def write_bundle(probe: Probe, target: Path, overwrite: bool = False) -> Path:
    """Write ``probe`` to the bundle folder ``target`` atomically; returns ``target``. (A loaded or refitted
    probe is saved the same way: ``write_bundle(featx.load("a.featx"), Path("b.featx"))``.)"""
    from safetensors.numpy import save

    target = Path(target)
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise InputError(f"{target} exists and is not a bundle folder", output_hint("choose another -o path"))
    refuse_replacing(target, overwrite, "probe bundle", is_bundle_folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    manifest = manifest_of(probe, "", 0)  # its content, digested into the weights file; then the weights' digest
    arrays = {name: array for name, array in checks.arrays_of(probe.head).items()}
    data = save(arrays, metadata={checks.MANIFEST_DIGEST: checks.manifest_digest(manifest)})
    manifest["files"] = {WEIGHTS: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}}
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        _write_new(staging, WEIGHTS, data)
        _write_new(staging, MANIFEST, json.dumps(manifest, indent=2, allow_nan=False).encode("utf-8"))
        os.chmod(staging, 0o755 & ~_umask())
        _replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _replace(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``; an old bundle there is moved aside first, then removed."""
    if not target.exists():
        os.rename(staging, target)
        return
    aside = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
    os.rename(target, aside / "bundle")
    os.rename(staging, target)
    shutil.rmtree(aside, ignore_errors=True)


def _strength(manifest: dict) -> float:
    """The C (or ridge alpha) the manifest records; NaN when none (mlp) or not a number."""
    value = manifest.get("alpha" if manifest["classifier"] == "ridge" else "C")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("nan")


def _head(manifest: dict, arrays: dict):
    """The head of a checked manifest and its checked arrays (a stack: per-layer heads and the meta head)."""
    from .head import ARRAYS, Head
    from .stack import META_C, StackHead

    classifier, classes = manifest["classifier"], manifest["classes"]
    if manifest["layer_spec"]["kind"] != "stack":
        return Head(classifier, arrays.pop("mean"), arrays.pop("scale"), arrays, classes, _strength(manifest))

    def part(prefix: str, name: str, strength: float) -> Head:
        weights = {key: arrays[f"{prefix}.{key}"] for key in ARRAYS["linear"]}
        return Head(name, arrays[f"{prefix}.mean"], arrays[f"{prefix}.scale"], weights, classes, strength)

    strengths = manifest.get("layer_cs") or [float("nan")] * len(manifest["widths"])
    parts = [part(f"layer{i}", classifier, float(c)) for i, c in enumerate(strengths)]
    return StackHead(parts, part("meta", "logreg", META_C))


def load(path: str | os.PathLike) -> Probe:
    """The probe saved in the bundle folder ``path``, every file checked first (``checks``)."""
    from ..safe_files import read_small_text

    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"featx.load takes a bundle folder's path, not a {type(path).__name__}", checks.FOLDER_HINT)
    folder = checks.bundle_folder(Path(path))
    try:
        text = read_small_text(folder / MANIFEST, checks.MAX_MANIFEST_BYTES)
    except (NotARegularFile, OSError, UnicodeDecodeError) as err:
        raise InputError(f"{folder}/{MANIFEST} cannot be read: {err}", checks.REFIT_HINT) from None
    manifest = checks.check_manifest(checks.parse_manifest(text, folder), folder)
    arrays = checks.read_weights(folder, manifest)
    head = _head(manifest, arrays)
    info = {key: value for key, value in manifest.items() if key not in checks.OWN_KEYS}
    info["weights_sha256"] = manifest["files"][WEIGHTS]["sha256"]
    spec = checks.layer_spec(manifest)
    probe = Probe(head, spec, manifest["pooling"], dict(manifest["extraction"]), info, folder)
    with probe.bundle_settings({}):  # a refusal of the recorded model said as the bundle's field
        checks.check_model_now(probe.extraction)
    return probe


__all__ = ["MANIFEST", "WEIGHTS", "load", "manifest_of", "write_bundle"]

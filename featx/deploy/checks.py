"""The checks a bundle passes before ``load`` uses anything in it: a real folder (no links) holding exactly
``manifest.json`` and ``weights.safetensors`` (never a pickle or ``.npy``), a manifest of a known schema with
sane, consistent fields, weights whose sha256 is the manifest's, of float dtypes, finite, with the shapes
the manifest and the head need, and (when the model is on this machine) the same model weights and tokenizer.

Every failure is one ``InputError`` naming the bundle and what is wrong."""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from ..bundle_fields import FIELDS, REFIT_HINT
from ..errors import InputError
from ..json_fields import shown
from ..safe_files import NESTED, loads_json
from ..selection import POOLINGS, WORD_POOLINGS, LayerSpec
from .config import HEADS
from .extraction_checks import check_extraction
from .head import ARRAYS, KIND_OF

FORMAT = "featx-probe"
SCHEMA_VERSION = 3  # 3: a head selector decoding trees; 2: one with offset buckets; every other bundle is written as 1
MANIFEST, WEIGHTS = "manifest.json", "weights.safetensors"
MANIFEST_DIGEST = "featx_manifest_sha256"  # the key of the manifest's digest in the weights file's metadata
MAX_MANIFEST_BYTES = 8 << 20
MAX_WEIGHTS_BYTES = 4 << 30
MAX_FEATURES = 1 << 21  # columns a head may read (a cat of many wide layers, SentEval pairs)
MAX_CLASSES = 10_000
MAX_HIDDEN = 1 << 16
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".npy", ".npz", ".pt", ".pth", ".bin", ".ckpt")
# The manifest keys ``manifest_of`` writes itself; the others are the probe's ``info``.
OWN_KEYS = (
    "format", "schema_version", "task", "classes", "layer_spec", "pooling", "classifier", "C", "alpha",
    "n_features", "arrays", "extraction", "files", "weights_sha256",
)  # fmt: skip


def arrays_of(head: Any) -> dict[str, np.ndarray]:
    """The arrays a bundle stores for ``head``: the scaler, then its kind's weights (contiguous); a stack's
    per-layer heads as ``layer<i>.<name>`` and its meta head as ``meta.<name>``."""
    if head.kind == "stack":
        out = {}
        for prefix, part in [*((f"layer{i}", p) for i, p in enumerate(head.parts)), ("meta", head.meta)]:
            out.update({f"{prefix}.{name}": array for name, array in arrays_of(part).items()})
        return out
    names = ("mean", "scale", *ARRAYS[head.kind])
    values = {"mean": head.mean, "scale": head.scale, **head.weights}
    return {name: np.ascontiguousarray(values[name]) for name in names}


def _bad(folder: Path, what: str, hint: str = REFIT_HINT) -> InputError:
    return InputError(f"bundle {folder}: {what}", hint)


FOLDER_HINT = "give the folder featx fit wrote (-o model.featx)"


def bundle_folder(path: Path) -> Path:
    """``path`` if it is a real folder holding exactly a bundle's files (as regular files, not links)."""
    try:
        info = os.lstat(path)
    except OSError:
        raise InputError(f"bundle {path} does not exist", FOLDER_HINT) from None
    if stat.S_ISLNK(info.st_mode):
        raise _bad(path, "is a symbolic link; featx reads bundles only from real folders", "pass the real folder")
    if not stat.S_ISDIR(info.st_mode):
        raise _bad(path, "is not a folder (a bundle is the folder featx fit writes)", "pass the bundle folder")
    names = sorted(os.listdir(path))
    for name in names:
        if name.lower().endswith(PICKLE_SUFFIXES):
            raise _bad(
                path, f"holds {name}: a pickle or numpy file, which featx never loads", "remove it, or fit again"
            )
        if name not in (MANIFEST, WEIGHTS):
            raise _bad(path, f"holds an unexpected file '{name}' (a bundle has {MANIFEST} and {WEIGHTS} only)")
    for name in (MANIFEST, WEIGHTS):
        if name not in names:
            raise _bad(path, f"has no {name}: it is not a complete featx bundle")
        mode = os.lstat(path / name).st_mode
        if not stat.S_ISREG(mode):
            raise _bad(path, f"{name} is {'a symbolic link' if stat.S_ISLNK(mode) else 'not a regular file'}")
    return path


def parse_manifest(text: str, folder: Path) -> dict:
    try:
        manifest = loads_json(text)
    except ValueError as err:  # loads_json's: nested too deeply (json's RecursionError), half a surrogate pair
        why = getattr(err, "msg", str(err))
        said = f"is {NESTED}" if why == NESTED else f"is not valid JSON ({why})"
        raise _bad(folder, f"{MANIFEST} {said}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _bad(folder, f"{MANIFEST} is not a featx probe manifest")
    return manifest


def _check_schema(manifest: dict, folder: Path) -> None:
    version = manifest.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(folder, f"unknown bundle schema {version!r}")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"bundle {folder} was made by a newer featx (schema {version}); this featx reads schema {SCHEMA_VERSION}",
            "upgrade featx: pip install -U featx",
        )


def _is_whole(value, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _check_fields(manifest: dict, folder: Path) -> None:
    FIELDS.check(manifest, f"bundle {folder}", REFIT_HINT)  # each field's JSON type, then their values
    classifier, task, classes = manifest.get("classifier"), manifest.get("task"), manifest.get("classes")
    if classifier not in HEADS:
        raise _bad(folder, f"unknown classifier {classifier!r}")
    if task not in ("classification", "regression") or (task == "regression") != (classifier == "ridge"):
        raise _bad(folder, f"task {task!r} does not fit the {classifier} head")
    if task == "classification":
        if not isinstance(classes, list) or not all(isinstance(name, str) for name in classes):
            raise _bad(folder, "its class names are not a list of strings")
        if not 2 <= len(classes) <= MAX_CLASSES or len(set(classes)) != len(classes):
            raise _bad(folder, f"{len(classes)} class names (at least 2, at most {MAX_CLASSES:,}, no repeats)")
    elif classes is not None:
        raise _bad(folder, "a regression bundle lists class names")
    if not _is_whole(manifest.get("n_features"), 1, MAX_FEATURES):
        raise _bad(folder, f"n_features {manifest.get('n_features')!r} is not a whole number in 1..{MAX_FEATURES:,}")
    if not isinstance(manifest.get("extraction"), dict):
        raise _bad(folder, "its extraction settings are missing")
    _check_array_shapes(manifest.get("arrays"), folder)
    check_extraction(manifest["extraction"], folder)
    spec, level = layer_spec(manifest, folder), manifest.get("level", "sentence")
    if level != "arc" and "arcs" in manifest:
        raise _bad(folder, f"a {level} probe with an arcs field")
    if level in ("word", "arc"):
        _check_word_fields(manifest, spec, folder)
        if level == "arc":
            _check_arc_fields(manifest, folder)
        return
    if level != "sentence":
        raise _bad(folder, f"unknown level {level!r} (sentence, word or arc)")
    pooling = manifest.get("pooling")
    if not isinstance(pooling, str) or not (
        pooling in (*POOLINGS, "at") or pooling.startswith(("mean_", "cls_", "span"))
    ):
        raise _bad(folder, f"unknown pooling {pooling!r}")


def _check_word_fields(manifest: dict, spec: LayerSpec, folder: Path) -> None:
    """A word probe: classes, one layer, a word pooling (the subword(s) that make a word's vector)."""
    if manifest.get("pooling") not in WORD_POOLINGS:
        raise _bad(folder, f"unknown word pooling {manifest.get('pooling')!r} ({', '.join(WORD_POOLINGS)})")
    if spec.kind != "single" or manifest.get("task") != "classification":
        raise _bad(folder, "a word probe reads one layer and predicts classes")


def _check_arc_fields(manifest: dict, folder: Path) -> None:
    """An arc probe reads ``[h_head, h_dep, h_head * h_dep]`` (three word vectors' widths); a head selector scores
    pairs as arcs or not (classes no-arc, arc)."""
    arcs = manifest.get("arcs")
    if arcs not in ("relation", "head"):
        raise _bad(folder, f"unknown arcs {shown(arcs)} (relation or head)")
    bounds = manifest.get("offset_buckets")  # a head selector's since schema 2; absent in those of an earlier featx
    if bounds is not None:
        _check_offset_buckets(manifest, bounds, folder)
    elif manifest["n_features"] % 3:
        raise _bad(folder, f"n_features {manifest['n_features']} is not three word vectors' widths (an arc probe)")
    decode = manifest.get("head_decode")  # since schema 3: a head selector with offset buckets decoding trees
    if decode is not None and (decode != "tree" or bounds is None):
        raise _bad(folder, f"its head_decode {shown(decode)} is not a head selector's decoding of its trees (tree)")
    if arcs == "head" and manifest.get("classes") != ["no-arc", "arc"]:
        raise _bad(folder, "a head selector's classes are no-arc and arc")
    baselines = manifest.get("head_baselines")  # absent in the head selectors of an earlier featx
    if baselines is not None and (
        arcs != "head"
        or not isinstance(baselines, dict)
        or baselines.get("side") not in ("left", "right")
        or not isinstance(baselines.get("offsets"), list)
        or len(baselines["offsets"]) > MAX_FEATURES
        or not all(_is_whole(offset, -MAX_FEATURES, MAX_FEATURES) for offset in baselines["offsets"])
    ):
        raise _bad(folder, f"its head_baselines {shown(baselines)} are not a head selector's offsets and side")


def _check_offset_buckets(manifest: dict, bounds: Any, folder: Path) -> None:
    """A head selector's offset buckets: increasing whole numbers from 1, and ``n_features`` seven word vectors'
    widths plus a bucket each (``arc_select.selector_features``) of a logreg head."""
    listed = isinstance(bounds, list) and 1 <= len(bounds) <= 64 and all(_is_whole(b, 1, MAX_FEATURES) for b in bounds)
    selector = manifest.get("arcs") == "head" and manifest.get("classifier") == "logreg"
    if not listed or not selector or bounds != sorted(set(bounds)):
        raise _bad(folder, f"its offset_buckets {shown(bounds)} are not a logreg head selector's |offset| bounds")
    width = manifest["n_features"] - (2 * len(bounds) + 1)
    if width < 7 or width % 7:
        raise _bad(folder, f"n_features {manifest['n_features']} is not a head selector's pair features")


def _check_array_shapes(arrays: Any, folder: Path) -> None:
    """``arrays``: each array's name and its shape, a non-empty list of whole numbers (an mlp's hidden width is
    read from it)."""
    if not isinstance(arrays, dict) or not all(
        isinstance(shape, list) and shape and all(_is_whole(n, 1, MAX_FEATURES) for n in shape)
        for shape in arrays.values()
    ):
        raise _bad(folder, f"its arrays field {shown(arrays)} is not each array's name and shape")


def layer_spec(manifest: dict, folder: Path | None = None) -> LayerSpec:
    """The manifest's layer spec (checked: a single layer or a concatenation of layers 0..4096)."""
    spec = manifest.get("layer_spec")
    layers = spec.get("layers") if isinstance(spec, dict) else None
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if (
        kind not in ("single", "cat", "stack")
        or not isinstance(layers, list)
        or not 1 <= len(layers) <= 4096
        or not all(_is_whole(layer, 0, 4096) for layer in layers)
        or (kind == "single" and len(layers) != 1)
    ):
        raise _bad(folder or Path("?"), f"its layer spec {spec!r} is not a layer or a cat(...) of layers")
    assert isinstance(kind, str) and isinstance(layers, list)
    return LayerSpec(kind, tuple(layers))


def check_manifest(manifest: dict, folder: Path) -> dict:
    """The manifest, once its schema and fields are known to be sane."""
    _check_schema(manifest, folder)
    _check_fields(manifest, folder)
    record = manifest.get("files", {}).get(WEIGHTS) if isinstance(manifest.get("files"), dict) else None
    digest = record.get("sha256") if isinstance(record, dict) else None
    size = record.get("bytes") if isinstance(record, dict) else None
    if not isinstance(digest, str) or not _is_whole(size, 1, MAX_WEIGHTS_BYTES):
        raise _bad(folder, f"its manifest does not record the sha256 and size of {WEIGHTS}")
    return manifest


def _stack_shapes(manifest: dict, k: int) -> dict[str, tuple[int, ...]]:
    widths, layers = manifest.get("widths"), manifest["layer_spec"]["layers"]
    if (
        not isinstance(widths, list)
        or len(widths) != len(layers)
        or not all(_is_whole(w, 1, MAX_FEATURES) for w in widths)
    ):
        raise InputError("its stack's per-layer widths are missing or do not match its layers", REFIT_HINT)
    if manifest["classifier"] not in ("logreg", "svm") or sum(widths) != manifest["n_features"]:
        raise InputError("its stack is not of linear probes of n_features columns", REFIT_HINT)
    _check_layer_cs(manifest.get("layer_cs"), len(widths))
    shapes: dict[str, tuple[int, ...]] = {}
    for i, width in enumerate([*widths, len(widths) * k]):
        prefix = f"layer{i}" if i < len(widths) else "meta"
        shapes.update({f"{prefix}.mean": (width,), f"{prefix}.scale": (width,)})
        shapes.update({f"{prefix}.coef": (width, k), f"{prefix}.intercept": (k,)})
    return shapes


def _check_layer_cs(strengths: Any, n_layers: int) -> None:
    """A stack's ``layer_cs``, each layer's probe's C (absent in a hand-made bundle): one number above 0 per layer,
    else the stack would be built of fewer parts than its layers."""
    if strengths is None:
        return
    if (
        not isinstance(strengths, list)
        or len(strengths) != n_layers
        or not all(
            isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c > 0 for c in strengths
        )
    ):
        raise InputError(f"its stack's layer_cs {shown(strengths)} is not one C above 0 per layer", REFIT_HINT)


def expected_shapes(manifest: dict) -> dict[str, tuple[int, ...]]:
    """The shape of every array the manifest's head needs (an mlp's hidden width from its own arrays)."""
    d = manifest["n_features"]
    k = 1 if manifest["classes"] is None else len(manifest["classes"])
    if manifest["layer_spec"]["kind"] == "stack":
        return _stack_shapes(manifest, k)
    shapes: dict[str, tuple[int, ...]] = {"mean": (d,), "scale": (d,)}
    if KIND_OF[manifest["classifier"]] == "mlp":
        hidden = (manifest.get("arrays") or {}).get("b1", [0])[0]
        return {**shapes, "w1": (d, hidden), "b1": (hidden,), "w2": (hidden, k), "b2": (k,)}
    return {**shapes, "coef": (d, k), "intercept": (k,)}


def _read_bytes(folder: Path, manifest: dict) -> bytes:
    record = manifest["files"][WEIGHTS]
    descriptor = os.open(folder / WEIGHTS, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as handle:
        if os.fstat(handle.fileno()).st_size != record["bytes"]:
            raise _bad(folder, f"{WEIGHTS} was changed after it was written (its size differs from the manifest's)")
        data = handle.read(record["bytes"] + 1)
    if hashlib.sha256(data).hexdigest() != record["sha256"]:
        raise _bad(folder, f"{WEIGHTS} was changed after it was written (its sha256 differs from the manifest's)")
    return data


def manifest_digest(manifest: dict) -> str:
    """The sha256 of the manifest's content, all but its ``files`` record (which holds the weights' own digest),
    as canonical JSON: written into the weights file's metadata, so that an edited manifest is noticed."""
    body = {key: value for key, value in manifest.items() if key != "files"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def _weights_metadata(data: bytes) -> dict:
    """The ``__metadata__`` of a safetensors file's header (strings only); empty when it has none."""
    try:
        length = int.from_bytes(data[:8], "little")
        metadata = json.loads(data[8 : 8 + length]).get("__metadata__") or {}
    except (ValueError, RecursionError, AttributeError):
        return {}
    return metadata if isinstance(metadata, dict) else {}


def _check_digest(folder: Path, manifest: dict, data: bytes) -> None:
    """The manifest is the one written with these weights (a bundle written before featx recorded the digest
    has none to compare)."""
    recorded = _weights_metadata(data).get(MANIFEST_DIGEST)
    if recorded is not None and recorded != manifest_digest(manifest):
        raise _bad(
            folder, f"{MANIFEST} was changed after it was written (its content differs from the digest in {WEIGHTS})"
        )


def read_weights(folder: Path, manifest: dict) -> dict[str, np.ndarray]:
    """The head's arrays, after the digest, names, dtypes, shapes and values are checked."""
    from safetensors import SafetensorError
    from safetensors.numpy import load as load_safetensors

    data = _read_bytes(folder, manifest)
    try:
        arrays = load_safetensors(data)
    except (SafetensorError, ValueError, TypeError, OverflowError):
        raise _bad(folder, f"{WEIGHTS} is not a safetensors file") from None
    try:
        shapes = expected_shapes(manifest)
    except InputError as err:  # a stack's widths or layer_cs: said of the bundle, as every other refusal
        raise _bad(folder, err.message, err.hint or REFIT_HINT) from None
    if manifest["classifier"] == "mlp" and not 1 <= shapes["b1"][0] <= MAX_HIDDEN:
        raise _bad(folder, f"its mlp hidden width {shapes['b1'][0]} is out of range 1..{MAX_HIDDEN}")
    if sorted(arrays) != sorted(shapes):
        raise _bad(folder, f"{WEIGHTS} holds {', '.join(sorted(arrays))}; the head needs {', '.join(sorted(shapes))}")
    for name, shape in shapes.items():
        array = arrays[name]
        if array.dtype not in (np.float32, np.float64):
            raise _bad(folder, f"array '{name}' has dtype {array.dtype}; only float32 and float64 are read")
        if array.shape != shape:
            raise _bad(folder, f"array '{name}' has shape {array.shape}, the manifest needs {shape}")
        if not np.all(np.isfinite(array) | _never_predicted(manifest, name, array)):
            raise _bad(folder, f"array '{name}' holds NaN or infinite values")
    scaler = [name for name in shapes if name.endswith(("mean", "scale"))]
    if any(np.any(arrays[name] <= 0) for name in scaler if name.endswith("scale")):
        raise _bad(folder, "its scaler has a scale of zero or less")
    _check_digest(folder, manifest, data)
    return {name: arrays[name].astype(np.float32 if name in scaler else np.float64) for name in shapes}


def _never_predicted(manifest: dict, name: str, array: np.ndarray) -> np.ndarray:
    """Where ``array`` may hold minus infinity: the intercept of a class a linear classifier never saw in its
    training rows (``head.linear_weights``), so that it is never predicted; at least one class must be finite."""
    if manifest["classifier"] not in ("logreg", "svm") or not name.endswith("intercept"):
        return np.zeros(array.shape, dtype=bool)
    absent = np.isneginf(array)
    return absent if not absent.all() else np.zeros(array.shape, dtype=bool)


def check_model_now(extraction: dict) -> None:
    """The model's weights and tokenizer against the bundle's record, when the model is on this machine."""
    from .model_ref import check_model, model_folder

    folder = model_folder(extraction)
    if folder is not None:
        check_model(extraction, folder)


__all__ = [
    "FOLDER_HINT",
    "FORMAT",
    "MANIFEST",
    "MANIFEST_DIGEST",
    "MAX_MANIFEST_BYTES",
    "OWN_KEYS",
    "REFIT_HINT",
    "SCHEMA_VERSION",
    "WEIGHTS",
    "arrays_of",
    "bundle_folder",
    "check_manifest",
    "check_model_now",
    "manifest_digest",
    "expected_shapes",
    "layer_spec",
    "parse_manifest",
    "read_weights",
]

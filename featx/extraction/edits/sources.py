"""Each ``Intervention`` made into its arithmetic, an ``EditMap``, checked against the loaded model before any
forward pass: the layer exists, the source was made for this model, at this width, at this layer.

Every edit is one affine map of a state ``x`` (a ``(d,)`` vector per token):
``x' = x - ((x - mean) @ right.T) @ left.T + shift``, computed in float64 from float64 arrays here:

- ``erase``: the eraser's own ``mean``, ``left``, ``right`` (``featx.probing.analyses.erasure``);
- ``project``: ``left = U``, ``right = U.T``, ``mean = 0`` with ``U`` an orthonormal basis of the span of the
  bundle's class directions at layer L (centred over the classes: the span that changes its decision;
  ``directions.py``): the span's component is removed;
- ``mean``: the same with ``mean`` the bundle's training mean at L: the span's component is set to the mean's;
- ``steer``: ``shift = alpha * u``, ``u`` the unit direction toward the class: the bundle head's, or the
  class-mean difference of a features file's label (``class_mean_direction``);
- ``random``: ``left = Q``, ``right = Q.T``, ``mean = 0`` with ``Q`` RANK orthonormal columns drawn with the seed
  (``random:RANK@L``: no fitted mean, so uncentred, as ``project``); ``random:ERASERS@L``, the control of that
  eraser: ``Q`` of the eraser's rank and ``mean`` the eraser's own (the mean of the rows featx erase fitted it on),
  centred as the eraser is (``Q`` is drawn as featx erase draws its random control, so with the same seed they match).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...safe_files import NotARegularFile, loads_json, read_small_text
from .spec import Intervention

MAX_ERASE_JSON_BYTES = 64 << 20  # featx erase's .erase.json: its meta and one row per layer and pooling
MAX_ERASERS_BYTES = 16 << 30  # every eraser of an .erasers.npz, as declared by its zip entries

SVD_TOL = 1e-10  # singular values of the (scaled) class directions below this are not a direction


@dataclass(frozen=True)
class ModelInfo:
    """What the checks need of the loaded model: its name, weights sha256, width and stored layers (N + 1), and
    the width of each site inside its layers that an edit names (``inner.site_widths``)."""

    name: str
    weights_sha256: str
    hidden_size: int
    n_layers: int
    site_widths: dict[str, int] = field(default_factory=dict)

    def width(self, edit: Intervention) -> int:
        """The width of the states ``edit`` changes: the hidden size, or its site's."""
        if edit.site is None:
            return self.hidden_size
        if edit.site not in self.site_widths:
            raise InputError(
                f"--intervene {edit.kind}: featx does not know the width of site {edit.site} of {self.name}",
                "edit the layer's output (@L without a site)",
            )
        return self.site_widths[edit.site]


@dataclass(frozen=True)
class EditMap:
    """``x' = x - ((x - mean) @ right.T) @ left.T + shift`` at ``layer`` (float64 arrays)."""

    intervention: Intervention
    mean: np.ndarray  # (d,)
    left: np.ndarray  # (d, r)
    right: np.ndarray  # (r, d)
    shift: np.ndarray  # (d,)

    @property
    def layer(self) -> int:
        return self.intervention.layer

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The edit of ``(..., d)`` states, in numpy (float64)."""
        X = np.asarray(X, np.float64)
        return X - ((X - self.mean) @ self.right.T) @ self.left.T + self.shift


def _affine(edit: Intervention, d: int, basis=None, mean=None, shift=None) -> EditMap:
    basis = np.zeros((d, 0)) if basis is None else basis
    mean = np.zeros(d) if mean is None else np.asarray(mean, np.float64)
    shift = np.zeros(d) if shift is None else np.asarray(shift, np.float64)
    return EditMap(edit, mean, basis, basis.T.copy(), shift)


def _other_model(edit: Intervention, what: str, recorded: str | None, model: ModelInfo) -> InputError:
    return InputError(
        f"--intervene {edit.kind}: {what} {edit.source} was made for model {recorded}, not {model.name}",
        f"extract with --model {recorded}, or make the {what} from features of {model.name}",
    )


def _check_width(edit: Intervention, what: str, width: int, model: ModelInfo) -> None:
    wanted = model.width(edit)
    if width != wanted:
        raise InputError(
            f"--intervene {edit.kind}: {what} {edit.source} holds vectors of width {width}, but {model.name}'s "
            f"{edit.where} has width {wanted}",
            "use a file made from features of this model's "
            + ("hidden states" if edit.site is None else f"{edit.site} site at that layer"),
        )


def _erase_meta(path: Path, kind: str) -> dict:
    stem = path.name[: -len(".erasers.npz")] if path.name.endswith(".erasers.npz") else path.stem
    side = path.with_name(f"{stem}.erase.json")
    try:  # a regular file of bounded size: never a link's target, never a FIFO to block on
        meta = loads_json(read_small_text(side, MAX_ERASE_JSON_BYTES)).get("meta")
    except (OSError, ValueError, AttributeError, RecursionError):
        meta = None
    if not isinstance(meta, dict):
        raise InputError(
            f"--intervene {kind}: {side} (written by featx erase beside {path.name}) is missing or unreadable, so "
            "the model the erasers were fitted for is unknown",
            "keep the .erase.json beside the .erasers.npz, or run featx erase again",
        )
    return meta


def _read_erasers(path: Path, kind: str) -> dict[str, np.ndarray]:
    """The arrays of an erasers file (of ``--intervene KIND:``, erase or random, as the messages name it): a regular
    file (not a FIFO to block on), a zip of ``.npy`` arrays whose declared sizes are bounded before any is inflated,
    never unpickled."""
    try:
        if not path.is_file():
            raise NotARegularFile(f"{path} is not a regular file")
        with np.load(path) as data:  # allow_pickle is False by default: arrays only
            declared = sum(info.file_size for info in data.zip.infolist())
            if declared > MAX_ERASERS_BYTES:
                raise NotARegularFile(f"its arrays declare {declared:,} bytes, more than {MAX_ERASERS_BYTES:,}")
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError, AttributeError, zipfile.BadZipFile) as err:
        # numpy refuses a pickle (or an array of objects) and advises allow_pickle, which featx never gives
        why = "it holds pickled Python objects, which featx never loads" if "pickle" in str(err) else str(err)
        raise InputError(
            f"--intervene {kind}: {path} is not an erasers file of featx erase ({why})",
            "give the .erasers.npz that featx erase wrote",
        ) from None
    for name, array in arrays.items():  # a cast would drop an imaginary part, or read numbers out of texts
        if array.dtype.kind not in "fiub":
            raise InputError(
                f"--intervene {kind}: {path}'s {name} is an array of {array.dtype}, not of real numbers",
                "give the .erasers.npz that featx erase wrote",
            )
    return {name: np.asarray(array, np.float64) for name, array in arrays.items()}


def erase_map(edit: Intervention, model: ModelInfo) -> EditMap:
    """The eraser at ``edit.layer`` (and pooling) of a ``featx erase`` erasers file."""
    assert edit.source is not None
    meta = _erase_meta(edit.source, edit.kind)
    recorded_sha = meta.get("model_sha256")
    if (recorded_sha and recorded_sha != model.weights_sha256) or (
        not recorded_sha and meta.get("model") != model.name
    ):
        raise _other_model(edit, "erasers file", meta.get("model"), model)
    arrays = _read_erasers(edit.source, edit.kind)
    keys = sorted({name.rsplit("/", 1)[0] for name in arrays})
    at_layer = [key for key in keys if key.rsplit("/", 1)[-1] == str(edit.layer)]
    if edit.target is not None:
        at_layer = [key for key in at_layer if key.rsplit("/", 1)[0] == edit.target]
    if len(at_layer) != 1:
        have = ", ".join(keys) or "none"
        raise InputError(
            f"--intervene {edit.kind}: {edit.source} has "
            + ("no eraser" if not at_layer else "several erasers")
            + f" at layer {edit.layer}{f' for pooling {edit.target}' if edit.target else ''} (it has {have})",
            f"pick a layer it has, or name the pooling: {edit.kind}:FILE:POOLING@L",
        )
    mean, left, right = _eraser_arrays(edit, arrays, at_layer[0])
    _check_width(edit, "erasers file", len(mean), model)
    return EditMap(edit, mean, left, right, np.zeros(len(mean)))


def _eraser_arrays(edit: Intervention, arrays: dict[str, np.ndarray], key: str) -> tuple[np.ndarray, ...]:
    """The ``mean``, ``left`` and ``right`` of eraser ``key``, refused with one line unless they are all there, of
    shapes ``(d,)``, ``(d, r)`` and ``(r, d)``, and finite (the file is untrusted: a torch shape error mid-run, or
    inf and NaN in every state above the edit, otherwise)."""
    hint = "give the .erasers.npz that featx erase wrote, or run featx erase again"
    for name in ("mean", "left", "right"):
        if f"{key}/{name}" not in arrays:
            raise InputError(f"--intervene {edit.kind}: the eraser {key} of {edit.source} lacks its {name} array", hint)
    mean, left, right = (arrays[f"{key}/{name}"] for name in ("mean", "left", "right"))
    d = mean.shape[0] if mean.ndim == 1 else -1
    if left.ndim != 2 or right.ndim != 2 or left.shape[0] != d or right.shape != (left.shape[1], d):
        raise InputError(
            f"--intervene {edit.kind}: the eraser {key} of {edit.source} has arrays of shapes that do not fit "
            f"together: mean {mean.shape}, left {left.shape}, right {right.shape} (wanted (d,), (d, r), (r, d))",
            hint,
        )
    if not all(np.isfinite(values).all() for values in (mean, left, right)):
        raise InputError(f"--intervene {edit.kind}: the eraser {key} of {edit.source} holds inf or NaN", hint)
    return mean, left, right


def _bundle_layer(edit: Intervention, model: ModelInfo):
    from .directions import read_bundle_directions

    probe = read_bundle_directions(str(edit.source))
    recorded = probe.extraction.get("model_sha256")
    if recorded != model.weights_sha256:
        raise _other_model(edit, "bundle", probe.extraction.get("model"), model)
    layers = probe.layers
    if edit.layer not in layers:
        raise InputError(
            f"--intervene {edit.kind}: bundle {edit.source} reads layers {sorted(layers)}, not {edit.layer}",
            f"edit at a layer the bundle reads, e.g. @{min(layers)}, or fit a bundle at layer {edit.layer}",
        )
    part = layers[edit.layer]
    _check_width(edit, "bundle", part.directions.shape[0], model)
    return probe, part


def _span(directions: np.ndarray, classes) -> np.ndarray:
    """An orthonormal basis of the span of the class directions (centred over the classes)."""
    if classes is not None and directions.shape[1] > 1:
        directions = directions - directions.mean(axis=1, keepdims=True)
    u, s, _ = np.linalg.svd(directions, full_matrices=False)
    keep = s > SVD_TOL * max(float(s.max(initial=0.0)), 1e-300)
    return u[:, keep]


def bundle_map(edit: Intervention, model: ModelInfo) -> EditMap:
    """``project``, ``mean`` or ``steer`` along a ``featx fit`` bundle's directions at ``edit.layer``."""
    probe, part = _bundle_layer(edit, model)
    d = part.directions.shape[0]
    if edit.kind == "steer":
        from .directions import known_class

        assert edit.alpha is not None and edit.target is not None
        index = known_class(probe.classes, edit.target, "--intervene steer", edit.source)
        return _affine(edit, d, shift=edit.alpha * part.toward(index))
    basis = _span(part.directions, probe.classes)
    return _affine(edit, d, basis=basis, mean=part.mean if edit.kind == "mean" else None)


MEAN_POOLING = "mean"


def class_mean_direction(edit: Intervention, model: ModelInfo) -> np.ndarray:
    """The unit class-mean difference toward ``edit.target`` of a features file's ``edit.label`` at ``edit.layer``:
    the mean-pooled vectors of the training rows (the train split, spelt in any case, else every labelled row) of that
    class, minus those of the other classes."""
    from ... import store

    assert edit.source is not None  # parsed with its features file
    with store.open_features(edit.source) as features:
        if features.attrs.get("model_sha256") != model.weights_sha256:
            raise _other_model(edit, "features file", features.attrs.get("model"), model)
        if edit.label not in features.label_columns or edit.layer not in features.layers:
            raise InputError(
                f"--intervene steer: features file {edit.source} has no label '{edit.label}' at layer {edit.layer} "
                f"(labels: {', '.join(features.label_columns) or 'none'}; layers: {features.layers})",
                "name a label column and a layer the file holds",
            )
        if MEAN_POOLING not in features.poolings:
            raise InputError(
                f"--intervene steer: features file {edit.source} has no mean pooling",
                "extract it with --pooling mean (the class means are of mean-pooled vectors)",
            )
        codes, names = features.labels(edit.label), features.label_names(edit.label)
        split = features.split
        X = features.features(MEAN_POOLING, edit.layer, dtype=np.float64)
    if edit.target not in names:
        raise InputError(
            f"--intervene steer: label '{edit.label}' of {edit.source} has no class '{edit.target}' "
            f"(its classes: {', '.join(map(str, names))})",
            "steer toward one of the label's classes",
        )
    train = codes >= 0
    # The train split as the probes read it (``probing.split_parts``: case-blind), so that a split spelt TRAIN / TEST
    # never turns the direction into one of every labelled row, the test rows included.
    in_train = None if split is None else np.char.lower(np.asarray(split, dtype=str)) == "train"
    if in_train is not None and in_train.any():
        train &= in_train
    target = codes == names.index(edit.target)
    if not np.any(train & target) or not np.any(train & ~target):
        raise InputError(
            f"--intervene steer: the training rows of {edit.source} lack class '{edit.target}' or every other class",
            "use a label with training rows of several classes",
        )
    _check_width(edit, "features file", X.shape[1], model)
    vector = X[train & target].mean(axis=0) - X[train & ~target].mean(axis=0)
    return vector / max(float(np.linalg.norm(vector)), 1e-300)


def random_map(edit: Intervention, model: ModelInfo) -> EditMap:
    """RANK orthonormal directions drawn with the seed, removed: uncentred (``random:RANK@L``), or centred on an
    eraser's mean with its rank (``random:ERASERS@L``, the control of that eraser)."""
    d = model.width(edit)
    mean = None
    if edit.source is not None:
        eraser = erase_map(edit, model)
        rank, mean = int(eraser.left.shape[1]), eraser.mean
    else:
        assert edit.rank is not None
        rank = edit.rank
    if rank > d:
        what = "the model's width" if edit.site is None else f"the width of {model.name}'s {edit.where},"
        raise InputError(f"--intervene random: rank {rank} is more than {what} {d}", f"use a rank up to {d}")
    return _affine(edit, d, basis=random_basis(d, rank, edit.seed), mean=mean)


def random_basis(d: int, rank: int, seed: int | None) -> np.ndarray:
    """``rank`` orthonormal columns in ``d`` dimensions drawn with ``seed`` (featx erase's control draws the same)."""
    if rank == 0:
        return np.zeros((d, 0))
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((d, rank)))[0]


def check_layer(edit: Intervention, model: ModelInfo) -> None:
    if not 0 <= edit.layer < model.n_layers:
        raise InputError(
            f"--intervene {edit.kind}: layer {edit.layer} is outside {model.name}, whose layers are "
            f"0..{model.n_layers - 1}",
            f"edit at a layer from 0 (the embeddings) to {model.n_layers - 1}",
        )


def resolve_edits(edits: tuple[Intervention, ...], model: ModelInfo) -> tuple[EditMap, ...]:
    """Every edit's map, each checked against ``model`` (one line, ``InputError``, before any forward pass)."""
    maps = []
    for edit in edits:
        check_layer(edit, model)
        if edit.kind == "erase":
            maps.append(erase_map(edit, model))
        elif edit.kind == "random":
            maps.append(random_map(edit, model))
        elif edit.label is not None:  # steer along a features file's class-mean difference
            assert edit.alpha is not None
            direction = class_mean_direction(edit, model)
            maps.append(_affine(edit, len(direction), shift=edit.alpha * direction))
        else:
            maps.append(bundle_map(edit, model))
    return tuple(maps)


__all__ = [
    "EditMap",
    "ModelInfo",
    "bundle_map",
    "class_mean_direction",
    "check_layer",
    "erase_map",
    "random_basis",
    "random_map",
    "resolve_edits",
]

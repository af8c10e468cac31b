"""Each edit's arithmetic from its source (``featx/extraction/edits/sources.py``) and every source that does not
fit the model refused with one line: another model, another width, a layer it lacks, a layer outside the model,
an unknown class. Checked against a ``ModelInfo`` (no model is loaded, so nothing can run a forward pass)."""

from __future__ import annotations

import numpy as np
import pytest
from support.edits import write_erasers, zero_rank

import featx
from featx.errors import InputError
from featx.extraction import ModelInfo, known_class, parse_intervention, read_bundle_directions, resolve_edits


@pytest.fixture(scope="module")
def tiny_info(split_features) -> ModelInfo:
    with featx.open(split_features) as features:
        return ModelInfo("tiny", features.attrs["model_sha256"], features.hidden_size, len(features.layers))


def one(spec: str, info: ModelInfo):
    return resolve_edits((parse_intervention(spec, seed=3),), info)[0]


def test_the_bundle_directions_are_the_heads_coefficients(topic_bundle):
    head = featx.load(topic_bundle).head
    part = read_bundle_directions(topic_bundle).layers[1]
    np.testing.assert_allclose(part.directions, head.weights["coef"] / head.scale[:, None].astype(np.float64))
    np.testing.assert_array_equal(part.mean, head.mean.astype(np.float64))


def test_a_changed_bundle_is_refused(topic_bundle, tmp_path):
    import shutil

    copy = tmp_path / "copy.featx"
    shutil.copytree(topic_bundle, copy)
    with open(copy / "weights.safetensors", "r+b") as handle:
        handle.seek(-4, 2)
        handle.write(b"\x00\x00\x80\x7f")
    with pytest.raises(InputError, match="was changed after it was written"):
        read_bundle_directions(copy)


def _forged(bundle, tmp_path, arrays=None, spec=None):
    """A copy of ``bundle`` with ``arrays`` replaced and the manifest's layer spec updated with ``spec``, the
    weights' digest made anew (as anyone who can write the bundle can): the reader's own checks must hold."""
    import hashlib
    import json
    import shutil

    from safetensors.numpy import load, save

    copy = tmp_path / "forged.featx"
    shutil.copytree(bundle, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    data = save({**load((copy / "weights.safetensors").read_bytes()), **(arrays or {})})
    (copy / "weights.safetensors").write_bytes(data)
    manifest["files"]["weights.safetensors"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    manifest["layer_spec"].update(spec or {})
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


@pytest.mark.parametrize(
    "arrays, spec, message",
    [
        ({"mean": np.array(1.0, np.float32)}, None, r"'mean' has shape \(\), not \(d,\) with d > 0"),
        ({"scale": np.ones((32, 1), np.float32)}, None, r"'scale' has shape \(32, 1\), not \(32,\)"),
        ({"coef": np.ones(32, np.float32)}, None, r"'coef' has shape \(32,\), not \(32, 3\)"),
        ({"coef": np.ones((32, 5), np.float32)}, None, r"'coef' has shape \(32, 5\), not \(32, 3\)"),
        ({"mean": np.zeros(32, np.int64)}, None, "'mean' has dtype int64, not a float"),
        (None, {"layers": ["x"]}, r"its layers \['x'\] are not layer numbers"),
        (None, {"layers": [{"a": 1}]}, r"its layers \[\{'a': 1\}\] are not layer numbers"),
        (None, {"layers": [True]}, r"its layers \[True\] are not layer numbers"),
        (None, {"kind": "eval"}, "layer spec is of kind 'eval', not single, cat or stack"),
    ],
    ids=[
        "scalar-mean",
        "2d-scale",
        "1d-coef",
        "coef-classes",
        "int-mean",
        "layer-text",
        "layer-object",
        "layer-bool",
        "kind",
    ],
)
def test_a_forged_bundle_is_one_line_not_a_traceback(arrays, spec, message, topic_bundle, tmp_path, tiny_info):
    """A bundle is untrusted: arrays whose shapes do not fit the manifest (a scalar mean, a coef of another number
    of classes), or a layer spec of no layer numbers, with a consistent sha256, are refused by the directions'
    reader (``--intervene project|mean|steer``, ``featx directions``) with one line, not a TypeError or IndexError."""
    forged = _forged(topic_bundle, tmp_path, arrays, spec)
    with pytest.raises(InputError, match=message) as error:
        read_bundle_directions(forged)
    assert error.value.hint and "\n" not in error.value.message
    with pytest.raises(InputError, match=message):
        one(f"steer:{forged}:b:1@1", tiny_info)


def test_project_mean_and_steer_act_on_the_bundle_span(topic_bundle, tiny_info):
    part = read_bundle_directions(topic_bundle).layers[1]
    centred = part.directions - part.directions.mean(axis=1, keepdims=True)
    X = np.random.default_rng(0).standard_normal((6, tiny_info.hidden_size))
    projected = one(f"project:{topic_bundle}@1", tiny_info)(X)
    assert np.abs(projected @ centred).max() < 1e-10
    ablated = one(f"mean:{topic_bundle}@1", tiny_info)(X)
    np.testing.assert_allclose(ablated @ centred, np.tile(part.mean @ centred, (6, 1)), atol=1e-10)
    steer = one(f"steer:{topic_bundle}:b:2.5@1", tiny_info)
    shift = steer(X) - X
    np.testing.assert_allclose(np.linalg.norm(shift, axis=1), 2.5)
    b = featx.load(topic_bundle).classes.index("b")
    assert (shift @ part.directions)[0, b] > (shift @ part.directions)[0, [k for k in range(3) if k != b]].max()


def test_steer_along_a_features_files_class_mean_difference(split_features, tiny_info):
    with featx.open(split_features) as features:
        X = features.features("mean", 1).astype(np.float64)
        codes, names, split = features.labels("topic"), features.label_names("topic"), features.split
    train, b = split == "train", codes == names.index("b")
    want = X[train & b].mean(0) - X[train & ~b].mean(0)
    edit = one(f"steer:{split_features}:topic:b:3@1", tiny_info)
    np.testing.assert_allclose(edit.shift, 3 * want / np.linalg.norm(want))
    assert edit.intervention.record()["label"] == "topic"


def test_the_class_mean_difference_reads_a_split_case_blind_as_the_probes_do(split_features, tiny_info, tmp_path):
    """A split spelt TRAIN / TEST is the probes' train and test split (``probing.split_parts``): the steering
    direction is still that of the train rows alone, never of every labelled row, test rows included."""
    import h5py
    from support.shared_files import copy_features

    path = copy_features(split_features, tmp_path)
    with h5py.File(path, "r+") as file:
        split = file["rows/split"]
        values = [value.decode() if isinstance(value, bytes) else value for value in split[:]]
        for row, value in enumerate(values):
            split[row] = value.upper()
    edit = one(f"steer:{path}:topic:b:3@1", tiny_info)
    np.testing.assert_allclose(edit.shift, one(f"steer:{split_features}:topic:b:3@1", tiny_info).shift)


def test_random_directions_are_orthonormal_and_seeded(tiny_info):
    edit = one("random:4@1", tiny_info)
    np.testing.assert_allclose(edit.left.T @ edit.left, np.eye(4), atol=1e-12)
    assert np.array_equal(edit.left, one("random:4@1", tiny_info).left)
    assert not np.array_equal(edit.left, resolve_edits((parse_intervention("random:4@1", seed=4),), tiny_info)[0].left)


def test_random_of_an_erasers_file_is_its_control_centred_on_its_mean(tmp_path, tiny_info):
    """``random:ERASERS@L``: as many random directions as the eraser removes, centred on its mean (the mean of its
    fitting rows), drawn as featx erase draws its control (the same seed, the same directions)."""
    from featx.probing.analyses.erasure import random_eraser

    d = tiny_info.hidden_size
    rng = np.random.default_rng(2)
    rows = rng.standard_normal((10, d))
    path = write_erasers(tmp_path, tiny_info.weights_sha256, {1: (rows.mean(0), np.eye(d)[:, :3], np.eye(d)[:3])})
    control = resolve_edits((parse_intervention(f"random:{path}@1", seed=5),), tiny_info)[0]
    erase = random_eraser(rows, 3, seed=5)
    np.testing.assert_allclose(control(rows), erase(rows), atol=1e-12)
    np.testing.assert_array_equal(control.mean, rows.mean(0))
    uncentred = one("random:3@1", tiny_info)
    assert not np.allclose(uncentred(rows), control(rows))  # random:RANK@L stays uncentred (no fitted mean)


def test_erasers_map_is_the_erasers_own(tmp_path, tiny_info):
    d = tiny_info.hidden_size
    rng = np.random.default_rng(1)
    mean, left, right = rng.standard_normal(d), rng.standard_normal((d, 2)), rng.standard_normal((2, d))
    path = write_erasers(tmp_path, tiny_info.weights_sha256, {1: (mean, left, right)})
    X = rng.standard_normal((3, d))
    np.testing.assert_allclose(one(f"erase:{path}@1", tiny_info)(X), X - ((X - mean) @ right.T) @ left.T)


@pytest.mark.parametrize("planted", ["erasers", "json"])
def test_an_erasers_file_or_its_json_as_a_fifo_is_refused_without_blocking(tmp_path, tiny_info, planted):
    import os

    path = write_erasers(tmp_path, tiny_info.weights_sha256, {1: zero_rank(tiny_info.hidden_size)})
    target = path if planted == "erasers" else tmp_path / "x.erase.json"
    target.unlink()
    os.mkfifo(target)
    message = "erasers file .* does not exist" if planted == "erasers" else "is missing or unreadable"
    with pytest.raises(InputError, match=message):
        one(f"erase:{path}@1", tiny_info)


def test_an_erasers_file_declaring_more_than_the_bound_is_refused_before_inflating(tmp_path, tiny_info, monkeypatch):
    from featx.extraction.edits import sources

    path = write_erasers(tmp_path, tiny_info.weights_sha256, {1: zero_rank(tiny_info.hidden_size)})
    monkeypatch.setattr(sources, "MAX_ERASERS_BYTES", 100)
    with pytest.raises(InputError, match=r"its arrays declare [\d,]+ bytes, more than 100"):
        one(f"erase:{path}@1", tiny_info)


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"left": np.ones((16, 1))}, r"left \(16, 1\), right \(1, 32\)"),
        ({"right": np.ones((2, 32))}, r"left \(32, 1\), right \(2, 32\)"),
        ({"mean": np.zeros((32, 1))}, r"mean \(32, 1\)"),
        ({"left": np.full((32, 1), np.nan)}, "holds inf or NaN"),
        ({"mean": np.full(32, np.inf)}, "holds inf or NaN"),
        ({"left": None}, "lacks its left array"),
        ({"mean": np.zeros(32) + 1j}, r"mean/1/mean is an array of complex128, not of real numbers"),
        ({"right": np.zeros((1, 32), [("a", "f8")])}, r"mean/1/right is an array of \[\('a', '<f8'\)\], not of"),
        ({"left": np.full((32, 1), "0.1")}, r"mean/1/left is an array of <U3, not of real numbers"),
    ],
    ids=["left-width", "right-rank", "mean-2d", "nan", "inf", "missing", "complex", "structured", "text"],
)
def test_a_malformed_eraser_is_one_line_not_a_traceback(arrays, message, tmp_path, tiny_info):
    """An erasers file is untrusted: arrays of shapes that do not fit one another (or the model), inf or NaN, or a
    missing array are refused before any forward pass, not a torch shape error mid-run. The message names the
    edit the user wrote: ``random:ERASERS@L`` (the eraser's control) read ``--intervene erase:``."""
    d = tiny_info.hidden_size
    parts = {"mean": np.zeros(d), "left": np.ones((d, 1)) / d, "right": np.ones((1, d)) / d, **arrays}
    path = write_erasers(tmp_path, tiny_info.weights_sha256, {1: zero_rank(d)})  # and its .erase.json
    np.savez(path, **{f"mean/1/{name}": value for name, value in parts.items() if value is not None})
    for kind in ("erase", "random"):
        with pytest.raises(InputError, match=message) as error:
            one(f"{kind}:{path}@1", tiny_info)
        assert error.value.hint and "\n" not in error.value.message
        assert error.value.message.startswith(f"--intervene {kind}: "), error.value.message


@pytest.mark.parametrize(
    "case, message",
    [
        ("erase-model", "was made for model tiny, not tiny"),
        ("erase-width", "holds vectors of width 16"),
        ("erase-layer", "has no eraser at layer 2"),
        ("erase-json", "is missing or unreadable"),
        ("bundle-model", "bundle .* was made for model"),
        ("bundle-width", "has width 64"),
        ("bundle-layer", "reads layers \\[1\\], not 2"),
        ("class", "does not know class 'zebra'"),
        ("outside", "layer 9 is outside tiny, whose layers are 0..2"),
        ("rank", "rank 40 is more than the model's width 32"),
        ("features-model", "features file .* was made for model"),
        ("features-label", "has no label 'mood' at layer 1"),
        ("features-class", "label 'topic' of .* has no class 'zebra'"),
    ],
)
def test_a_source_that_does_not_fit_is_refused(case, message, tmp_path, topic_bundle, split_features, tiny_info):
    info, d = tiny_info, tiny_info.hidden_size
    spec = f"project:{topic_bundle}@1"
    if case.startswith("erase"):
        width = 16 if case == "erase-width" else d
        sha = "0" * 64 if case == "erase-model" else info.weights_sha256
        path = write_erasers(tmp_path, sha, {1: zero_rank(width)})
        if case == "erase-json":
            (tmp_path / "x.erase.json").unlink()
        spec = f"erase:{path}@{2 if case == 'erase-layer' else 1}"
    elif case == "bundle-model":
        info = ModelInfo("other", "0" * 64, d, 3)
    elif case == "bundle-width":
        info = ModelInfo("tiny", info.weights_sha256, 64, 3)
    elif case == "bundle-layer":
        spec = f"mean:{topic_bundle}@2"
    elif case == "class":
        spec = f"steer:{topic_bundle}:zebra:1@1"
    elif case == "outside":
        spec = "random:2@9"
    elif case == "rank":
        spec = "random:40@1"
    elif case.startswith("features"):
        label, name = (
            ("mood", "b") if case == "features-label" else ("topic", "zebra" if case == "features-class" else "b")
        )
        spec = f"steer:{split_features}:{label}:{name}:1@1"
        info = ModelInfo("other", "0" * 64, d, 3) if case == "features-model" else info
    with pytest.raises(InputError, match=message) as error:
        one(spec, info)
    assert error.value.hint and "\n" not in error.value.message


def test_known_class_is_the_one_check_of_a_steered_class():
    """``known_class`` serves ``--intervene steer`` and ``featx intervene --toward`` alike: the class's position,
    or one line naming the bundle's classes (none for a regression probe) and what to do."""
    assert known_class(["a", "b", "c"], "c", "--toward c", "B") == 2
    with pytest.raises(InputError) as unknown:
        known_class(["a", "b"], "z", "--toward z", "B")
    assert unknown.value.message == "--toward z: bundle B does not know class 'z' (its classes: a, b)"
    with pytest.raises(InputError, match="none: it is a regression probe") as error:
        known_class(None, "z", "--intervene steer", "B")
    assert error.value.hint == "steer toward one of the bundle's classes"


class _Payload:
    """Unpickling this writes a marker file: proof that something was unpickled."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('unpickled')",))


@pytest.mark.parametrize("kind", ["pickle", "object array"])
def test_a_pickled_erasers_file_is_refused_never_unpickled(kind, tmp_path, tiny_info):
    """A pickle named .erasers.npz, or an .npz holding an array of Python objects: refused as a pickle featx never
    loads, without numpy's advice to load it with allow_pickle (a flag featx has not, for a file that can run
    code), and nothing is unpickled."""
    import pickle

    marker = tmp_path / "unpickled"
    path = write_erasers(tmp_path, tiny_info.weights_sha256, {1: zero_rank(tiny_info.hidden_size)})
    if kind == "pickle":
        path.write_bytes(pickle.dumps(_Payload(marker)))
    else:
        np.savez(path, **{"mean/1/mean": np.array([_Payload(marker)], dtype=object)})
    with pytest.raises(InputError, match="it holds pickled Python objects, which featx never loads") as error:
        one(f"erase:{path}@1", tiny_info)
    assert "allow_pickle" not in str(error.value) and not marker.exists()

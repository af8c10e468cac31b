"""Hostile bundles: someone else's model.featx is untrusted input. Each case changes a valid bundle the way an
attacker or a broken copy would; ``featx predict`` must answer exit 2 with one line saying what is wrong,
before anything in the bundle is used (and nothing is ever unpickled)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from support.deploy_data import make_split_features
from support.errors import assert_one_clear_error

import featx
from featx.cli import main


@pytest.fixture(scope="module")
def world(tiny_model, tmp_path_factory):
    """A copy of the tiny model (so a case may change it), features of it, and a valid bundle."""
    folder = tmp_path_factory.mktemp("hostile-bundles")
    model = folder / "model"
    shutil.copytree(tiny_model, model)
    features = make_split_features(folder, model, poolings="mean")
    bundle = featx.fit(features, label="label", layer="1", output=folder / "valid.featx", folds=2).path
    return {"model": model, "bundle": bundle, "corpus": folder / "corpus.csv"}


def _manifest(bundle):
    return json.loads((bundle / "manifest.json").read_text())


def _write_manifest(bundle, manifest):
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _rewrite_weights(bundle, change):
    """Change the arrays and record the new file's digest, as a careful forger would."""
    from safetensors.numpy import load, save

    arrays = dict(load((bundle / "weights.safetensors").read_bytes()))
    data = save(change(arrays))
    (bundle / "weights.safetensors").write_bytes(data)
    manifest = _manifest(bundle)
    manifest["files"]["weights.safetensors"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    _write_manifest(bundle, manifest)


def _set(key, value):
    def change(bundle):
        manifest = _manifest(bundle)
        manifest[key] = value
        _write_manifest(bundle, manifest)

    return change


def _flip_a_byte(bundle):
    path = bundle / "weights.safetensors"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))


def _link_weights(bundle):
    real = bundle.parent / "elsewhere.safetensors"
    shutil.move(bundle / "weights.safetensors", real)
    os.symlink(real, bundle / "weights.safetensors")


def _pickle_as_weights(bundle):
    data = pickle.dumps({"coef": [1.0]})
    (bundle / "weights.safetensors").write_bytes(data)
    manifest = _manifest(bundle)
    manifest["files"]["weights.safetensors"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    _write_manifest(bundle, manifest)


def _nan_weights(arrays):
    arrays["coef"] = arrays["coef"].copy()
    arrays["coef"][0, 0] = np.nan
    return arrays


def _int_weights(arrays):
    arrays["intercept"] = arrays["intercept"].astype(np.int64)
    return arrays


def _extra_array(arrays):
    return {**arrays, "payload": np.zeros(3, np.float32)}


def _set_extraction(key, value):
    def change(bundle):
        manifest = _manifest(bundle)
        manifest["extraction"][key] = value
        _write_manifest(bundle, manifest)

    return change


def _resealed(change):
    """``change``, then both digests made anew, as anyone who can write the bundle can (the manifest's digest
    notices an accidental edit; it is no signature): the bundle's own checks must hold on their own."""

    def edit(bundle):
        from safetensors.numpy import load, save

        from featx.deploy.checks import MANIFEST_DIGEST, manifest_digest

        change(bundle)
        manifest = _manifest(bundle)
        arrays = dict(load((bundle / "weights.safetensors").read_bytes()))
        data = save(arrays, metadata={MANIFEST_DIGEST: manifest_digest(manifest)})
        (bundle / "weights.safetensors").write_bytes(data)
        manifest["files"]["weights.safetensors"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        _write_manifest(bundle, manifest)

    return edit


def _nest_manifest(bundle):
    text = (bundle / "manifest.json").read_text().rstrip()
    (bundle / "manifest.json").write_text(text[:-1] + ', "x": ' + "[" * 10**5 + "]" * 10**5 + "}")


CASES = {
    "missing weights": (lambda b: (b / "weights.safetensors").unlink(), r"has no weights\.safetensors"),
    "missing manifest": (lambda b: (b / "manifest.json").unlink(), r"has no manifest\.json"),
    "edited weights": (_flip_a_byte, r"weights\.safetensors was changed after it was written \(its sha256"),
    "a pickle beside": (lambda b: (b / "model.pkl").write_bytes(pickle.dumps(1)), r"holds model\.pkl: a pickle"),
    "an npy beside": (lambda b: np.save(b / "coef.npy", np.zeros(2)), r"holds coef\.npy: a pickle or numpy file"),
    "an unexpected file": (lambda b: (b / "notes.txt").write_text("x"), r"unexpected file 'notes\.txt'"),
    "a pickle as weights": (_pickle_as_weights, r"weights\.safetensors is not a safetensors file"),
    "linked weights": (_link_weights, r"weights\.safetensors is a symbolic link"),
    "newer schema": (_set("schema_version", 7), r"made by a newer featx \(schema 7\).*upgrade featx"),
    "unknown schema": (_set("schema_version", "one"), r"unknown bundle schema 'one'"),
    "not a manifest": (lambda b: (b / "manifest.json").write_text("{nope"), r"manifest\.json is not valid JSON"),
    "absurd width": (_set("n_features", 10**12), r"n_features 1000000000000 is not a whole number"),
    "shapes unlike the manifest": (_set("classes", ["neg", "pos", "x"]), r"array 'coef' has shape \(32, 2\)"),
    "NaN weights": (lambda b: _rewrite_weights(b, _nan_weights), r"array 'coef' holds NaN or infinite values"),
    "integer weights": (lambda b: _rewrite_weights(b, _int_weights), r"array 'intercept' has dtype int64"),
    "an extra array": (lambda b: _rewrite_weights(b, _extra_array), r"weights\.safetensors holds .*payload"),
    "unknown head": (_set("classifier", "xgboost"), r"unknown classifier 'xgboost'"),
    "a layer spec of code": (_set("layer_spec", {"kind": "eval", "layers": [1]}), r"is not a layer or a cat"),
    "a manifest nested 10^5 deep": (_nest_manifest, r"manifest\.json is nested too deeply to read"),
    "max_length 10^12": (
        _set_extraction("max_length", 10**12),
        r"bundle \S+: its extraction field 'max_length' is 1000000000000, not a whole number in 2\.\.1,048,576",
    ),
    "max_length above the model's own, resealed": (
        _resealed(_set_extraction("max_length", 100_000)),
        r"bundle \S+: its extraction field 'max_length' \(100000\) cannot be used: --max-length 100000 exceeds the "
        r"model's maximum of \d+",
    ),
    "an unknown store_dtype": (
        _set_extraction("store_dtype", "int3"),
        r"its extraction field 'store_dtype' is 'int3', not one of float16, float32",
    ),
    "an unknown compute dtype": (_set_extraction("compute_dtype", "float7"), r"field 'compute_dtype' is 'float7'"),
    "an unknown long-input policy": (_set_extraction("long_inputs", "explode"), r"field 'long_inputs' is 'explode'"),
    "a negative stride": (_set_extraction("stride", -4), r"field 'stride' is -4, not a whole number"),
    "a random_init that is not a flag": (_set_extraction("random_init", "yes"), r"field 'random_init' is 'yes'"),
    "a negative random-init seed": (_set_extraction("option_seed", -1), r"field 'option_seed' is -1, not a whole"),
    "another layer, edited in": (
        _set("layer_spec", {"kind": "single", "layers": [0], "name": "0"}),
        r"manifest\.json was changed after it was written \(its content differs from the digest in weights",
    ),
    "another pooling, edited in": (_set("pooling", "cls"), r"manifest\.json was changed after it was written"),
    "a model named by a number, resealed": (
        _resealed(lambda b: (_set_extraction("model", 3)(b), _set_extraction("model_path", None)(b))),
        r"its extraction field 'model' is 3 \(a number\), not a text",
    ),
    "a model path of a list, resealed": (
        _resealed(_set_extraction("model_path", ["/tmp"])),
        r"its extraction field 'model_path' is \['/tmp'\] \(a list\), not a text",
    ),
    "a model name too long for a path, resealed": (
        _resealed(lambda b: (_set_extraction("model", "x" * 300)(b), _set_extraction("model_path", "y" * 300)(b))),
        r"its extraction field 'model_path' \('y{36}\.\.\.\) cannot be used: --model y{80}\.\.\. is not a usable "
        r"name \(File name too long\)",
    ),
    # refusals of featx extract's own checks, said as the bundle's field: the user typed no such flag
    "a pool-at featx cannot read, resealed": (
        _resealed(_set_extraction("option_pool_at", "bogus")),
        r"its extraction field 'option_pool_at' \('bogus'\) cannot be used: --pool-at 'bogus' is not understood",
    ),
    "a contrast of one answer, resealed": (
        _resealed(_set_extraction("option_contrast", "yes")),
        r"its extraction field 'option_contrast' \('yes'\) cannot be used: --contrast 'yes' needs at least two",
    ),
    "a chat template this model's tokenizer lacks, resealed": (
        _resealed(_set_extraction("option_chat_template", True)),
        r"its extraction field 'option_chat_template' \(True\) cannot be used: --chat-template: the tokenizer",
    ),
    "a template naming another column, resealed": (
        _resealed(_set_extraction("option_template", "Review: {text} ({topic})")),
        r"its extraction field 'option_template' names column\(s\) \['topic'\] besides the text",
    ),
    "another class order, edited in": (_set("classes", ["pos", "neg"]), r"manifest\.json was changed after it"),
    "a class named by half a surrogate pair, resealed": (  # no predictions file can hold it
        _resealed(_set("classes", ["neg", "p\ud800s"])),
        r"manifest\.json is not valid JSON \(a string holds \\ud800, half of a surrogate pair",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_bundle_is_one_clear_error(world, tmp_path, case):
    change, pattern = CASES[case]
    bundle = tmp_path / "m.featx"
    shutil.copytree(world["bundle"], bundle)
    change(bundle)
    output = tmp_path / "p.csv"  # -q: a refusal at the model's load comes after the progress bar started
    result = CliRunner().invoke(main, ["predict", str(bundle), str(world["corpus"]), "-o", str(output), "-q"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)
    assert not (tmp_path / "p.csv").exists()


def test_a_linked_bundle_folder_is_refused(world, tmp_path):
    os.symlink(world["bundle"], tmp_path / "link.featx")
    result = CliRunner().invoke(main, ["predict", str(tmp_path / "link.featx"), str(world["corpus"])])
    assert result.exit_code == 2
    assert_one_clear_error(result.output, r"is a symbolic link")


def test_a_changed_model_is_refused(world, tmp_path):
    from safetensors.numpy import load, save

    weights = world["model"] / "model.safetensors"
    original = weights.read_bytes()
    arrays = dict(load(original))
    name = sorted(arrays)[0]
    arrays[name] = arrays[name] + 1
    try:
        weights.write_bytes(save(arrays))
        result = CliRunner().invoke(main, ["predict", str(world["bundle"]), str(world["corpus"])])
    finally:
        weights.write_bytes(original)
    assert result.exit_code == 2
    assert_one_clear_error(result.output, r"no longer matches the bundle: its weights' sha256 is")


# An mlp head reads its hidden width from the manifest's ``arrays``: each malformed one is a clear refusal.
ARRAYS = {
    "arrays a list": ([1], r"its arrays field \[1\] is not each array's name and shape"),
    "an empty shape": ({"b1": []}, r"its arrays field .* is not each array's name and shape"),
    "a shape of text": ({"b1": ["a"]}, r"its arrays field .* is not each array's name and shape"),
    "a shape of floats": ({"b1": [1.5]}, r"its arrays field .* is not each array's name and shape"),
    "arrays missing": (None, r"its arrays field None is not each array's name and shape"),
}


@pytest.fixture(scope="module")
def mlp_bundle(world, tmp_path_factory):
    features = world["bundle"].parent / "corpus.features.h5"
    output = tmp_path_factory.mktemp("mlp") / "mlp.featx"
    return featx.fit(features, label="label", layer="1", classifier="mlp", output=output, folds=2).path


@pytest.mark.parametrize("case", sorted(ARRAYS))
def test_a_malformed_arrays_field_is_one_clear_error(world, mlp_bundle, tmp_path, case):
    value, pattern = ARRAYS[case]
    bundle = tmp_path / "m.featx"
    shutil.copytree(mlp_bundle, bundle)
    _set("arrays", value)(bundle)
    output = tmp_path / "p.csv"  # -q: a refusal at the model's load comes after the progress bar started
    result = CliRunner().invoke(main, ["predict", str(bundle), str(world["corpus"]), "-o", str(output), "-q"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)


@pytest.fixture(scope="module")
def stack_bundle(world, tmp_path_factory):
    features = world["bundle"].parent / "corpus.features.h5"
    output = tmp_path_factory.mktemp("stack") / "stack.featx"
    return featx.fit(features, label="label", layer="stack", output=output, folds=2).path


@pytest.mark.parametrize("value", [3, "x", {"a": 1}, [0.1], [0.1, "x", 1.0], [True, 1.0, 1.0], [-1.0, 1.0, 1.0]])
def test_a_stacks_layer_cs_of_another_shape_is_one_clear_error(stack_bundle, tmp_path, value):
    """A stack's ``layer_cs`` (each layer's probe's C), resealed to another type or length, is refused at load; a
    list shorter than the layers once dropped layers from the stack."""
    from featx.errors import InputError

    assert len(featx.load(stack_bundle).head.parts) == 3  # layers 0, 1 and 2 of the tiny model
    bundle = tmp_path / "m.featx"
    shutil.copytree(stack_bundle, bundle)
    _resealed(_set("layer_cs", value))(bundle)
    with pytest.raises(InputError, match=r"bundle \S+m\.featx: its stack's layer_cs .* is not one C above 0 per layer"):
        featx.load(bundle)

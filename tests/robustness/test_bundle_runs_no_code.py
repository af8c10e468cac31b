"""A bundle never runs code (issue 46): the bundle's ``option_trust_remote_code`` used to turn on remote code
at ``featx predict``, so a manifest pointed at a model folder with ``auto_map`` and its own modeling file ran
that Python with no flag given. Remote code runs only when the user passes ``--trust-remote-code`` to the
command at hand (``trust_remote_code=True`` in Python).

One row of ``BUNDLES`` per hostile bundle: the case id and how its manifest's extraction record is edited."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.custom_code import CUSTOM_CODE
from support.deploy_data import make_split_features

import featx
from featx.deploy.checks import MANIFEST_DIGEST, manifest_digest
from featx.errors import ModelError
from featx.extraction.model.fingerprints import config_sha256, tokenizer_sha256, weights_sha256

REPO = Path(featx.__file__).resolve().parent.parent
REFUSED = "ships its own Python code"


def _edited(folder: Path) -> dict:
    """An attacker's edit: the model's hashes dropped, so that nothing is compared."""
    return {"model_sha256": None, "tokenizer_sha256": None, "config_sha256": None}


def _genuine(folder: Path) -> dict:
    """As a bundle genuinely fitted with --trust-remote-code on this folder records it."""
    return {
        "model_sha256": weights_sha256(sorted(folder.glob("*.safetensors"))),
        "tokenizer_sha256": tokenizer_sha256(folder),
        "config_sha256": config_sha256(folder),
    }


BUNDLES = [("edited_manifest", _edited), ("genuine_trusted_bundle", _genuine)]


@pytest.fixture(scope="module")
def fitted(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nocode")
    features = make_split_features(folder, tiny_model)
    featx.fit(features, label="label", layer="1", pooling="mean", folds=3, output=folder / "m.featx")
    return folder


def _hostile(fitted: Path, tiny_model: Path, tmp_path: Path, record) -> tuple[Path, Path, Path]:
    """(bundle, corpus, marker): a copy of the bundle pointed at a model folder of custom code."""
    marker, model = tmp_path / "CUSTOM_CODE_RAN", tmp_path / "model"
    shutil.copytree(tiny_model, model)
    (model / "custom_model.py").write_text(CUSTOM_CODE.format(marker=str(marker)))
    config = json.loads((model / "config.json").read_text())
    config["model_type"] = "featx-custom-bert"
    config["auto_map"] = {"AutoConfig": "custom_model.CustomConfig", "AutoModel": "custom_model.CustomModel"}
    (model / "config.json").write_text(json.dumps(config))
    bundle = tmp_path / "m.featx"
    shutil.copytree(fitted / "m.featx", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    extraction = manifest["extraction"]
    extraction.update(model=str(model), model_path=str(model), option_trust_remote_code=True, **record(model))
    _reseal(bundle, manifest)
    return bundle, fitted / "corpus.csv", marker


def _reseal(bundle: Path, manifest: dict) -> None:
    """Write the edited manifest with its digests made anew, as anyone who can write the bundle can: the digests
    notice an accidental edit, they are no signature (docs/reference/bundle.md), so the remote-code rule must
    hold on its own."""
    from safetensors.numpy import load, save

    weights = bundle / "weights.safetensors"
    data = save(load(weights.read_bytes()), metadata={MANIFEST_DIGEST: manifest_digest(manifest)})
    weights.write_bytes(data)
    manifest["files"]["weights.safetensors"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _predict(bundle: Path, corpus: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_MODULES_CACHE": str(tmp_path / "modules"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "featx", "predict", str(bundle), str(corpus), "-o", str(tmp_path / "p.csv")]
    return subprocess.run([*command, "-q", *extra], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("record", [case[1] for case in BUNDLES], ids=[case[0] for case in BUNDLES])
def test_a_loaded_bundle_never_turns_on_remote_code(fitted, tiny_model, tmp_path, record):
    bundle, _, marker = _hostile(fitted, tiny_model, tmp_path, record)
    with pytest.raises(ModelError, match=REFUSED):
        featx.load(bundle).predict(["the cat sat"])
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.parametrize("record", [case[1] for case in BUNDLES], ids=[case[0] for case in BUNDLES])
def test_featx_predict_never_turns_on_remote_code(fitted, tiny_model, tmp_path, record):
    """In a child process, as a user runs it: the refusal is one line, exit 2, and the code never ran."""
    bundle, corpus, marker = _hostile(fitted, tiny_model, tmp_path, record)
    done = _predict(bundle, corpus, tmp_path)
    assert done.returncode == 2, done.stderr
    assert REFUSED in done.stderr and "--trust-remote-code" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()


@pytest.mark.slow
def test_the_users_own_flag_does_run_it(fitted, tiny_model, tmp_path):
    """The positive control: the same bundle's model code runs once the user passes --trust-remote-code."""
    bundle, corpus, marker = _hostile(fitted, tiny_model, tmp_path, _genuine)
    _predict(bundle, corpus, tmp_path, "--trust-remote-code")
    assert marker.read_text() == "custom code ran"

"""The tokenizer's sha256: recorded by featx extract, kept by featx fit, checked by featx predict."""

from __future__ import annotations

import json

import pytest
from support.deploy_data import make_split_features
from support.tiny import build_tiny_bert

import featx
from featx.errors import ModelError
from featx.extraction.model.fingerprints import tokenizer_sha256


@pytest.fixture
def own_model(tmp_path):
    """A tiny model folder of this test's own (its tokenizer files get edited)."""
    return build_tiny_bert(tmp_path / "model")


def test_extraction_records_the_tokenizers_sha256_outside_the_fingerprint(own_model, tmp_path, split_features):
    path = make_split_features(tmp_path, own_model)
    with featx.open(path) as features, featx.open(split_features) as shared:
        assert features.attrs["tokenizer_sha256"] == tokenizer_sha256(own_model)
        assert len(features.attrs["tokenizer_sha256"]) == 64
        # the same request on the same tiny model (another copy, same bytes): the same features fingerprint
        assert features.fingerprint == shared.fingerprint


def test_a_tokenizer_changed_between_extract_and_fit_is_refused_at_predict(own_model, tmp_path):
    path = make_split_features(tmp_path, own_model)
    recorded = tokenizer_sha256(own_model)
    config = own_model / "tokenizer_config.json"
    settings = json.loads(config.read_text())
    settings["model_max_length"] = 7  # a different tokenizer: texts cut at 7 tokens
    config.write_text(json.dumps(settings))
    fitted = featx.fit(path, label="label", layer="1", pooling="mean", folds=3, output=tmp_path / "m.featx")
    manifest = json.loads((fitted.path / "manifest.json").read_text())
    assert manifest["extraction"]["tokenizer_sha256"] == recorded != tokenizer_sha256(own_model)
    with pytest.raises(ModelError, match=r"the tokenizer files in .* no longer match the bundle"):
        featx.load(fitted.path).predict(["the cat sat"])


def test_a_file_without_the_record_is_hashed_from_the_model_folder_at_fit(own_model, tmp_path):
    import h5py

    path = make_split_features(tmp_path, own_model)
    with h5py.File(path, "r+") as file:
        del file.attrs["tokenizer_sha256"]  # as written before extraction recorded it
    fitted = featx.fit(path, label="label", layer="1", pooling="mean", folds=3, write=False)
    assert fitted.probe.extraction["tokenizer_sha256"] == tokenizer_sha256(own_model)
    assert fitted.probe.predict(["the cat sat"]).shape == (1,)


def test_a_recorded_model_path_too_long_for_a_path_falls_back_to_the_models_name(tiny_model):
    from featx.deploy.model_ref import model_folder

    assert model_folder({"model_path": "y" * 300, "model": str(tiny_model)}) == tiny_model.resolve()
    assert model_folder({"model_path": "y" * 300, "model": "x" * 300}) is None


def test_a_refusal_of_a_bundles_setting_is_said_as_its_field_unless_the_caller_gave_it():
    from featx.deploy.probe import as_bundle_field
    from featx.errors import InputError, ModelError

    extraction = {"option_pool_at": "bogus", "model_path": "/gone/model", "model": "m"}
    error = InputError("--pool-at 'bogus' is not understood", "use last")
    said = as_bundle_field(error, extraction, "bundle b.featx", {})
    assert type(said) is InputError
    assert said.message == (
        "bundle b.featx: its extraction field 'option_pool_at' ('bogus') cannot be used: --pool-at 'bogus' is not "
        "understood"
    )
    assert as_bundle_field(error, extraction, "bundle b.featx", {"pool_at": "bogus"}) is error  # the caller's own
    model = ModelError("--model /gone/model is not a usable name", "give a folder")
    assert type(as_bundle_field(model, extraction, "b", {})) is ModelError  # the same kind of error, reworded
    assert "field 'model_path'" in as_bundle_field(model, extraction, "b", {}).message
    other = InputError("--layer 9 is not stored")  # an option no bundle field sets
    assert as_bundle_field(other, extraction, "b", {}) is other
    assert as_bundle_field(InputError("--contrast 'x' needs two answers"), extraction, "b", {}).message.startswith(
        "--contrast"
    )  # a flag the bundle did not set


def test_a_bundles_max_length_is_refused_as_every_other_setting():
    """The model's refusal of the bundle's own max_length reads as any other stored setting's (one mechanism)."""
    from featx.deploy.probe import as_bundle_field
    from featx.errors import InputError

    error = InputError("--max-length 100000 exceeds the model's maximum of 512")
    said = as_bundle_field(error, {"max_length": 100000}, "bundle b.featx", {})
    assert said.message == (
        "bundle b.featx: its extraction field 'max_length' (100000) cannot be used: --max-length 100000 exceeds "
        "the model's maximum of 512"
    )
    assert as_bundle_field(error, {"max_length": 100000}, "b", {"max_length": 100000}) is error  # the caller's own
    assert as_bundle_field(error, {"max_length": None}, "b", {}) is error  # the model's own length: no field set


def test_a_bundles_setting_is_shown_as_every_untrusted_value_is():
    """featx.json_fields.shown, as every message showing a value from a file: its repr, control characters escaped,
    cut to 40 characters in all (it had cut the text itself at 40 and added three dots, unescaped)."""
    from featx.deploy.probe import as_bundle_field
    from featx.errors import InputError

    value = "9\x1b[2J\n" * 20
    said = as_bundle_field(InputError("--max-length is odd"), {"max_length": value}, "b", {}).message
    assert said.startswith("b: its extraction field 'max_length' ('9\\x1b[2J\\n9\\x1b[2J\\n9") and "\x1b" not in said
    assert said.endswith("...) cannot be used: --max-length is odd") and len(said.split("(", 1)[1].split(")")[0]) == 40

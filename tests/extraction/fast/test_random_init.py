"""``--random-init`` on featx's own encoders (featx/extraction/fast/random_init.py): the very tensors transformers'
``from_config`` draws from the same seed, for every native family and both CPU dtypes; the same features file as
transformers' path; the caller's generator left alone; what the weights file holds does not matter."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from support.families import BY_NAME, build_family
from support.native_files import extract_both, imports_of_an_extraction, same_file_contents
from support.tiny import SENTENCES, write_csv

import featx
from featx.extraction.fast import select
from featx.extraction.model.loading import load_model

NATIVE_FAMILIES = ("bert", "mpnet", "roberta", "xlm-roberta")


@pytest.fixture(scope="module")
def family_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("random-init")
    return {name: build_family(BY_NAME[name], root / name) for name in NATIVE_FAMILIES}


def _copy(source: Path, folder: Path) -> Path:
    shutil.copytree(source, folder)
    return folder


def _transformers_draw(folder, dtype: torch.dtype, seed: int) -> dict[str, torch.Tensor]:
    """What ``--random-init`` gave through transformers: ``from_config`` after ``torch.manual_seed(seed)``."""
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(seed)
    return AutoModel.from_config(AutoConfig.from_pretrained(str(folder)), dtype=dtype).state_dict()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("name", NATIVE_FAMILIES)
def test_the_native_draw_is_transformers_draw_bit_for_bit(name, dtype, family_folders):
    folder = family_folders[name]
    loaded = load_model(str(folder), "cpu", str(dtype).removeprefix("torch."), random_init=True, seed=7, native=True)
    assert loaded.implementation == "native" and type(loaded.model).__module__.startswith("featx")
    ours, theirs = loaded.model.state_dict(), _transformers_draw(folder, dtype, 7)
    family = select.FAMILIES[json.loads((folder / "config.json").read_text())["model_type"]]
    mapping, missing, unexpected = family.checkpoint_match(ours.keys(), theirs.keys())
    assert not missing and not unexpected
    differing = [key for key, other in mapping.items() if not torch.equal(ours[key], theirs[other])]
    assert differing == [], differing
    assert all(tensor.dtype == dtype for tensor in ours.values() if tensor.is_floating_point())


def test_another_seed_draws_other_weights_and_the_callers_generator_is_left_alone(family_folders):
    torch.manual_seed(123)
    state = torch.get_rng_state()
    first = load_model(str(family_folders["bert"]), "cpu", "float32", random_init=True, seed=0, native=True)
    assert torch.equal(torch.get_rng_state(), state)
    second = load_model(str(family_folders["bert"]), "cpu", "float32", random_init=True, seed=1, native=True)
    weight = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(first.model.state_dict()[weight], second.model.state_dict()[weight])
    assert torch.get_default_dtype() == torch.float32


def test_random_init_writes_the_file_transformers_path_writes(family_folders, tmp_path, monkeypatch):
    """The same weights, so the same features (float32 store, token states too) as through transformers."""
    corpus, model = write_csv(tmp_path / "c.csv", SENTENCES), str(family_folders["roberta"])
    native, plain = extract_both(corpus, tmp_path, monkeypatch, model=model, random_init=True, tokens=True)
    same_file_contents(native, plain, 1e-5)
    with featx.open(native) as features:
        assert features.attrs["random_init"]


@pytest.mark.slow
def test_a_random_init_extraction_imports_no_transformers(tmp_path):
    """The point of drawing natively: ``featx extract --random-init`` with the default model, in a fresh process,
    imports neither transformers nor torch's compiler stack, like a plain extraction."""
    assert imports_of_an_extraction(tmp_path, options=("--random-init",)) == ([], "native")


def test_the_weights_file_is_not_read(family_folders, tmp_path):
    """Every weight is drawn: a weights file without some layers, which would not load natively, does not stop
    the native draw, and the draw is the one from the intact folder."""
    from safetensors.torch import load_file, save_file

    folder = _copy(family_folders["bert"], tmp_path / "bert")
    weights = load_file(folder / "model.safetensors")
    save_file({key: value for key, value in weights.items() if ".layer.1." not in key}, folder / "model.safetensors")
    assert not select.choose(folder, [folder / "model.safetensors"], True).native
    loaded = load_model(str(folder), "cpu", "float32", random_init=True, seed=2, native=True)
    intact = load_model(str(family_folders["bert"]), "cpu", "float32", random_init=True, seed=2, native=True)
    assert loaded.implementation == "native"
    for key, tensor in intact.model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[key], tensor)


def test_an_unusable_initializer_range_leaves_the_native_path_with_its_reason(family_folders, tmp_path):
    folder = _copy(family_folders["bert"], tmp_path / "bert")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "initializer_range": "wide"}))
    choice = select.choose(folder, [folder / "model.safetensors"], True, random_init=True)
    assert not choice.native and "initializer_range" in choice.reason

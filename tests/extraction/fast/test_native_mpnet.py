"""featx's own MPNet (featx/extraction/fast/mpnet.py): the same numbers as transformers' MPNetModel (eager, its
only attention) with padding, the same files from ``featx extract`` with the native path on and off, transformers
where the folder is not certainly equivalent, and no transformers import on the native path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from support.native_files import (
    imports_of_an_extraction,
    loaded_both_ways,
    same_file_native_on_and_off,
)
from support.parity import largest_difference, padded_ids
from support.tiny import build_tiny_mpnet

from featx.errors import ModelError
from featx.extraction.fast import mpnet, onednn, select

PAD = 1
IDS = padded_ids(PAD)


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory) -> Path:
    return build_tiny_mpnet(tmp_path_factory.mktemp("mpnet"), legacy=True)


def _transformers_mpnet(folder: Path, dtype=torch.float32):
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(folder), dtype=dtype).eval()


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / "model"))


def _edit_config(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


def test_tiny_mpnet_equals_transformers_with_padding(tiny_mpnet):
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    reference = _transformers_mpnet(tiny_mpnet)
    assert largest_difference(native, reference, IDS, PAD) <= 1e-5
    assert largest_difference(native, reference, IDS[2:], PAD) <= 1e-5  # no padding: no mask at all


def test_long_rows_use_the_far_buckets_as_transformers_does(tiny_mpnet):
    """60 tokens: distances past 8 fall in the log-spaced buckets."""
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 150, (2, 60), generator=generator)
    ids[:, 0], ids[0, 59], ids[1, 40], ids[1, 41:] = 0, 2, 2, PAD
    assert largest_difference(native, _transformers_mpnet(tiny_mpnet), ids, PAD) <= 1e-5
    assert int(mpnet.relative_buckets(60, torch.device("cpu")).max()) > 16 + 8  # past the exact buckets


def test_bucket_table_equals_transformers_out_to_the_largest_distance():
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    positions = torch.arange(300)
    want = MPNetEncoder.relative_position_bucket(positions[None, :] - positions[:, None], num_buckets=32)
    got = mpnet.relative_buckets(300, torch.device("cpu"))
    assert torch.equal(got, want) and int(got.max()) == mpnet.BUCKETS - 1


def test_padding_changes_no_real_token(tiny_mpnet):
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    with torch.inference_mode():
        batch = native(input_ids=IDS, attention_mask=(IDS != PAD).long(), output_hidden_states=True)
        alone = native(
            input_ids=IDS[1:2, :3], attention_mask=torch.ones(1, 3, dtype=torch.long), output_hidden_states=True
        )
    for got, want in zip(batch.hidden_states, alone.hidden_states, strict=True):
        torch.testing.assert_close(got[1:2, :3], want, atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not onednn.available(), reason="no oneDNN prepacked linears in this torch build")
def test_onednn_packs_every_linear_and_fuses_the_feed_forward_gelu(tiny_mpnet):
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    reference = _transformers_mpnet(tiny_mpnet)
    packed = onednn.prepack_linears(native, torch.device("cpu"), torch.float32)
    assert packed == onednn.prepack_linears(reference, torch.device("cpu"), torch.float32) == 2 * 6 + 1
    assert not any(type(module) is torch.nn.Linear for module in native.modules())
    assert all(layer.intermediate.dense.attr == "gelu" for layer in native.encoder.layer)
    assert largest_difference(native, _transformers_mpnet(tiny_mpnet), IDS, PAD) <= 1e-4


def test_a_masked_lm_checkpoint_loads_its_encoder_with_or_without_a_pooler(tiny_mpnet, tmp_path):
    """MPNetForMaskedLM holds the encoder under ``mpnet.`` and no pooler: the native encoder is built without one
    (transformers' path removes the pooler it would initialise); with the pooler's weights added, with it."""
    from safetensors.torch import load_file, save_file
    from transformers import MPNetForMaskedLM

    folder = _copy(tiny_mpnet, tmp_path)
    MPNetForMaskedLM.from_pretrained(str(tiny_mpnet)).save_pretrained(str(folder))
    weights = [folder / "model.safetensors"]
    assert select.choose(folder, weights, True).native
    native = mpnet.load_mpnet(folder, folder / "model.safetensors", torch.float32)
    assert native.pooler is None
    with torch.inference_mode():
        got = native(input_ids=IDS, attention_mask=(IDS != PAD).long(), output_hidden_states=True)
    assert got.pooler_output is None
    state = load_file(str(folder / "model.safetensors"))
    pooler = {f"mpnet.{k}": v for k, v in load_file(str(tiny_mpnet / "model.safetensors")).items() if "pooler" in k}
    save_file({**state, **pooler}, str(folder / "model.safetensors"))
    assert select.choose(folder, weights, True).native
    native = mpnet.load_mpnet(folder, folder / "model.safetensors", torch.float32)
    assert largest_difference(native, _transformers_mpnet(tiny_mpnet), IDS, PAD) <= 1e-5


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"relative_attention_num_buckets": 16}, "relative_attention_num_buckets 16"),
        ({"hidden_act": "gelu_new"}, "gelu_new"),
        ({"is_decoder": True}, "is_decoder"),
    ],
)
def test_configs_it_cannot_be_sure_of_go_through_transformers(tiny_mpnet, tmp_path, changes, reason):
    folder = _copy(tiny_mpnet, tmp_path)
    _edit_config(folder, **changes)
    assert reason in select.choose(folder, [folder / "model.safetensors"], True).reason


def test_a_weight_of_the_wrong_shape_is_a_clear_model_error(tiny_mpnet, tmp_path):
    folder = _copy(tiny_mpnet, tmp_path)
    _edit_config(folder, intermediate_size=48)
    with pytest.raises(ModelError, match=r"intermediate\.dense\.weight .* \(48, 32\)"):
        mpnet.load_mpnet(folder, folder / "model.safetensors", torch.float32)


def test_loaded_model_fields_match_transformers(tiny_mpnet):
    native, plain = loaded_both_ways(tiny_mpnet)
    assert native.tokenizer.class_name == type(plain.tokenizer).__name__ == "MPNetTokenizer"


@pytest.mark.parametrize("pairs", [False, True], ids=["texts", "pairs"])
def test_extract_gives_the_same_file_with_native_on_and_off(tiny_mpnet, tmp_path, monkeypatch, pairs):
    same_file_native_on_and_off(tiny_mpnet, tmp_path, monkeypatch, pairs)


@pytest.mark.slow
def test_extraction_of_an_mpnet_folder_imports_no_transformers(tiny_mpnet, tmp_path):
    assert imports_of_an_extraction(tmp_path, tiny_mpnet) == ([], "native")

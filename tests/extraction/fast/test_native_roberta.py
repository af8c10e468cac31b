"""featx's own RoBERTa (featx/extraction/fast/roberta.py): the same numbers as transformers' RobertaModel with
padding, positions past the padding id, a masked-LM checkpoint without its pooler, XLM-R's model_type, the same
files from ``featx extract`` with the native path on and off, and no transformers import on the native path."""

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
from support.tiny import build_tiny_roberta

import featx
from featx.extraction.fast import roberta, select
from featx.extraction.model.loading import load_model

PAD = 1
IDS = padded_ids(PAD)


@pytest.fixture(scope="module")
def tiny_roberta(tmp_path_factory) -> Path:
    return build_tiny_roberta(tmp_path_factory.mktemp("roberta"))


@pytest.fixture(scope="module")
def masked_lm(tmp_path_factory) -> Path:
    """roberta-base's layout: RobertaForMaskedLM weights, tokenizer.json without tokenizer_config.json."""
    return build_tiny_roberta(tmp_path_factory.mktemp("roberta-mlm"), legacy=True, head=True, hub=True)


def _transformers(folder: Path):
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()


def _load(folder: Path) -> roberta.RobertaModel:
    return roberta.load_roberta(folder, folder / "model.safetensors", torch.float32)


def test_tiny_roberta_equals_transformers_with_padding(tiny_roberta):
    native, reference = _load(tiny_roberta), _transformers(tiny_roberta)
    assert largest_difference(native, reference, IDS, PAD) <= 1e-5
    assert largest_difference(native, reference, IDS[2:], PAD) <= 1e-5  # no padding: no mask at all


def test_the_longest_row_reaches_the_last_position(tiny_roberta):
    """64 tokens, the usable maximum of 66 positions: positions 2..65, the last row of the table."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 300, (2, 64), generator=generator)
    ids[:, 0], ids[0, 63], ids[1, 30], ids[1, 31:] = 0, 2, 2, PAD
    assert largest_difference(_load(tiny_roberta), _transformers(tiny_roberta), ids, PAD) <= 1e-5


def test_padding_changes_no_real_token(tiny_roberta):
    native = _load(tiny_roberta)
    with torch.inference_mode():
        batch = native(input_ids=IDS, attention_mask=(IDS != PAD).long(), output_hidden_states=True)
        alone = native(
            input_ids=IDS[1:2, :3], attention_mask=torch.ones(1, 3, dtype=torch.long), output_hidden_states=True
        )
    for got, want in zip(batch.hidden_states, alone.hidden_states, strict=True):
        torch.testing.assert_close(got[1:2, :3], want, atol=1e-5, rtol=1e-5)


def test_a_masked_lm_checkpoint_runs_natively_without_its_pooler(masked_lm, tmp_path, monkeypatch):
    """roberta-base's layout: the encoder under ``roberta.``, an LM head, no pooler. transformers' path removes
    the untrained pooler; the native encoder is built without one, and both files are the same."""
    assert select.choose(masked_lm, [masked_lm / "model.safetensors"], True).native
    native = _load(masked_lm)
    assert native.pooler is None
    assert largest_difference(native, _transformers(masked_lm), IDS, PAD) <= 1e-5
    loaded = load_model(str(masked_lm), "cpu", "float32", native=True)
    assert loaded.implementation == "native" and not loaded.has_pooler
    with featx.open(same_file_native_on_and_off(masked_lm, tmp_path, monkeypatch)) as features:
        assert "pooler" not in features.poolings


def test_xlm_roberta_is_the_same_network(tmp_path):
    folder = build_tiny_roberta(tmp_path / "xlmr", model_type="xlm-roberta")
    native = _load(folder)
    assert isinstance(native.config, roberta.XLMRobertaSettings)
    assert largest_difference(native, _transformers(folder), IDS, PAD) <= 1e-5


def _edit_config(folder: Path, tmp_path: Path, **changes) -> Path:
    copy = Path(shutil.copytree(folder, tmp_path / "model"))
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, **changes}))
    return copy


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"pad_token_id": None}, "no pad_token_id"),
        ({"position_embedding_type": "relative_key"}, "relative_key"),
        ({"hidden_act": "gelu_new"}, "gelu_new"),
        ({"add_cross_attention": True}, "add_cross_attention"),
        ({"max_position_embeddings": 2}, "no position after its padding id"),
    ],
)
def test_configs_it_cannot_be_sure_of_go_through_transformers(tiny_roberta, tmp_path, changes, reason):
    folder = _edit_config(tiny_roberta, tmp_path, **changes)
    assert reason in select.choose(folder, [folder / "model.safetensors"], True).reason


def test_loaded_model_fields_match_transformers(tiny_roberta):
    native, plain = loaded_both_ways(tiny_roberta)
    assert native.max_length == 64  # 66 positions less the padding offset
    assert native.tokenizer.class_name == type(plain.tokenizer).__name__ == "RobertaTokenizer"


@pytest.mark.parametrize("pairs", [False, True], ids=["texts", "pairs"])
def test_extract_gives_the_same_file_with_native_on_and_off(tiny_roberta, tmp_path, monkeypatch, pairs):
    same_file_native_on_and_off(tiny_roberta, tmp_path, monkeypatch, pairs)


@pytest.mark.slow
def test_extraction_of_a_roberta_folder_imports_no_transformers(masked_lm, tmp_path):
    assert imports_of_an_extraction(tmp_path, masked_lm) == ([], "native")

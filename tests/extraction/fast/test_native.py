"""featx's own BERT (featx/extraction/fast/bert.py, select.py): the same numbers as transformers' BertModel, the
same oneDNN packing, the same files from ``featx extract``, transformers where it is not certainly equivalent, and
no transformers import at all on the native path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from support.families import BY_NAME, build_family
from support.native_files import (
    extract_both,
    imports_of_an_extraction,
    same_file_contents,
    same_file_native_on_and_off,
)
from support.tiny import SENTENCES, write_csv

import featx
from featx.errors import ModelError
from featx.extraction.fast import bert, checkpoint, onednn, select
from featx.extraction.model.loading import load_model

IDS = torch.tensor([[2, 40, 41, 42, 43, 3, 0, 0], [2, 44, 3, 0, 0, 0, 0, 0], [2, 45, 46, 47, 48, 49, 50, 3]])
TYPES = torch.tensor([[0, 0, 0, 1, 1, 1, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]])


def _transformers_bert(folder, dtype=torch.float32):
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(folder), dtype=dtype, attn_implementation="sdpa").eval()


def _largest_difference(native, reference, ids, mask, **extra) -> float:
    """Largest absolute difference over every hidden state (at the real tokens: a padded position is no feature,
    and featx's encoders leave it zero where they pack the batch, ``fast/packing.py``) and the pooler output of
    one forward pass each."""
    with torch.inference_mode():
        got = native(input_ids=ids, attention_mask=mask, output_hidden_states=True, **extra)
        want = reference(input_ids=ids, attention_mask=mask, output_hidden_states=True, **extra)
    assert len(got.hidden_states) == len(want.hidden_states)
    real = mask.bool()
    pairs = [
        *((a[real], b[real]) for a, b in zip(got.hidden_states, want.hidden_states, strict=False)),
        (got.pooler_output, want.pooler_output),
        (got.last_hidden_state[real], want.last_hidden_state[real]),
    ]
    return max(float((a.float() - b.float()).abs().max()) for a, b in pairs)


def _copy(folder: Path, tmp_path: Path, name: str = "model") -> Path:
    return Path(shutil.copytree(folder, tmp_path / name))


def _edit_config(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def _rewrite_weights(folder: Path, edit) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    save_file(edit(weights), str(folder / "model.safetensors"))


@pytest.mark.parametrize("token_types", [False, True], ids=["plain", "pairs"])
def test_tiny_bert_equals_transformers_with_padding(tiny_model, token_types):
    native = bert.load_bert(tiny_model, tiny_model / "model.safetensors", torch.float32)
    extra = {"token_type_ids": TYPES} if token_types else {}
    assert _largest_difference(native, _transformers_bert(tiny_model), IDS, (IDS != 0).long(), **extra) <= 1e-4
    # no padding at all: transformers passes no mask to sdpa, and neither does featx
    full = IDS[2:]
    assert _largest_difference(native, _transformers_bert(tiny_model), full, torch.ones_like(full)) <= 1e-4


def test_padding_changes_no_real_token(tiny_model):
    native = bert.load_bert(tiny_model, tiny_model / "model.safetensors", torch.float32)
    with torch.inference_mode():
        batch = native(input_ids=IDS, attention_mask=(IDS != 0).long(), output_hidden_states=True)
        alone = native(
            input_ids=IDS[1:2, :3], attention_mask=torch.ones(1, 3, dtype=torch.long), output_hidden_states=True
        )
    for got, want in zip(batch.hidden_states, alone.hidden_states, strict=False):
        torch.testing.assert_close(got[1:2, :3], want, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_minilm_equals_transformers_in_float32_and_bfloat16(minilm_path):
    ids = torch.tensor([[101, 7592, 2088, 999, 102, 0, 0], [101, 1996, 4937, 2938, 2006, 1996, 102]])
    mask = (ids != 0).long()
    for dtype, bound in ((torch.float32, 1e-4), (torch.bfloat16, 5e-2)):
        native = bert.load_bert(minilm_path, minilm_path / "model.safetensors", dtype)
        assert next(native.parameters()).dtype == dtype
        assert _largest_difference(native, _transformers_bert(minilm_path, dtype), ids, mask) <= bound


def test_relu_activation_equals_transformers(tiny_model, tmp_path):
    folder = _copy(tiny_model, tmp_path)
    _edit_config(folder, hidden_act="relu")
    native = bert.load_bert(folder, folder / "model.safetensors", torch.float32)
    assert isinstance(native.encoder.layer[0].intermediate.intermediate_act_fn, torch.nn.ReLU)
    assert _largest_difference(native, _transformers_bert(folder), IDS, (IDS != 0).long()) <= 1e-4


def test_checkpoint_with_heads_loads_its_bert_prefixed_encoder(tiny_model, tmp_path):
    """A BertForSequenceClassification checkpoint: the encoder sits under ``bert.``, the classifier is left out."""
    from transformers import BertForSequenceClassification

    folder = _copy(tiny_model, tmp_path)
    BertForSequenceClassification.from_pretrained(str(tiny_model)).save_pretrained(str(folder))
    keys = checkpoint.checkpoint_keys(folder / "model.safetensors")
    assert any(key.startswith("bert.") for key in keys) and any(key.startswith("classifier.") for key in keys)
    choice = select.choose(folder, [folder / "model.safetensors"], True)
    assert choice.native, choice.reason
    native = bert.load_bert(folder, folder / "model.safetensors", torch.float32)
    assert _largest_difference(native, _transformers_bert(folder), IDS, (IDS != 0).long()) <= 1e-4


@pytest.mark.slow
@pytest.mark.skipif(not onednn.available(), reason="this torch build has no oneDNN linear ops")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_onednn_packs_and_fuses_the_same_layers(minilm_path, dtype):
    if not onednn.available(dtype):
        pytest.skip("this CPU has no oneDNN bfloat16 path (it needs AVX-512 BW/VL/DQ or AVX-NE-CONVERT)")
    native = bert.load_bert(minilm_path, minilm_path / "model.safetensors", dtype)
    reference = _transformers_bert(minilm_path, dtype)
    plain = bert.load_bert(minilm_path, minilm_path / "model.safetensors", dtype)
    packed_native = onednn.prepack_linears(native, torch.device("cpu"), dtype)
    assert packed_native == onednn.prepack_linears(reference, torch.device("cpu"), dtype) == 6 * 6 + 1

    def fused(model):
        return sum(m.attr == "gelu" for m in model.modules() if isinstance(m, onednn.PackedLinear))

    assert fused(native) == fused(reference) == 6  # one dense + GELU per layer
    assert not any(type(m) is torch.nn.Linear for m in native.modules())
    ids = torch.tensor([[101, 7592, 2088, 102, 0], [101, 1996, 4937, 2938, 102]])
    bound = 1e-4 if dtype == torch.float32 else 5e-2
    assert _largest_difference(native, plain, ids, (ids != 0).long()) <= bound


def test_extract_on_the_tiny_model_gives_the_same_file_with_native_on_and_off(
    tiny_model, corpus_csv, tmp_path, monkeypatch
):
    native, plain = extract_both(corpus_csv, tmp_path, monkeypatch, model=str(tiny_model), tokens=True, batch_size=4)
    same_file_contents(native, plain, 1e-5)


def test_extract_of_sentence_pairs_gives_the_same_file_with_native_on_and_off(tiny_model, tmp_path, monkeypatch):
    rows = [(a, b, "x") for (a, *_), (b, *_) in zip(SENTENCES, SENTENCES[3:] + SENTENCES[:3], strict=False)]
    corpus = write_csv(tmp_path / "pairs.csv", rows, header=("first", "second", "label"))
    native, plain = extract_both(
        corpus, tmp_path, monkeypatch, model=str(tiny_model), text_col="first", text_pair_col="second", batch_size=4
    )
    same_file_contents(native, plain, 1e-5)


@pytest.mark.slow
def test_extract_on_minilm_gives_the_same_file_with_native_on_and_off(tmp_path, monkeypatch):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES[:5])
    native, plain = extract_both(corpus, tmp_path, monkeypatch, layers="all", poolings="all", batch_size=2)
    same_file_contents(native, plain, 1e-5)


@pytest.mark.slow
def test_default_extraction_imports_no_transformers(tmp_path):
    """A plain ``featx extract`` with the default model, in a fresh process: transformers is never imported, nor
    torch's compiler stack (torch._dynamo, sympy: about 1 s) that a meta-device fill would pull in, nor what
    other commands use (plotly, pandas, scikit-learn, scipy, matplotlib): start-up is mostly imports."""
    assert imports_of_an_extraction(tmp_path) == ([], "native")


@pytest.mark.parametrize("case", ["electra", "site", "no_tokenizer_json", "env", "relative", "half_pooler", "decoder"])
def test_fallback_cases_load_through_transformers(case, tiny_model, tmp_path, monkeypatch):
    folder = _copy(tiny_model, tmp_path)
    if case == "electra":
        folder = build_family(BY_NAME["electra"], tmp_path / "electra")
    elif case == "no_tokenizer_json":
        (folder / "tokenizer.json").unlink()
    elif case == "env":
        monkeypatch.setenv("FEATX_NATIVE", "0")
    elif case == "relative":
        _edit_config(folder, position_embedding_type="relative_key")
    elif case == "decoder":
        _edit_config(folder, is_decoder=True)
    elif case == "half_pooler":  # a damaged pooler: not the masked-LM case (no pooler weights at all)
        _rewrite_weights(folder, lambda weights: {k: v for k, v in weights.items() if k != "pooler.dense.bias"})
    config = featx.extraction.ExtractConfig(
        corpus="c.csv", model=str(folder), sites="hidden,ffn" if case == "site" else "hidden"
    )
    loaded = load_model(str(folder), "cpu", "float32", native=select.native_requested(config))
    assert loaded.implementation == "transformers"
    assert type(loaded.model).__module__.startswith("transformers")


def test_a_checkpoint_without_pooler_runs_natively_without_the_pooler_pooling(tiny_model, tmp_path, monkeypatch):
    """As BertForMaskedLM saves it: the whole encoder, no pooler. transformers' path removes the pooler it would
    initialise at random; the native encoder is built without one, and the two files are the same."""
    folder = _copy(tiny_model, tmp_path)
    _rewrite_weights(folder, lambda weights: {k: v for k, v in weights.items() if not k.startswith("pooler.")})
    assert not load_model(str(folder), "cpu", "float32", native=True).has_pooler
    with featx.open(same_file_native_on_and_off(folder, tmp_path, monkeypatch)) as features:
        assert "pooler" not in features.poolings


def test_the_reason_for_transformers_is_named(tiny_model, tmp_path):
    folder = _copy(tiny_model, tmp_path)
    weights = [folder / "model.safetensors"]
    assert select.choose(folder, weights, True).native
    assert select.choose(folder, weights, False).reason == "not requested"
    assert select.choose(folder, weights, True, trust_remote_code=True).reason == "--trust-remote-code"
    assert select.choose(folder, weights, True, placement={"device_map": "auto"}).reason == "--device-map"
    _edit_config(folder, hidden_act="gelu_new")
    assert "gelu_new" in select.choose(folder, weights, True).reason


def test_a_missing_weight_is_a_clear_model_error(tiny_model, tmp_path):
    folder = _copy(tiny_model, tmp_path)
    _rewrite_weights(folder, lambda weights: {k: v for k, v in weights.items() if "layer.1.output.dense" not in k})
    with pytest.raises(ModelError, match=r"missing: encoder\.layer\.1\.output\.dense"):
        bert.load_bert(folder, folder / "model.safetensors", torch.float32)
    assert "2 missing" in select.choose(folder, [folder / "model.safetensors"], True).reason


def test_a_weight_of_the_wrong_shape_is_a_clear_model_error(tiny_model, tmp_path, corpus_csv):
    from click.testing import CliRunner

    from featx.cli import main

    folder = _copy(tiny_model, tmp_path)
    _edit_config(folder, intermediate_size=48)  # the weights are 64 wide: transformers refuses this folder too
    with pytest.raises(ModelError, match=r"encoder\.layer\.0\.intermediate\.dense\.weight .* \(48, 32\)"):
        load_model(str(folder), "cpu", "float32", native=True)
    result = CliRunner().invoke(
        main, ["extract", str(corpus_csv), "--model", str(folder), "-o", str(tmp_path / "f.h5"), "-q"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output and "intermediate.dense" in result.output


def test_a_damaged_weights_file_is_a_clear_model_error(tiny_model, tmp_path):
    folder = _copy(tiny_model, tmp_path)
    with pytest.raises(ModelError, match="cannot read the weights"):
        bert.load_bert(folder, folder / "vocab.txt", torch.float32)


def test_native_loaded_model_fields_match_transformers(tiny_model):
    native = load_model(str(tiny_model), "cpu", "float32", native=True)
    plain = load_model(str(tiny_model), "cpu", "float32", native=False)
    assert native.implementation == "native" and plain.implementation == "transformers"
    for field in (
        "name",
        "path",
        "weights_sha256",
        "device",
        "dtype",
        "n_layers",
        "hidden_size",
        "max_length",
        "part",
        "causal",
        "has_pooler",
    ):
        assert getattr(native, field) == getattr(plain, field), field
    assert native.model.config.model_type == "bert" and not native.model.training

"""featx/extraction/fast/fuse.py: the fused query/key/value and linear + residual blocks of featx's own BERT
compute what transformers' BertModel computes, are used by extraction, and are left out where they do not apply."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch
from transformers import AutoModel

from featx.extraction import ExtractConfig, extract
from featx.extraction.fast import bert, fuse, onednn

needs_onednn = pytest.mark.skipif(not onednn.available(), reason="this torch build has no oneDNN linear ops")

IDS = torch.tensor([[2, 40, 41, 42, 43, 3, 0, 0], [2, 44, 3, 0, 0, 0, 0, 0], [2, 45, 46, 47, 48, 49, 50, 3]])
TYPES = torch.tensor([[0, 0, 0, 1, 1, 1, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]])


def _native(folder, dtype=torch.float32, fused=True):
    model = bert.load_bert(folder, folder / "model.safetensors", dtype)
    onednn.prepack_linears(model, torch.device("cpu"), dtype)
    if fused:
        assert fuse.fuse_bert(model) == 3 * model.config.num_hidden_layers
    return model


def _states(model, ids, mask, **extra):
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, **extra)
    return [*out.hidden_states, out.pooler_output]


@needs_onednn
@pytest.mark.parametrize("token_types", [False, True], ids=["plain", "pairs"])
def test_fused_model_equals_transformers(tiny_model, token_types):
    reference = AutoModel.from_pretrained(str(tiny_model), attn_implementation="sdpa").eval()
    fused = _native(tiny_model)
    assert any(isinstance(m, fuse.FusedSelfAttention) for m in fused.modules())
    assert sum(isinstance(m, fuse.FusedOutput) for m in fused.modules()) == 2 * fused.config.num_hidden_layers
    extra = {"token_type_ids": TYPES} if token_types else {}
    for rows in (slice(None), slice(2, 3)):  # with padding (a boolean mask) and without (no mask at all)
        ids, mask = IDS[rows], (IDS[rows] != 0).long()
        extras = {key: value[rows] for key, value in extra.items()}
        got, want = _states(fused, ids, mask, **extras), _states(reference, ids, mask, **extras)
        assert len(got) == len(want) == fused.config.num_hidden_layers + 2
        real = mask.bool()  # the padded positions are no features (zeros where the batch is packed)
        for a, b in zip(got[:-1], want[:-1], strict=True):
            torch.testing.assert_close(a[real], b[real], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(got[-1], want[-1], atol=1e-4, rtol=1e-4)  # the pooler output


@needs_onednn
@pytest.mark.skipif(
    not onednn.available(torch.bfloat16),
    reason="this CPU has no oneDNN bfloat16 path (it needs AVX-512 BW/VL/DQ or AVX-NE-CONVERT)",
)
def test_fused_bfloat16_stays_within_rounding_of_the_plain_model(tiny_model):
    plain, fused = _native(tiny_model, torch.bfloat16, fused=False), _native(tiny_model, torch.bfloat16)
    mask = (IDS != 0).long()
    real = mask.bool()
    for a, b in zip(_states(fused, IDS, mask), _states(plain, IDS, mask), strict=True):
        assert a.dtype == torch.bfloat16
        a, b = (a[real], b[real]) if a.dim() == 3 else (a, b)
        torch.testing.assert_close(a.float(), b.float(), atol=5e-2, rtol=2e-2)


@needs_onednn
def test_padding_changes_no_real_token_of_the_fused_model(tiny_model):
    model = _native(tiny_model)
    batch = _states(model, IDS, (IDS != 0).long())
    alone = _states(model, IDS[1:2, :3], torch.ones(1, 3, dtype=torch.long))
    for together, single in zip(batch[:-1], alone[:-1], strict=True):
        torch.testing.assert_close(together[1, :3], single[0], atol=1e-5, rtol=1e-5)


def test_left_alone_where_it_does_not_apply(tiny_model, monkeypatch):
    unpacked = bert.load_bert(tiny_model, tiny_model / "model.safetensors", torch.float32)
    assert fuse.fuse_bert(unpacked) == 0  # not prepacked (GPU, float16, oneDNN off)
    assert not any(isinstance(m, fuse.FusedOutput) for m in unpacked.modules())
    reference = AutoModel.from_pretrained(str(tiny_model)).eval()
    onednn.prepack_linears(reference, torch.device("cpu"), torch.float32)
    assert fuse.fuse_bert(reference) == 0  # transformers' BertModel: its modules are what hooks read
    if onednn.available():
        model = _native(tiny_model)
        assert fuse.fuse_bert(model) == 0  # already fused
        monkeypatch.setattr(fuse, "_check_parity", _raise)
        assert fuse.fuse_bert(_native(tiny_model, fused=False)) == 0  # the fused ops misbehave in this build


def _raise(dtype):
    raise RuntimeError("disagrees")


def test_fused_only_on_request(monkeypatch):
    monkeypatch.delenv(fuse.ENV, raising=False)
    assert not fuse.requested()
    monkeypatch.setenv(fuse.ENV, "1")
    assert fuse.requested()


@needs_onednn
def test_extraction_runs_fused_and_stores_transformers_features(tiny_model, corpus_csv, tmp_path, monkeypatch):
    fused_counts = []
    original = fuse.fuse_bert
    monkeypatch.setattr(fuse, "fuse_bert", lambda model: fused_counts.append(original(model)) or fused_counts[-1])
    monkeypatch.setenv(fuse.ENV, "1")
    monkeypatch.setenv("FEATX_ONEDNN", "1")  # the tiny model's linears are below the size a run packs by default
    native = extract(ExtractConfig(corpus=str(corpus_csv), output=str(tmp_path / "n.h5"), model=str(tiny_model)))
    assert fused_counts and fused_counts[0] > 0
    monkeypatch.setenv("FEATX_NATIVE", "0")
    plain = extract(ExtractConfig(corpus=str(corpus_csv), output=str(tmp_path / "t.h5"), model=str(tiny_model)))
    assert native.tokens == plain.tokens
    with h5py.File(tmp_path / "n.h5") as a, h5py.File(tmp_path / "t.h5") as b:
        paths = []
        a.visititems(lambda name, item: paths.append(name) if isinstance(item, h5py.Dataset) else None)
        compared = [path for path in paths if path.startswith("pooled/") and path in b]
        assert compared
        for path in compared:
            np.testing.assert_allclose(a[path][()], b[path][()], atol=1e-4, rtol=1e-4)

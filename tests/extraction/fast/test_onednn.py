import pytest
import torch
from transformers import AutoModel

from featx.extraction.fast import onednn
from featx.extraction.fast.onednn import PackedLinear, prepack_linears

needs_onednn = pytest.mark.skipif(not onednn.available(), reason="this torch build has no oneDNN linear ops")


def _bert(folder, dtype=torch.float32):
    return AutoModel.from_pretrained(str(folder), dtype=dtype, attn_implementation="sdpa").eval()


@needs_onednn
def test_packed_model_matches_plain_model(tiny_model):
    plain, packed = _bert(tiny_model), _bert(tiny_model)
    n_linear = sum(type(m) is torch.nn.Linear for m in plain.modules())
    assert prepack_linears(packed, torch.device("cpu"), torch.float32) == n_linear
    assert not any(type(m) is torch.nn.Linear for m in packed.modules())
    assert sum(m.attr == "gelu" for m in packed.modules() if isinstance(m, PackedLinear)) == 2  # one per layer
    ids = torch.tensor([[2, 40, 41, 42, 3, 0], [2, 43, 3, 0, 0, 0]])
    mask = (ids != 0).long()
    with torch.inference_mode():
        a = plain(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        b = packed(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    for x, y in zip(a.hidden_states, b.hidden_states, strict=False):
        torch.testing.assert_close(y, x, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(b.pooler_output, a.pooler_output, atol=1e-5, rtol=1e-5)


@needs_onednn
def test_bfloat16_linears_are_packed_where_the_cpu_has_the_instructions(tiny_model):
    # An AVX2-only CPU has no oneDNN bfloat16 path: the model stays plain and still computes what it did.
    model, plain = _bert(tiny_model, torch.bfloat16), _bert(tiny_model, torch.bfloat16)
    swapped = prepack_linears(model, torch.device("cpu"), torch.bfloat16)
    assert (swapped > 0) == onednn.available(torch.bfloat16)
    assert any(type(m) is torch.nn.Linear for m in model.modules()) == (swapped == 0)
    ids = torch.tensor([[1, 5, 6, 7, 2]])
    with torch.inference_mode():
        got, expected = model(input_ids=ids).last_hidden_state, plain(input_ids=ids).last_hidden_state
    torch.testing.assert_close(got.float(), expected.float(), atol=5e-2, rtol=5e-2)


def test_left_alone_where_it_does_not_apply(tiny_model, monkeypatch):
    model = _bert(tiny_model, torch.float16)
    assert prepack_linears(model, torch.device("cpu"), torch.float16) == 0
    assert prepack_linears(_bert(tiny_model), torch.device("meta"), torch.float32) == 0
    monkeypatch.setenv("FEATX_ONEDNN", "0")
    model = _bert(tiny_model)
    assert prepack_linears(model, torch.device("cpu"), torch.float32) == 0
    assert any(type(m) is torch.nn.Linear for m in model.modules())


@needs_onednn
def test_a_run_packs_only_linears_of_a_real_encoders_size(tiny_model, monkeypatch):
    """Below 128 x 128 weights (tiny random models only), packing and oneDNN's per-shape kernels cost more than
    they save: a run leaves such linears plain, unless FEATX_ONEDNN=1 asks for every linear."""
    from transformers import BertConfig, BertModel

    monkeypatch.delenv("FEATX_ONEDNN", raising=False)
    assert onednn.min_packed_elements() == 128 * 128
    tiny = _bert(tiny_model)  # 32 wide: nothing to pack, the model untouched
    assert prepack_linears(tiny, torch.device("cpu"), torch.float32, min_elements=onednn.min_packed_elements()) == 0
    assert any(type(m) is torch.nn.Linear for m in tiny.modules())
    settings = dict(vocab_size=30, hidden_size=128, num_hidden_layers=1, num_attention_heads=2, intermediate_size=96)
    small = BertModel(BertConfig(**settings)).eval()  # 128 x 128 attention linears packed; 128 x 96 ones not
    swapped = prepack_linears(small, torch.device("cpu"), torch.float32, min_elements=onednn.min_packed_elements())
    assert swapped == 5  # query, key, value, attention output, pooler
    assert {
        type(m).__name__ for m in (small.encoder.layer[0].intermediate.dense, small.encoder.layer[0].output.dense)
    } == {"Linear"}
    monkeypatch.setenv("FEATX_ONEDNN", "1")
    assert onednn.min_packed_elements() == 0
    assert (
        prepack_linears(
            _bert(tiny_model), torch.device("cpu"), torch.float32, min_elements=onednn.min_packed_elements()
        )
        > 0
    )

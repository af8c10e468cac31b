"""featx/extraction/fast/deberta.py: DeBERTa's relative attention bias on the band of positions a batch uses gives
transformers' scores, for both ways DeBERTa configs project positions, and is applied only where it agrees."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
from support.families import BY_NAME

from featx.extraction.fast import deberta


def _deberta(**changes):
    """A seeded tiny DeBERTa-v2 as the test families build it, with ``changes`` to its config."""
    from transformers import DebertaV2Config, DebertaV2Model

    family = BY_NAME["deberta-v2"]
    torch.manual_seed(0)
    return DebertaV2Model(DebertaV2Config(vocab_size=64, **{**family.config_args, **changes})).eval()


def _states(model, ids, mask):
    with torch.inference_mode():
        return torch.stack(model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)


@pytest.mark.parametrize(
    "changes",
    [
        {},  # the family's: max_relative_positions 16, its own position projections (share_att_key false)
        {"share_att_key": True, "position_buckets": 8, "max_relative_positions": 32},  # deberta-v3's way
        {"pos_att_type": ["c2p"]},
    ],
    ids=["v2", "v3", "c2p-only"],
)
def test_the_band_gives_transformers_scores(changes):
    plain = _deberta(**changes)
    banded = copy.deepcopy(plain)
    assert deberta.band_relative_attention(banded, torch.device("cpu"), torch.float32) == 2  # both layers
    generator = torch.Generator().manual_seed(0)
    for length in (6, 40):  # 40 tokens: past 8 buckets and 16 positions, so the log buckets are used
        ids = torch.randint(5, 60, (3, length), generator=generator)
        mask = torch.ones_like(ids)
        mask[1, length // 2 :] = 0
        want, got = _states(plain, ids, mask), _states(banded, ids, mask)
        real = mask.bool()
        assert float((got - want)[:, real].abs().max() / want[:, real].abs().max()) <= 1e-5


def test_a_module_it_disagrees_with_is_left_alone(monkeypatch):
    model = _deberta()
    monkeypatch.setattr(deberta, "_banded_bias", lambda self, *args: 0.0)  # a method that would be wrong
    assert deberta.band_relative_attention(model, torch.device("cpu"), torch.float32) == 0
    assert all("disentangled_attention_bias" not in vars(module) for module in model.modules())


def test_only_on_the_cpu_and_only_deberta(family_models):
    from transformers import BertModel

    assert deberta.band_relative_attention(_deberta(), torch.device("meta"), torch.float32) == 0
    bert = BertModel.from_pretrained(str(family_models(BY_NAME["bert"]))).eval()
    assert deberta.band_relative_attention(bert, torch.device("cpu"), torch.float32) == 0


def test_what_the_band_does_not_handle_goes_to_transformers(monkeypatch):
    """A table per row (batch-dependent relative positions) is transformers' case: the band method hands it on."""
    model = _deberta()
    deberta.band_relative_attention(model, torch.device("cpu"), torch.float32)
    attention = model.encoder.layer[0].attention.self
    calls = []
    original = deberta._transformers_bias(attention)

    def recorded(self, *args):
        calls.append(args[2].shape)
        return original(self, *args)

    monkeypatch.setattr(type(attention), "disentangled_attention_bias", recorded)
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2 * 4, 5, 8, generator=generator)
    table = torch.randn(2 * attention.pos_ebd_size, 32, generator=generator)
    steps = torch.arange(5)
    per_row = (steps[:, None] - steps[None, :]).expand(2, 5, 5)
    with torch.inference_mode():
        attention.disentangled_attention_bias(query, query, per_row[:1], table, 3)
        assert calls == []  # one table for all rows: the band method
        with contextlib.suppress(RuntimeError):  # transformers' own method may refuse it: who was asked matters
            attention.disentangled_attention_bias(query, query, per_row, table, 3)
    assert calls == [torch.Size([2, 5, 5])]

"""featx/extraction/fast/packing.py: a padded batch's blocks run on its real tokens only, with the features of the
padded pass (to float rounding), zeros at the padded positions, and the padded pass wherever packing does not
apply (little padding, a hook inside a block, not the CPU, ``FEATX_PACK=0``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.parity import padded_ids
from support.tiny import build_tiny_mpnet, build_tiny_roberta

from featx.extraction import ExtractConfig, extract
from featx.extraction.fast import bert, fuse, mpnet, onednn, packing, roberta

MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])


def _counting(monkeypatch) -> list[int]:
    """Patch ``Packing`` so that every packed pass appends its token count; the list."""
    made: list[int] = []
    original = packing.Packing.__init__

    def init(self, mask, device):
        original(self, mask, device)
        made.append(self.tokens)

    monkeypatch.setattr(packing.Packing, "__init__", init)
    return made


def test_pack_and_pad_round_trip_with_zeros_at_the_holes():
    plan = packing.Packing(MASK, torch.device("cpu"))
    padded = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3) + 1
    packed = plan.pack(padded)
    assert plan.tokens == 5 and packed.shape == (5, 3)
    torch.testing.assert_close(packed, padded[MASK.bool()])
    back = plan.pad(packed)
    torch.testing.assert_close(back[MASK.bool()], padded[MASK.bool()])
    assert not back[~MASK.bool()].any()  # zeros, not what the memory held


def test_when_a_batch_is_packed(monkeypatch):
    blocks = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(3, 3))])
    cpu = torch.device("cpu")
    assert packing.plan_packing(blocks, MASK, cpu) is not None  # 3 of 8 positions padded
    assert packing.plan_packing(blocks, None, cpu) is None
    assert packing.plan_packing(blocks, torch.ones(2, 4, dtype=torch.long), cpu) is None
    few = torch.ones(4, 8, dtype=torch.long)
    few[0, -1] = 0  # 1 of 32 padded: below PACK_FROM, the scatters would cost more than they save
    assert packing.plan_packing(blocks, few, cpu) is None
    assert packing.plan_packing(blocks, MASK, torch.device("meta")) is None  # not the CPU: stays padded
    handle = blocks[0].register_forward_pre_hook(lambda module, args: None)
    assert packing.plan_packing(blocks, MASK, cpu) is not None  # a hook on a block sees (B, L, width) as always
    handle.remove()
    handle = blocks[0][0].register_forward_hook(lambda module, args, out: None)
    assert packing.plan_packing(blocks, MASK, cpu) is None  # inside a block it would see packed rows
    handle.remove()
    monkeypatch.setenv(packing.ENV, "0")
    assert packing.plan_packing(blocks, MASK, cpu) is None


def _states(model, ids, mask) -> list[torch.Tensor]:
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    return [*out.hidden_states, *([out.pooler_output] if out.pooler_output is not None else [])]


@pytest.fixture(scope="module")
def encoders(tiny_model, tmp_path_factory) -> dict[str, tuple[torch.nn.Module, int]]:
    """Each native family's tiny encoder, prepacked as extraction runs it, with its padding id."""
    folder = tmp_path_factory.mktemp("packing")
    mpnet_folder = build_tiny_mpnet(folder / "mpnet")
    roberta_folder = build_tiny_roberta(folder / "roberta")
    models = {
        "bert": (bert.load_bert(tiny_model, tiny_model / "model.safetensors", torch.float32), 0),
        "mpnet": (mpnet.load_mpnet(mpnet_folder, mpnet_folder / "model.safetensors", torch.float32), 1),
        "roberta": (roberta.load_roberta(roberta_folder, roberta_folder / "model.safetensors", torch.float32), 1),
    }
    for model, _ in models.values():
        onednn.prepack_linears(model, torch.device("cpu"), torch.float32)
    return models


@pytest.mark.parametrize("family", ["bert", "mpnet", "roberta"])
def test_packed_pass_gives_the_padded_passs_features(encoders, family, monkeypatch):
    model, pad = encoders[family]
    ids = padded_ids(pad)
    ids[:, 0] = 2  # the first token is a real one in every family (BERT's padding id is 0)
    mask = (ids != pad).long()
    made = _counting(monkeypatch)
    packed = _states(model, ids, mask)
    assert made == [int(mask.sum())]  # this batch was packed: 16 real tokens of 24
    monkeypatch.setenv(packing.ENV, "0")
    padded = _states(model, ids, mask)
    assert made == [int(mask.sum())]  # ... and this one not
    real = mask.bool()
    for layer, (got, want) in enumerate(zip(packed, padded, strict=True)):
        if got.dim() == 3:
            if layer:  # a block's output (the embeddings run padded): zeros at the padded positions
                assert not got[~real].any()
            got, want = got[real], want[real]
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_a_hook_on_a_block_that_changes_its_output_in_place_is_honoured(encoders, monkeypatch):
    """Each block gathers its rows from the padded input it is handed, so a hook on a block (which sees the padded
    layout) may change that tensor in place and the next block computes from the changed values."""
    model, pad = encoders["bert"]
    ids = padded_ids(pad)
    ids[:, 0] = 2
    mask = (ids != pad).long()
    shift = torch.linspace(-1, 1, model.config.hidden_size)
    handle = model.encoder.layer[0].register_forward_hook(lambda module, args, out: out.add_(shift))
    try:
        made = _counting(monkeypatch)
        packed = _states(model, ids, mask)
        assert made, "a hook on a block must not turn packing off"
        monkeypatch.setenv(packing.ENV, "0")
        padded = _states(model, ids, mask)
    finally:
        handle.remove()
    real = mask.bool()
    for got, want in zip(packed[2:-1], padded[2:-1], strict=True):  # the blocks after the hooked one
        torch.testing.assert_close(got[real], want[real], atol=1e-5, rtol=1e-5)
    unhooked = _states(model, ids, mask)
    assert not torch.allclose(unhooked[2][real], packed[2][real], atol=1e-3)  # the hook did change them


@pytest.mark.skipif(not onednn.available(), reason="this torch build has no oneDNN linear ops")
def test_the_fused_blocks_pack_too(tiny_model, monkeypatch):
    model = bert.load_bert(tiny_model, tiny_model / "model.safetensors", torch.float32)
    onednn.prepack_linears(model, torch.device("cpu"), torch.float32)
    ids = padded_ids(0)
    ids[:, 0] = 2  # a real first token: BERT's padding id is 0
    plain = _states(model, ids, (ids != 0).long())
    assert fuse.fuse_bert(model) == 3 * model.config.num_hidden_layers
    made = _counting(monkeypatch)
    fused = _states(model, ids, (ids != 0).long())
    assert made, "the fused model's batch was not packed"
    real = ids != 0
    for got, want in zip(fused, plain, strict=True):
        got, want = (got[real], want[real]) if got.dim() == 3 else (got, want)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_extract_writes_the_same_features_packed_or_not(tiny_model, tmp_path: Path, monkeypatch):
    texts = ["a b", "a b c d e f g h i j k l", "c", "d e f", "g h i j k"]  # lengths far apart: padded batches
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("text\n" + "\n".join(texts) + "\n")
    made = _counting(monkeypatch)

    def run(name: str):
        config = ExtractConfig(
            corpus=corpus, output=tmp_path / name, model=str(tiny_model), progress=False, store_dtype="float32"
        )
        return extract(config).output

    packed = run("packed.h5")
    assert made, "no batch of this corpus was packed"
    monkeypatch.setenv(packing.ENV, "0")
    padded = run("padded.h5")
    import featx

    with featx.open(packed) as a, featx.open(padded) as b:
        assert a.poolings == b.poolings and a.layers == b.layers
        for pooling in a.poolings:
            for layer in a.layers:
                torch.testing.assert_close(
                    torch.as_tensor(a.features(pooling, layer)),
                    torch.as_tensor(b.features(pooling, layer)),
                    atol=1e-5,
                    rtol=1e-5,
                )

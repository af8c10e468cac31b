"""The truncated forward pass (``featx/extraction/forward/truncation.py``): a selection whose highest
layer K is below the top runs the embeddings plus K blocks only, with the same features, bit for bit, as the full pass.

For every family of the zoo (2 blocks each; ``0:2`` stores layers 0 and 1, so one block runs): the stored features
equal the full extraction's exactly and a plain transformers forward to 1e-4, the file records the blocks run, and
the blocks' calls during the run are counted with hooks (not just the output checked).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.families import BY_NAME, FAMILIES, NATIVE
from support.parity import parity, run_family

import featx
from featx.extraction.run import orchestrate

TOLERANCE = 1e-4
TEXTS_A = [
    "the cat loved the film and the critics hated the plans of the city council",
    "a dog will love this book",
    "it rained",
    "every student in the large and noisy hall read a very long story about the sea",
]


class BlockCalls:
    """Counts, from the moment the extraction's ``Runner`` is built (after the plan's own checks), the forward
    passes (calls of the model) and the calls of the model's blocks."""

    def __init__(self, monkeypatch, path: str):
        self.passes = self.blocks = 0
        self.path = path
        original = orchestrate.Runner

        def counting_runner(loaded, plan):
            runner = original(loaded, plan)
            loaded.model.register_forward_pre_hook(self._count_pass)
            for block in dict.fromkeys(loaded.model.get_submodule(self.path)):
                block.register_forward_hook(self._count_block)
            return runner

        monkeypatch.setattr(orchestrate, "Runner", counting_runner)

    def _count_pass(self, *args):
        self.passes += 1

    def _count_block(self, *args):
        self.blocks += 1


BLOCK_PATHS = {
    "distilbert": "transformer.layer",
    "albert": "encoder.albert_layer_groups",
    "modernbert": "layers",
    "t5-encoder": "encoder.block",
    "t5-encoder-only": "encoder.block",
    "bart-encoder": "layers",
    "gpt2": "h",
    "llama": "layers",
    "mistral": "layers",
    "qwen2": "layers",
    "gemma": "layers",
}


def block_path(family) -> str:
    return BLOCK_PATHS.get(family.name, "encoder.layer")


def assert_same_features(full, cut) -> None:
    with featx.open(full.output) as a, featx.open(cut.output) as b:
        assert b.poolings == a.poolings
        for site in b.sites:
            for pooling in b.site_poolings(site):
                for layer in b.site_layers(site):
                    np.testing.assert_array_equal(
                        b.features(pooling, layer, site=site), a.features(pooling, layer, site=site)
                    )


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_truncated_forward_equals_the_full_one(
    family, family_models, family_references, family_corpus, tmp_path, monkeypatch
):
    model = family_models(family)
    full = run_family(model, family_corpus, tmp_path / "full.h5")
    calls = BlockCalls(monkeypatch, block_path(family))
    cut = run_family(model, family_corpus, tmp_path / "cut.h5", layers="0:2")
    assert calls.passes > 0
    assert calls.blocks == calls.passes  # one block of two per forward pass
    assert cut.layers == [0, 1]
    assert_same_features(full, cut)
    assert parity(cut, family_references(family)) <= TOLERANCE
    with featx.open(cut.output) as features, featx.open(full.output) as whole:
        assert int(features.attrs["blocks_run"]) == 1
        assert int(whole.attrs["blocks_run"]) == 2
        assert features.attrs["implementation"] == ("native" if family.name in NATIVE else "transformers")
        assert features.fingerprint != whole.fingerprint  # the layers differ; blocks_run itself is not in it
        assert "blocks_run" not in features.fingerprint


@pytest.mark.parametrize("family", [BY_NAME["bert"], BY_NAME["llama"]], ids=lambda family: family.name)
def test_embeddings_only_run_no_block(family, family_models, family_corpus, tmp_path, monkeypatch):
    """``--layers 0``: the embeddings alone; no block runs."""
    model = family_models(family)
    full = run_family(model, family_corpus, tmp_path / "full.h5", layers="0,1", poolings="mean")
    calls = BlockCalls(monkeypatch, block_path(family))
    cut = run_family(model, family_corpus, tmp_path / "cut.h5", layers="0", poolings="mean")
    assert calls.passes > 0 and calls.blocks == 0
    with featx.open(full.output) as a, featx.open(cut.output) as b:
        assert int(b.attrs["blocks_run"]) == 0
        np.testing.assert_array_equal(b.features("mean", 0), a.features("mean", 0))


def test_transformers_bert_path_truncates_too(family_models, family_corpus, tmp_path, monkeypatch):
    """``FEATX_NATIVE=0``: the same BERT through transformers."""
    monkeypatch.setenv("FEATX_NATIVE", "0")
    model = family_models(BY_NAME["bert"])
    full = run_family(model, family_corpus, tmp_path / "full.h5")
    calls = BlockCalls(monkeypatch, "encoder.layer")
    cut = run_family(model, family_corpus, tmp_path / "cut.h5", layers="1")
    assert calls.passes > 0 and calls.blocks == calls.passes
    assert_same_features(full, cut)
    with featx.open(cut.output) as features:
        assert features.attrs["implementation"] == "transformers"
        assert int(features.attrs["blocks_run"]) == 1


@pytest.mark.slow
def test_minilm_native_runs_three_of_six_blocks(minilm_path, family_corpus, tmp_path, monkeypatch):
    """The packaged MiniLM (6 blocks) on the native path: ``1,3`` runs 3 blocks; features equal the full pass's."""
    full = run_family(minilm_path, family_corpus, tmp_path / "full.h5", poolings="mean,cls,pooler")
    calls = BlockCalls(monkeypatch, "encoder.layer")
    cut = run_family(minilm_path, family_corpus, tmp_path / "cut.h5", layers="1,3", poolings="mean,cls,pooler")
    assert calls.passes > 0 and calls.blocks == 3 * calls.passes
    with featx.open(full.output) as a, featx.open(cut.output) as b:
        assert b.attrs["implementation"] == "native" and int(b.attrs["blocks_run"]) == 3
        for pooling in ("mean", "cls", "pooler"):
            for layer in (1, 3):
                np.testing.assert_array_equal(b.features(pooling, layer), a.features(pooling, layer))


def test_hooked_sites_inside_the_blocks_run_truncated(family_models, family_corpus, tmp_path, monkeypatch):
    """``ffn`` of layer 1 sits in block 0: the pass stops after it, and the site's features are the full pass's."""
    model = family_models(BY_NAME["llama"])
    full = run_family(model, family_corpus, tmp_path / "full.h5", sites="ffn,pre_ln", poolings="mean,last")
    calls = BlockCalls(monkeypatch, "layers")
    cut = run_family(model, family_corpus, tmp_path / "cut.h5", sites="ffn,pre_ln", layers="0:2", poolings="mean,last")
    assert calls.blocks == calls.passes > 0
    with featx.open(full.output) as a, featx.open(cut.output) as b:
        assert int(b.attrs["blocks_run"]) == 1
        for site in ("ffn", "pre_ln"):
            assert b.site_layers(site) == [1]
            np.testing.assert_array_equal(b.features("mean", 1, site=site), a.features("mean", 1, site=site))


def test_attention_heads_need_the_full_pass(family_models, family_corpus, tmp_path, monkeypatch):
    """``attn_heads`` reads the attention probabilities the model returns: the whole model runs."""
    model = family_models(BY_NAME["bert"])
    calls = BlockCalls(monkeypatch, "encoder.layer")
    summary = run_family(model, family_corpus, tmp_path / "heads.h5", sites="attn_heads", layers="0:2")
    assert calls.blocks == 2 * calls.passes > 0
    with featx.open(summary.output) as features:
        assert int(features.attrs["blocks_run"]) == 2


def test_a_model_whose_blocks_cannot_be_found_runs_whole():
    """No ModuleList passes the check: ``find_blocks`` says so, and the plan runs the whole model."""
    import torch

    from featx.extraction.forward.truncation import find_blocks

    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(8, 4)
            self.parts = torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)])

        def forward(self, input_ids, attention_mask=None, output_hidden_states=False):
            x = self.embed(input_ids)
            states = [x]
            for part in self.parts:
                x = part(2 * x)  # a block's input is twice the recorded state, not the state itself
                states.append(x)
            return type("Out", (), {"hidden_states": tuple(states) if output_hidden_states else None})()

    assert find_blocks(Plain().eval(), 2, torch.device("cpu"), 8) is None


TRUNCATED_OPTIONS = {
    "long-window": dict(long="window", max_length=8, stride=2),
    "pairs-cross": dict(text_pair_col="text_pair", pair_mode="cross"),
    "pairs-separate": dict(text_pair_col="text_pair", pair_mode="separate"),
}


@pytest.mark.parametrize("name", TRUNCATED_OPTIONS)
def test_windows_and_pairs_truncate_with_the_same_features(name, family_models, tmp_path, monkeypatch):
    """``--long window`` (each window a truncated pass) and both pair modes (side b's own pass in separate mode)."""
    from support.tiny import write_csv

    rows = [(text, second, "x") for text, second in zip(TEXTS_A, reversed(TEXTS_A), strict=True)]
    corpus = write_csv(tmp_path / "pairs.csv", rows, header=("text", "text_pair", "label"))
    model = family_models(BY_NAME["bert"])
    options = dict(TRUNCATED_OPTIONS[name], poolings="all")
    full = run_family(model, corpus, tmp_path / "full.h5", **options)
    calls = BlockCalls(monkeypatch, "encoder.layer")
    cut = run_family(model, corpus, tmp_path / "cut.h5", layers="0:2", **options)
    assert calls.blocks == calls.passes > 0
    assert_same_features(full, cut)
    with featx.open(cut.output) as features:
        assert int(features.attrs["blocks_run"]) == 1
    assert "ran 1 of the model's 2 blocks: no stored layer is above layer 1" in cut.notes


def test_cli_says_how_many_blocks_ran(tiny_model, corpus_csv, tmp_path):
    from click.testing import CliRunner

    from featx.cli.app import main

    result = CliRunner().invoke(
        main, ["extract", str(corpus_csv), "--model", str(tiny_model), "--layers", "0:2", "-o", str(tmp_path / "f.h5")]
    )
    assert result.exit_code == 0, result.output
    assert "ran 1 of the model's 2 blocks: no stored layer is above layer 1" in result.output

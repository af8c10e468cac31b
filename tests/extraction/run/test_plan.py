"""``ExtractionPlan``: resolved once; the runner, the loop, the writer, the estimate and the merge read it."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from support.tiny import SENTENCES, write_csv

import featx
from featx.errors import InputError
from featx.extraction import ExtractConfig
from featx.extraction.inputs.corpus import read_corpus
from featx.extraction.model.loading import load_model, with_max_length
from featx.extraction.plan import (
    COMMIT_BLOCK_BYTES,
    CPU_BATCH_SIZE,
    CPU_MAX_TOKENS,
    MAX_BLOCK_ROWS,
    MIN_BLOCK_ROWS,
)
from featx.extraction.run.resolve import block_rows, check_room, default_batch_size, default_max_tokens, resolve_plan
from featx.extraction.shards.sharding import ShardSpec
from featx.store import FeatureFile


def _plan(tiny_model, corpus, **options):
    config = ExtractConfig(corpus=corpus, model=str(tiny_model), progress=False, **options)
    loaded = load_model(config.model, "cpu", "float32")
    return resolve_plan(config, read_corpus(corpus).sha256, loaded), loaded


def test_hidden_is_an_ordinary_first_site(tiny_model, corpus_csv):
    plan, _ = _plan(tiny_model, corpus_csv, sites="hidden,ffn,attn_heads", poolings="mean,pooler")
    assert [site.name for site in plan.sites] == ["hidden", "ffn", "attn_heads"]
    assert plan.hidden.pooled_paths == {"mean": "pooled/mean", "pooler": "pooled/pooler"}
    assert plan.sites[1].poolings == ("mean",) and plan.sites[1].width == 64 and plan.sites[1].layers == (1, 2)
    assert plan.sites[2].width == 3 * 4 and [site.name for site in plan.hooked] == ["ffn", "attn_heads"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.max_tokens = 1


def test_a_max_length_without_room_for_one_word_piece_is_refused_before_any_forward_pass(
    tiny_model, corpus_csv, tmp_path
):
    """[CLS] .. [SEP] take two of the tiny BERT's tokens: --max-length 2 leaves none for text (refused, naming the
    minimum, 3, before the model runs: no file written); 3 holds one word-piece."""
    output = tmp_path / "out.h5"
    with pytest.raises(InputError) as error:
        featx.extract(corpus_csv, model=str(tiny_model), output=output, max_length=2, progress=False, device="cpu")
    assert error.value.message == (  # featx.extract's keyword, as the caller wrote it; --max-length 2 on the CLI
        "max_length=2 leaves no room for text: this tokenizer adds 2 special tokens to every row"
    )
    assert error.value.hint.startswith("use max_length=3 or more") and not output.exists()
    loaded = load_model(str(tiny_model), "cpu", "float32")
    check_room(with_max_length(loaded, 3))  # the minimum passes
    from click.testing import CliRunner

    from featx.cli import main

    args = ["extract", str(corpus_csv), "--model", str(tiny_model), "-o", str(output), "--max-length", "2", "-q"]
    result = CliRunner().invoke(main, args)  # the command line names the flag
    assert result.exit_code == 2 and "--max-length 2 leaves no room for text" in result.output
    assert "use --max-length 3 or more" in result.output and not output.exists()


def test_block_rows_count_every_site(tiny_model, corpus_csv):
    hidden, _ = _plan(tiny_model, corpus_csv, store_dtype="float32")
    both, _ = _plan(tiny_model, corpus_csv, store_dtype="float32", sites="hidden,ffn")
    assert both.row_bytes() == hidden.row_bytes() + 4 * 2 * 64 * 4  # 4 poolings x 2 layers x 64 wide x 4 bytes
    assert block_rows(both.config, both.row_bytes()) == both.block_rows
    assert both.block_rows == max(MIN_BLOCK_ROWS, min(MAX_BLOCK_ROWS, COMMIT_BLOCK_BYTES // both.row_bytes()))
    wide = ExtractConfig(corpus=corpus_csv, commit_rows=7)
    assert block_rows(wide, 10**9) == 7


def test_defaults_are_resolved_once(tiny_model, corpus_csv):
    plan, loaded = _plan(tiny_model, corpus_csv)
    assert plan.max_tokens == CPU_MAX_TOKENS == 1024 and plan.store_dtype == "float16" and plan.layers == [0, 1, 2]
    assert plan.output == corpus_csv.with_name("corpus.features.h5") and plan.fingerprint == plan.base_fingerprint
    short, _ = _plan(tiny_model, corpus_csv, max_tokens=8)
    assert short.max_tokens == loaded.max_length  # never below one full-length row
    assert plan.batch_size == CPU_BATCH_SIZE == 256 and json.loads(plan.fingerprint)["batch_size"] == 256
    few, _ = _plan(tiny_model, corpus_csv, batch_size=3)
    assert few.batch_size == 3 and json.loads(few.fingerprint)["batch_size"] == 3


def test_a_gpu_batch_is_bounded_by_its_tokens_not_its_rows(tiny_model, corpus_csv):
    """On CUDA 65,536 padded tokens and 16,384 rows a batch (bench/gpu_host.py: 256 rows starved the GPU);
    no GPU needed to resolve them."""
    gpu = SimpleNamespace(device=torch.device("cuda"), max_length=512)
    config = ExtractConfig(corpus=corpus_csv)
    assert default_batch_size(config, gpu) == 16384 and default_max_tokens(config, gpu) == 65536
    chosen = ExtractConfig(corpus=corpus_csv, batch_size=64, max_tokens=4096)
    assert default_batch_size(chosen, gpu) == 64 and default_max_tokens(chosen, gpu) == 4096


def test_shard_plan_names_the_shard_file_and_its_own_fingerprint(tiny_model, corpus_csv):
    config = ExtractConfig(corpus=corpus_csv, model=str(tiny_model), shards=2, shard_index=1)
    loaded = load_model(config.model, "cpu", "float32")
    plan = resolve_plan(config, "sha", loaded, ShardSpec(1, 2))
    assert plan.output.name == "corpus.features.shard-01-of-02.h5" and plan.merged_output.name == "corpus.features.h5"
    assert json.loads(plan.fingerprint) == {
        "run": plan.base_fingerprint,
        "shard_index": 1,
        "shard_count": 2,
        "assignment": "round-robin-by-char-length-v1",
    }


def test_the_file_is_what_the_plan_says(tiny_model, tmp_path):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES * 3)
    options = dict(sites="hidden,ffn", poolings="mean,max", layers="1,2", commit_rows=5, store_dtype="float32")
    plan, _ = _plan(tiny_model, corpus, **options)
    summary = featx.extract(corpus, model=str(tiny_model), output=plan.output, progress=False, **options)
    with FeatureFile(summary.output) as features:
        assert features.fingerprint == plan.fingerprint
        assert features.sites == [site.name for site in plan.sites] and features.layers == plan.layers
        assert features.site_poolings("ffn") == list(plan.sites[1].poolings)
        assert features.features("max", 2, site="ffn").dtype == np.float32
    guess = featx.estimate(corpus, model=str(tiny_model), output=plan.output, calibrate=False, **options)
    assert guess.layers == plan.layers and guess.poolings == plan.poolings


def test_pad_id_comes_from_the_tokenizer_else_eos_else_a_reserved_id():
    from types import SimpleNamespace

    from featx.extraction.run.resolve import resolve_pad

    assert resolve_pad(SimpleNamespace(pad_token_id=5, eos_token_id=2)) == (5, "tokenizer")
    assert resolve_pad(SimpleNamespace(pad_token_id=None, eos_token_id=2)) == (2, "eos")
    assert resolve_pad(SimpleNamespace(pad_token_id=None, eos_token_id=None)) == (0, "reserved")

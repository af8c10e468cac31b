"""A sharded run of prompts (``--template``, ``--pool-at``) merges into the file one process writes."""

from __future__ import annotations

import h5py
import numpy as np
from support.shards import run, run_shards
from support.tiny import SENTENCES, WORDS, write_csv

import featx
from featx.extraction.shards.merge import merge
from featx.extraction.shards.sharding import ShardSpec
from featx.store.schema import ROW_INDEX

PROMPT = {"template": "Review: {text} Sentiment:", "pool_at": "marker:Sentiment:", "poolings": "mean,span_mean"}
PROMPT["contrast"] = "good, very bad"  # each shard's further answer's token counts merge in corpus order too


def test_merged_prompts_equal_one_process_and_record_row_0s_prompt(tiny_model, tmp_path):
    # Rows are dealt longest first: row 1 is the longest (shard 0), row 0 the next (shard 1).
    rows = [(" ".join(WORDS[:8]), "pos", "past", "train"), (" ".join(WORDS[:12]), "neg", "past", "test")]
    corpus = write_csv(tmp_path / "corpus.csv", rows + list(SENTENCES[:6]))
    single = run(corpus, tmp_path / "single.h5", tiny_model, **PROMPT).output
    output = tmp_path / "merged.h5"
    run_shards(corpus, output, tiny_model, 2, **PROMPT)
    with h5py.File(ShardSpec(0, 2).path(output), "r") as shard:
        assert 0 not in shard[ROW_INDEX][()]
    merged = merge(output).output
    with featx.open(merged) as a, featx.open(single) as b:
        assert a.fingerprint == b.fingerprint and a.poolings == b.poolings
        assert a.attrs["prompt_example"] == b.attrs["prompt_example"] == f"Review: {b.texts[0]} Sentiment: good"
        assert a.contrast_n_kept.shape == (8, 1) and (a.contrast_n_kept[:, 0] > a.n_kept).all()
        np.testing.assert_array_equal(a.contrast_n_kept, b.contrast_n_kept)
        for pooling in b.poolings:
            for layer in b.layers:
                np.testing.assert_allclose(a.features(pooling, layer), b.features(pooling, layer), atol=1e-5)

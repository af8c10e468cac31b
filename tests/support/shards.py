"""Sharded extraction in one process: the 30-row corpus of the merge tests and the runs of its shards."""

from __future__ import annotations

from pathlib import Path

from featx.extraction import ExtractConfig, extract
from support.tiny import SENTENCES, WORDS, write_csv

N_ROWS = 30


def shard_corpus(path: Path) -> Path:
    """30 rows of varied length (so shards differ), with labels and a split."""
    rows = []
    for k in range(N_ROWS):
        text, sentiment, tense, split = SENTENCES[k % len(SENTENCES)]
        extra = " ".join(WORDS[(k * 7 + j) % len(WORDS)] for j in range(k % 6))
        rows.append((f"{text} {extra}".strip(), sentiment, tense, split))
    return write_csv(path, rows)


def options(model, **extra) -> dict:
    return {"model": str(model), "store_dtype": "float32", "commit_rows": 4, "progress": False, **extra}


def run(corpus, output, model, **extra):
    return extract(ExtractConfig(corpus=corpus, output=output, **options(model, **extra)))


def run_shards(corpus, output, model, count, **extra):
    return [run(corpus, output, model, shards=count, shard_index=index, **extra) for index in range(count)]

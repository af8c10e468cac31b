"""Fixtures of the extraction tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.shards import shard_corpus


@pytest.fixture
def corpus(tmp_path) -> Path:
    """The merge tests' corpus: 30 rows of varied length (so shards differ), with labels and a split."""
    return shard_corpus(tmp_path / "corpus.csv")

"""Fixtures of the extraction tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.families import build_family, reference_states
from support.shards import shard_corpus
from support.tiny import SENTENCES, write_csv


@pytest.fixture
def corpus(tmp_path) -> Path:
    """The merge tests' corpus: 30 rows of varied length (so shards differ), with labels and a split."""
    return shard_corpus(tmp_path / "corpus.csv")


FAMILY_TEXTS = [row[0] for row in SENTENCES]


@pytest.fixture(scope="session")
def family_models(tmp_path_factory):
    cache = {}

    def get(family):
        if family.name not in cache:
            cache[family.name] = build_family(family, tmp_path_factory.mktemp(family.name))
        return cache[family.name]

    return get


@pytest.fixture(scope="session")
def family_references(family_models):
    cache = {}

    def get(family):
        if family.name not in cache:
            cache[family.name] = reference_states(family, family_models(family), FAMILY_TEXTS)
        return cache[family.name]

    return get


@pytest.fixture(scope="module")
def family_corpus(tmp_path_factory):
    return write_csv(tmp_path_factory.mktemp("family-corpus") / "corpus.csv", SENTENCES)

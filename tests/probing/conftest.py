"""Fixtures of the probing tests: tiny-model features files with four planted label columns
(``support.planted_columns``), built once per session."""

from __future__ import annotations

import pytest
from support.planted_columns import make_planted, make_scored


@pytest.fixture(scope="session")
def planted_file(tiny_model, tmp_path_factory):
    return make_planted(tmp_path_factory.mktemp("planted"), tiny_model)


@pytest.fixture(scope="session")
def planted_split_file(tiny_model, tmp_path_factory):
    return make_planted(tmp_path_factory.mktemp("planted-split"), tiny_model, split=True)


@pytest.fixture(scope="session")
def scored_file(tiny_model, tmp_path_factory):
    return make_scored(tmp_path_factory.mktemp("scored"), tiny_model)

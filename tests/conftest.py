"""Fixtures shared by the whole suite, and the test run's environment.

Layout: ``tests/`` mirrors the package (``extraction/``, ``store/``, ``probing/``, ``report/``, plus
``robustness/`` for faults and hostile input); fixtures used by one folder only live in that folder's
``conftest.py``; plain helpers and constants live in the ``support`` package (``tests/support/``, importable
because pytest's ``pythonpath`` holds ``tests``) and are imported from there, never from a conftest or from
another test module.

Tests marked ``slow`` start other processes (``subprocess``, ``multiprocessing``, ``torchrun``, a Jupyter
kernel), drive headless Chromium or load the MiniLM model; ``pytest -m "not slow"`` (``make test-fast``) leaves
them out.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# Before anything imports matplotlib: figures are drawn off-screen, whatever the user's default backend.
os.environ["MPLBACKEND"] = "Agg"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402  (after the environment above)
from support.probe_data import make_tiny_features  # noqa: E402
from support.tiny import SENTENCES, build_tiny_bert, write_csv  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _featx_cache_dir(tmp_path_factory):
    """The weight-fingerprint cache of a test run lives in a temporary folder, never in ~/.cache."""
    previous = os.environ.get("FEATX_CACHE_DIR")
    os.environ["FEATX_CACHE_DIR"] = str(tmp_path_factory.mktemp("featx-cache"))
    yield
    if previous is None:
        os.environ.pop("FEATX_CACHE_DIR", None)
    else:
        os.environ["FEATX_CACHE_DIR"] = previous


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 2-layer, 32-dim random BERT with a small WordPiece vocabulary, saved like a hub folder."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture
def corpus_csv(tmp_path) -> Path:
    return write_csv(tmp_path / "corpus.csv", SENTENCES)


@pytest.fixture
def minilm_path() -> Path:
    from featx.extraction.model.loading import default_model_path

    return default_model_path()


@pytest.fixture(scope="session")
def tiny_features(tiny_model, tmp_path_factory):
    """Tiny-model features of 80 rows with token states: label (2 classes) and topic (3 classes)."""
    return make_tiny_features(tmp_path_factory.mktemp("probe-data"), tiny_model)


@pytest.fixture
def features_copy(tiny_features, tmp_path):
    """A copy of ``tiny_features`` that a test may change."""
    target = tmp_path / "feats.h5"
    shutil.copy(tiny_features, target)
    return target

"""Fixtures shared by the whole suite, and the test run's environment.

Layout: ``tests/`` mirrors the package (``extraction/<subpackage>/``, ``probing/<subpackage>/``,
``report/<subpackage>/``, ``store/``, ``deploy/``, ... plus ``robustness/`` for faults and hostile input);
fixtures used by one folder only live in that folder's ``conftest.py``; plain helpers and constants live in the
``support`` package (``tests/support/``, importable because pytest's ``pythonpath`` holds ``tests``) and are
imported from there, never from a conftest or from another test module.

The features files a test only reads are built once per session (per pytest-xdist worker) here, one per kind
of input: ``tiny_features``, ``split_features``, ``pair_features``, ``word_features``, ``site_features``
(``support.shared_files``), the planted groups of the ``--group`` tests (``grouped_file``,
``leaky_split_file``) and the pairs sharing sentences of ``--group @texts`` (``chain_pairs``, ``small_pairs``).
Never write into them: copy first (``features_copy``, ``copy_features``).
``served_commands`` is one per run, not per worker: the fork server that runs ``featx`` and ``python`` without
importing torch again per command (the tutorials, ``bench/gpu.sh --smoke``).

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
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # pytest-xdist workers share the cores: one OpenMP thread each (and in the processes they start) instead of
    # every worker spinning a thread per core. Set before torch is imported, which reads it once.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # For the same reason a probe run without --jobs runs its jobs in the worker itself, not in as many joblib
    # worker processes as the machine has cores (joblib's cpu_count reads this): each would start a fresh
    # interpreter importing numpy, scikit-learn and featx for a few seconds of work. Tests that pass jobs=2 (or
    # --jobs 2) still run their jobs in two processes.
    os.environ.setdefault("LOKY_MAX_CPU_COUNT", "1")

import pytest  # noqa: E402  (after the environment above)
from support.arguments import by_folder  # noqa: E402
from support.deploy_data import make_split_features  # noqa: E402
from support.planted_groups import make_grouped  # noqa: E402
from support.planted_pairs import make_chains, make_small  # noqa: E402
from support.probe_data import make_tiny_features  # noqa: E402
from support.shared_files import (  # noqa: E402
    make_pair_features,
    make_site_features,
    make_word_features,
)
from support.tiny import SENTENCES, build_tiny_bert, write_csv  # noqa: E402
from support.tutorials import run_server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# Fixtures that take seconds to build, by the xdist group of the tests that use them (directly or through
# another fixture): one worker builds each once, where the other would build it again for the tests it drew.
# A module fixture is rebuilt on every worker that runs one of its module's tests (each test is its own unit
# under --dist loadgroup), a session fixture on every worker that needs it.
SHARED_BUILDS = {
    "task_runs": "report-task-runs",  # six kinds of tiny real runs (tests/report/conftest.py)
    "real_runs": "report-real-runs",  # two extractions and three probes
    "memory_results": "hostile-corpora",  # a child process running every hostile corpus under a memory limit
}


def pytest_configure(config):
    """The test paths of the command line folder by folder (``support.arguments``): on pytest 9.1 a folder left and
    come back to (``tests/report/text tests/test_options.py tests/report/test_report_compare.py``) is collected
    twice and its second half misses its conftest's fixtures. Only the order of the paths changes (and so of their
    tests); every worker of pytest-xdist orders them alike."""
    if not config.option.pyargs:
        config.args[:] = by_folder(list(config.args), config.invocation_params.dir)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the xdist_group marks into the tests' scopes
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the tests sharing a slow fixture (``SHARED_BUILDS``) form one group, and the modules
    holding slow tests go first (each kept whole, in folder order otherwise): the long tests then start while the
    quick ones fill the gaps, instead of one worker finishing a child-process test alone at the end. Only the
    order and the workers change; no test depends on another's."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        group = next((SHARED_BUILDS[name] for name in item.fixturenames if name in SHARED_BUILDS), None)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)  # stable: the order within each group is kept


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
def served_commands(tmp_path_factory) -> dict[str, str]:
    """``featx`` and ``python`` (``-``, ``-c``, ``-m``, a script) of this checkout through the test run's one fork
    server (``support.zygote``), so that the commands of the tutorials (tests/docs) and of ``bench/gpu.sh --smoke``
    (tests/bench) do not each import torch, transformers and scikit-learn again: ``{"featx": ..., "python": ...}``,
    shell commands. The pytest-xdist workers share it (the first to ask starts it, in the run's folder above
    theirs), so the tests using it need no common worker; it ends with the run."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    return run_server(REPO, root / "featx-server", watch=os.getppid() if worker else os.getpid())


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


@pytest.fixture(scope="session")
def split_features(tiny_model, tmp_path_factory) -> Path:
    """Sentences with a train/test split (label, topic, score; ``support.deploy_data``), mean and cls pooled: the
    deploy and scikit-learn tests' file."""
    return make_split_features(tmp_path_factory.mktemp("split-features"), tiny_model)


@pytest.fixture(scope="session")
def pair_features(tiny_model, tmp_path_factory) -> Path:
    """Sentence pairs in separate mode (``support.shared_files.pair_corpus``: score, same, split), float32."""
    return make_pair_features(tmp_path_factory.mktemp("pair-features"), tiny_model)


@pytest.fixture(scope="session")
def word_features(tiny_model, tmp_path_factory) -> tuple[Path, Path]:
    """``(features, test treebank)``: word vectors of a two-file toy treebank (upos, heads), float32."""
    return make_word_features(tmp_path_factory.mktemp("word-features"), tiny_model)


@pytest.fixture(scope="session")
def site_features(tiny_model, tmp_path_factory) -> Path:
    """The ``tiny_features`` rows with the hidden, ffn and attn_out sites, mean and cls pooled."""
    return make_site_features(tmp_path_factory.mktemp("site-features"), tiny_model)


@pytest.fixture
def features_copy(tiny_features, tmp_path):
    """A copy of ``tiny_features`` that a test may change."""
    target = tmp_path / "feats.h5"
    shutil.copy(tiny_features, target)
    return target


@pytest.fixture(scope="session")
def grouped_file(tiny_model, tmp_path_factory) -> Path:
    """Planted labels whose rows come in documents (``support.planted_groups``): the ``--group`` tests of probe,
    fit, erase, neurons, the sweep and intervene read it (never write into it)."""
    return make_grouped(tmp_path_factory.mktemp("grouped"), tiny_model)


@pytest.fixture(scope="session")
def leaky_split_file(tiny_model, tmp_path_factory) -> Path:
    """The same with a train/test split that puts a document on both sides (refused under ``--group``)."""
    return make_grouped(tmp_path_factory.mktemp("leaky-split"), tiny_model, leaky_split=True)


@pytest.fixture(scope="session")
def chain_pairs(tiny_model, tmp_path_factory):
    """``(features, chain of each row)``: 60 pairs in 20 chains linked by shared sentences, shuffled, no split
    (``support.planted_pairs``): the ``--group @texts`` tests of probe, fit and the paired tests read it."""
    return make_chains(tmp_path_factory.mktemp("chain-pairs"), tiny_model)


@pytest.fixture(scope="session")
def small_pairs(tiny_model, tmp_path_factory) -> Path:
    """``support.planted_pairs.SMALL``: nine cross-encoded pairs whose groups of each text name are written out."""
    return make_small(tmp_path_factory.mktemp("small-pairs"), tiny_model)

"""The features files a test session shares, one per kind of input, each built once (per pytest-xdist worker) by
a session fixture of the root ``conftest.py`` on the tiny random BERT: ``tiny_features`` (sentences,
``support.probe_data``), ``split_features`` (``support.deploy_data``), ``pair_features``, ``word_features`` and
``site_features``. (No test extracts a templated file only to read it: the prompt tests each extract their own.)

Tests read them and never change them: a test that writes into a features file copies it first
(``copy_features``), and results go to the test's own ``tmp_path``, never beside the shared file.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np

import featx
from support.probe_data import N_ROWS, make_rows
from support.report_runs import treebank
from support.tiny import SENTENCES, write_csv


def pair_corpus(path: Path) -> Path:
    """Every pair of ``SENTENCES`` (66 rows): a, b, a numeric score, a yes/no label and a split (one in three test)."""
    texts = [row[0] for row in SENTENCES]
    rng = np.random.default_rng(0)
    rows = []
    for index, (i, j) in enumerate(itertools.combinations(range(len(texts)), 2)):
        same = "yes" if (i + j) % 2 else "no"
        rows.append((texts[i], texts[j], f"{rng.uniform(1, 5):.2f}", same, "test" if index % 3 == 0 else "train"))
    return write_csv(path, rows, header=("a", "b", "score", "same", "split"))


def make_pair_features(folder: Path, tiny_model: Path) -> Path:
    """``pair_corpus`` in separate mode (each text alone, the SentEval feature at probe time), stored in float32."""
    from featx.extraction import ExtractConfig, extract

    config = ExtractConfig(
        corpus=pair_corpus(folder / "pairs.csv"),
        output=folder / "sep.h5",
        model=str(tiny_model),
        text_col="a",
        text_pair_col="b",
        pair_mode="separate",
        store_dtype="float32",
        progress=False,
    )
    return extract(config).output


def make_word_features(folder: Path, tiny_model: Path) -> tuple[Path, Path]:
    """A two-file treebank (40 train, 16 test sentences; tags a function of the word), its word vectors in float32:
    ``(features, test treebank)``."""
    from click.testing import CliRunner

    from featx.cli import main

    train = treebank(folder / "toy-ud-train.conllu", 40, 0, "tr")
    test = treebank(folder / "toy-ud-test.conllu", 16, 1, "te")
    args = [str(train), str(test), "--model", str(tiny_model), "-o", str(folder / "toy.h5"), "-q"]
    result = CliRunner().invoke(main, ["extract", *args, "--store-dtype", "float32"])
    assert result.exit_code == 0, result.output
    return folder / "toy.h5", test


def make_site_features(folder: Path, tiny_model: Path) -> Path:
    """The ``tiny_features`` rows (label, topic; no split) with the ``ffn`` and ``attn_out`` sites beside
    ``hidden``, mean and cls pooled."""
    corpus = write_csv(folder / "corpus.csv", make_rows(N_ROWS), header=("text", "label", "topic"))
    output = folder / "sites.h5"
    featx.extract(
        corpus, model=str(tiny_model), output=output, poolings="mean,cls", sites="ffn,attn_out", progress=False
    )
    return output


def copy_features(shared: Path, folder: Path) -> Path:
    """A copy of a shared features file in ``folder``, for a test that changes it."""
    return Path(shutil.copy(shared, folder / shared.name))


def resplit(shared: Path, folder: Path, values) -> Path:
    """A copy of a shared features file in ``folder`` whose stored rows' split values are ``values(split)``: a
    function of the stored values (a numpy array of strings, of dtype object) giving the new ones."""
    import h5py

    path = copy_features(shared, folder)
    with h5py.File(path, "r+") as file:
        split = file["rows/split"]
        stored = np.array([value.decode() if isinstance(value, bytes) else value for value in split[:]], dtype=object)
        for row, value in enumerate(values(stored.copy())):
            if value != stored[row]:
                split[row] = str(value)
    return path

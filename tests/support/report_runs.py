"""Tiny real runs of every kind ``featx report`` renders, for the report tests: a regression label (with per-row
predictions), a sentence-pair label (separate mode, with the cosine baseline), a word-level label of a two-file
treebank (lexical baseline, control task, scalar mix), and ``featx erase``, ``featx neurons`` and a sweep."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

import featx
from support.planted_columns import make_planted
from support.planted_words import TAGS
from support.tiny import WORDS, write_csv


def treebank(path: Path, n_sentences: int, seed: int, prefix: str) -> Path:
    """A CoNLL-U file whose tags are a function of the word (so every layer can read them)."""
    rng = np.random.default_rng(seed)
    vocabulary = [word for word in WORDS if word.isalpha()]
    tag_of = {word: TAGS[index % len(TAGS)] for index, word in enumerate(vocabulary)}
    lines = []
    for s in range(n_sentences):
        words = list(rng.choice(vocabulary, size=rng.integers(3, 8)))
        root = int(rng.integers(len(words)))
        lines += [f"# sent_id = {prefix}{s}", f"# text = {' '.join(words)}"]
        for i, word in enumerate(words):
            head = 0 if i == root else root + 1
            relation = "root" if i == root else ("nsubj", "obj", "amod")[i % 3]
            lines.append(f"{i + 1}\t{word}\t{word}\t{tag_of[word]}\t_\t_\t{head}\t{relation}\t_\t_")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def regression_run(folder: Path, model: Path) -> Path:
    rng = random.Random(0)
    rows = []
    for i in range(80):
        text = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 9)))
        rows.append([text, f"{rng.uniform(1, 5):.2f}", "test" if i % 4 == 0 else "train"])
    corpus = write_csv(folder / "reg.csv", rows, header=("text", "score", "split"))
    features = featx.extract(corpus, model=str(model), output=folder / "reg.h5", poolings="cls,mean", progress=False)
    options = {"jobs": 1, "n_bootstrap": 50, "predictions": "mean/ridge"}
    return featx.probe(features.output, label="score", output=folder / "reg.score.probe", **options).csv_path


def pairs_run(folder: Path, pair_features: Path) -> Path:
    """The shared sentence-pair file (separate mode, ``support.shared_files``) probed for ``same``."""
    return featx.probe(pair_features, label="same", jobs=1, n_bootstrap=50, output=folder / "pairs.same.probe").csv_path


def words_run(folder: Path, word_features: Path) -> Path:
    """The shared word file (a two-file toy treebank, ``support.shared_files``) probed for ``upos``."""
    from click.testing import CliRunner

    from featx.cli import main

    args = ["probe", str(word_features), "--label", "upos", "--pooling", "first,mean", "--jobs", "1"]
    result = CliRunner().invoke(main, [*args, "-o", str(folder / "toy.upos.probe")])
    assert result.exit_code == 0, result.output
    return folder / "toy.upos.probe.csv"


def analysis_runs(folder: Path, model: Path) -> dict[str, Path]:
    """``featx erase``, ``featx neurons`` (every layer) and a sweep of a planted features file."""
    from featx.probing.analyses.erase import erase
    from featx.probing.analyses.neurons import neurons
    from featx.probing.analyses.sweep import sweep

    (folder / "planted").mkdir()
    planted = make_planted(folder / "planted", model, n_rows=120)
    erased = erase(planted, label="a", folds=3, output=folder / "erased.h5", jobs=1, amnesic="b")
    neurons(planted, label="c", layers="all", folds=3, output=folder / "c", jobs=1, draws=2)  # 2 draws: cheaper
    sweep(planted, label="d", layers="1,2", folds=3, output=folder / "d", jobs=1)
    return {"erase": erased.csv_path, "neurons": folder / "c.csv", "sweep": folder / "d.sweep.csv"}


def every_kind(folder: Path, model: Path, pair_features: Path, word_features: Path) -> dict[str, Path]:
    """``{kind: results path}`` for regression, pairs, words, erase, neurons and sweep; the pair and word runs
    probe the session's shared files, their results written in ``folder``."""
    runs = {
        "regression": regression_run(folder, model),
        "pairs": pairs_run(folder, pair_features),
        "words": words_run(folder, word_features),
    }
    return {**runs, **analysis_runs(folder, model)}

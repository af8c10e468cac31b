"""What a structural probe reads and how it is evaluated: the sentences with a complete dependency tree (their
gold distances or depths, and which words are scored), and the folds over whole sentences.

A sentence takes part when it has at least two words and its heads make one tree (``complete_tree``): a
sentence whose heads are unknown or incomplete, point outside it or form a cycle is skipped, and the skipped
sentences are counted in a note. Punctuation (UPOS ``PUNCT``, when the file stores a ``upos`` word label) is
part of every tree the probe is trained on, and left out of every score, as in Hewitt & Manning (2019).

Folds are over sentences: the file's split (train trains, val early-stops, test scores; without val, a
holdout of the train sentences early-stops), else seeded k-fold over the sentences. Each fold's training
sentences hold out about a fifth of themselves to stop training early and to choose the best layer: no test
sentence is ever fitted on or chosen on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ...options import spoken_value
from .. import evaluation as ev
from .structural_fit import Sentences
from .structural_trees import complete_tree, tree_depths, tree_distances

PUNCTUATION = "PUNCT"  # the UPOS tag of the words scored by no structural measure
HOLDOUT = 0.2  # the share of a fold's training sentences held out for early stopping and the choice of layer


@dataclass(frozen=True)
class Treebank:
    """The sentences probed: their stored rows, word vectors' places and gold targets (``sentences``), each word's
    gold depth, which words are scored (``keep``: not punctuation) and how punctuation was decided."""

    rows: np.ndarray
    sentences: Sentences
    depths: list[np.ndarray]
    keep: list[np.ndarray]
    punctuation: str


def _punctuation(source) -> tuple[np.ndarray | None, str]:
    """Each word's punctuation flag (UPOS ``PUNCT``), or None when the file stores no ``upos`` word label."""
    if "upos" not in source.word_label_columns():
        return None, "scored on every word (no upos word label to tell punctuation)"
    names = source.word_label_names("upos")
    codes = np.asarray(source.word_labels("upos"), np.int64)
    flags = codes == names.index(PUNCTUATION) if PUNCTUATION in names else np.zeros(len(codes), bool)
    return flags, "punctuation (UPOS PUNCT) left out of every score, as in Hewitt & Manning (2019)"


def read_trees(source, mode: str, notes: list[str], path: object = "the file") -> Treebank:
    """The sentences of ``source`` with a complete tree, and their gold ``mode`` targets (distance or depth)."""
    if not getattr(source, "has_words", False):
        raise InputError(
            f"{path} has no word-level data: structural probes need dependency trees",
            "extract a treebank: featx extract treebank.conllu",
        )
    offsets = np.asarray(source.word_offsets(), np.int64)
    heads = np.asarray(source.word_heads(), np.int64)
    punct, punctuation = _punctuation(source)
    rows, targets, depths, keep = [], [], [], []
    short = broken = 0
    for row in range(len(offsets) - 1):
        start, stop = int(offsets[row]), int(offsets[row + 1])
        tree = heads[start:stop]
        if stop - start < 2:
            short += 1
            continue
        if not complete_tree(tree):
            broken += 1
            continue
        rows.append(row)
        depths.append(tree_depths(tree))
        targets.append(tree_distances(tree) if mode == "distance" else depths[-1])
        keep.append(np.ones(stop - start, bool) if punct is None else ~punct[start:stop])
    if not rows:
        raise InputError(
            f"no sentence of {path} has a complete dependency tree ({broken} with unknown or broken heads, "
            f"{short} of one word)",
            "structural probes need a treebank whose HEAD column gives every word's head (CoNLL-U)",
        )
    if broken:
        notes.append(f"{broken} sentence(s) skipped: their heads are not a complete tree (unknown, or a cycle)")
    if short:
        notes.append(f"{short} one-word sentence(s) skipped: no word pairs")
    kept = np.asarray(rows, np.int64)
    sentences = Sentences(offsets[kept], np.diff(offsets)[kept], targets)
    return Treebank(kept, sentences, depths, keep, punctuation)


@dataclass(frozen=True)
class SentenceFolds:
    """Outer folds over the probed sentences (positions into ``Treebank.rows``): (train, test) per fold, and the
    (fit, held-out) parts of its training sentences (the val sentences of a split are held out whole)."""

    evaluation: str
    folds: list[tuple[np.ndarray, np.ndarray]]
    holdouts: list[tuple[np.ndarray, np.ndarray]]

    @property
    def tested(self) -> np.ndarray:
        """Every sentence some fold tests, ascending."""
        return np.unique(np.concatenate([test for _, test in self.folds]))


def holdout(train: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(fit, held out)``: a seeded ``HOLDOUT`` share of the training sentences ``train`` (at least one) held out."""
    if len(train) < 2:
        raise InputError(
            f"a training part holds {len(train)} sentence(s): a structural probe needs two, one held out to stop",
            "give it more sentences with a complete tree, or fewer --folds",
        )
    order = np.random.default_rng(seed + 101).permutation(train)
    n_held = min(len(train) - 1, max(1, int(round(HOLDOUT * len(train)))))
    return np.sort(order[n_held:]), np.sort(order[:n_held])


def _split_parts(values: np.ndarray, notes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(train, dev, test) positions of a split, the dev part training when there is no train part; None when
    the split has no train (or dev) and test sentences to use."""
    train = np.flatnonzero(np.isin(values, ev.TRAIN_VALUES))
    dev = np.flatnonzero(np.isin(values, ev.DEV_VALUES))
    test = np.flatnonzero(np.isin(values, ev.TEST_VALUES))
    if not len(train) and len(dev) and len(test):
        notes.append(f"the split has no train part: its {len(dev)} val sentences train the structural probe")
        train, dev = dev, np.zeros(0, np.int64)
    return (train, dev, test) if len(train) and len(test) else None


def sentence_folds(split: np.ndarray | None, n: int, folds: int, seed: int, notes: list[str]) -> SentenceFolds:
    """The file's split of the ``n`` probed sentences (``split``: their values), else seeded k-fold over them."""
    if split is not None:
        values = np.char.lower(np.asarray(split, dtype=str))
        parts = _split_parts(values, notes)
        if parts is not None:
            train, dev, test = parts
            kept = (train, dev) if len(dev) else holdout(train, seed)
            return SentenceFolds("split", [(train, test)], [kept])
        if len(np.unique(values)) > 1:
            notes.append(f"the split has no train and test sentences to use; {folds}-fold cv over sentences instead")
    if n < folds:
        raise InputError(
            f"only {n} sentences with a complete tree for {folds} folds",
            f"use {spoken_value(None, 'folds', max(2, min(n, folds - 1)), '--folds')}",
        )
    from sklearn.model_selection import KFold

    pairs = [
        (np.sort(train), np.sort(test))
        for train, test in KFold(folds, shuffle=True, random_state=seed).split(np.zeros(n))
    ]
    return SentenceFolds(
        f"{folds}-fold cv", pairs, [holdout(train, seed + 1000 * i) for i, (train, _) in enumerate(pairs)]
    )

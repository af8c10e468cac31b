"""Which of a ``featx fit`` run's labelled rows (a word label's: words, each with its sentence's stored row) it
trains on, holds as val rows and tests on, read from the features file's split as ``featx probe`` reads it: rows
whose split value featx does not use are left out (``kept_in_split``), the test rows are the test split's, the
training rows every other one (``split_rows``), the val rows those of a val split beside a train and a test split
(``dev_rows``); the class codes are those of the training rows' classes (``classes_of_training``)."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..probing import DEV_VALUES, TEST_VALUES, TRAIN_VALUES, check_labels, usable_split
from ..store import FeatureFile


def kept_in_split(features: FeatureFile, sentences: np.ndarray, notes: list[str], items: str = "rows") -> np.ndarray:
    """Which labelled rows (words: ``sentences``, each one's stored row) have a split value featx uses, as featx
    probe keeps them (``probing.usable_split``): the others are left out of the choice, the head and the test
    score, said in a note; none usable: the split is not used, every row kept (said in the note). No split
    column: every row."""
    split = features.split
    if split is None:
        return np.ones(len(sentences), bool)
    usable, note = usable_split(np.asarray(split, dtype=object)[sentences], items, features.path)
    if note is not None:
        notes.append(note)
    return usable


def split_rows(features: FeatureFile, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``rows`` of the training rows (every one not in the test split) and of the test rows."""
    split = features.split
    if split is None:
        return np.arange(len(rows)), np.zeros(0, np.int64)
    values = np.char.lower(np.asarray(split, dtype=str)[rows])
    test = np.flatnonzero(np.isin(values, TEST_VALUES))
    train = np.flatnonzero(~np.isin(values, TEST_VALUES))
    return train, test


def dev_rows(features: FeatureFile, rows: np.ndarray) -> np.ndarray | None:
    """Positions in ``rows`` (stored rows; a word label's: each word's sentence) of the val (dev) split's rows,
    when the file has a train, a val and a test split. Without a train part the val rows are the training rows
    (as featx probe's word probes train on a dev part then): None, the C chosen on a holdout of them."""
    split = features.split
    if split is None:
        return None
    values = np.char.lower(np.asarray(split, dtype=str)[rows])
    dev = np.flatnonzero(np.isin(values, DEV_VALUES))
    parts = np.isin(values, TEST_VALUES).any() and np.isin(values, TRAIN_VALUES).any()
    return dev if len(dev) and parts else None


def classes_of_training(y, train, test, names, label) -> tuple[np.ndarray, list[str]]:
    """Codes renumbered over the classes the training rows hold; a test class never trained on is refused."""
    present = np.unique(y[train])
    unseen = sorted(set(np.unique(y[test]).tolist()) - set(present.tolist()))
    if unseen:
        shown = ", ".join(f"'{names[code]}'" for code in unseen[:5])
        raise InputError(
            f"class(es) {shown} of label '{label}' appear in the test split but never in the training rows",
            "check the split column, or drop it from the corpus to fit on every row",
        )
    check_labels(np.searchsorted(present, y[train]), [names[c] for c in present], label, "the training rows")
    return np.searchsorted(present, y), [names[code] for code in present]


__all__ = ["classes_of_training", "dev_rows", "kept_in_split", "split_rows"]

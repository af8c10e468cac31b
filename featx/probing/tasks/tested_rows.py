"""The digest of a run's tested rows, ``rows_sha256`` in the results meta: what ``featx compare`` pairs two
results files by.

It covers the rows whose predictions the run scores (the test rows of a split; every labelled row under
cross-validation), in order: each row's text (and pair text) or, for a word-level item, its sentence's words
and the item's word positions, and its label as the predictions file writes it. Ids, file names, label column
names and corpus digests are left out: the same rows pair whatever their names (a word input's ids are made
from its file's name; a SentEval task file and a CSV of its rows are different files of the same rows).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

KEY_BYTES = 16


def _key(parts: Sequence[str]) -> bytes:
    """A fixed-size digest of some strings, each length-prefixed (so no two lists of strings share a key)."""
    digest = hashlib.blake2b(digest_size=KEY_BYTES)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.digest()


def text_keys(texts: Sequence[str], pair_texts: Sequence[str] | None, kept: np.ndarray) -> list[bytes]:
    """The key of each kept row: its text, and its second text for sentence pairs."""
    if pair_texts is None:
        return [_key((texts[int(row)],)) for row in kept]
    return [_key((texts[int(row)], pair_texts[int(row)])) for row in kept]


def tested_positions(plan: Any) -> np.ndarray:
    """The positions (among the labelled rows or items) that some fold of the evaluation ``plan`` tests."""
    return np.unique(np.concatenate([np.asarray(test, np.int64) for _, test in plan.folds]))


def rows_sha256(key_of: Callable[[int], bytes], labels: Sequence[Any] | np.ndarray, plan: Any) -> str:
    """The sha256 of the tested rows' keys and labels, in order (``key_of(position)``: a row's key)."""
    digest = hashlib.sha256()
    for position in tested_positions(plan):
        label = str(labels[position]).encode("utf-8", "surrogatepass")
        digest.update(key_of(int(position)))
        digest.update(len(label).to_bytes(8, "little"))
        digest.update(label)
    return digest.hexdigest()


def word_rows_sha256(task: Any, plan: Any, forms: Sequence[str], offsets: np.ndarray) -> str:
    """``rows_sha256`` of a word-level run: each tested item's sentence (its words) and word position(s)
    within it, and its label."""
    sentences: dict[int, bytes] = {}

    def key_of(item: int) -> bytes:
        sentence = int(task.groups[item])
        start, end = int(offsets[sentence]), int(offsets[sentence + 1])
        if sentence not in sentences:
            sentences[sentence] = _key(forms[start:end])
        positions = np.atleast_1d(np.asarray(task.words[item], np.int64)) - start
        return sentences[sentence] + positions.astype("<i8").tobytes()

    names = np.asarray(task.class_names, dtype=object)
    return rows_sha256(key_of, names[task.y], plan)

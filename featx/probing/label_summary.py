"""What a features file holds to probe: ``describe_labels(path)``, the lines ``featx labels list`` prints.

Each sentence label column with its kind as ``featx probe`` will read it (classes with their counts, or
numbers with their range: a regression), its missing rows, and the split; then the word label columns of a
word input, and the head column that ``--arcs`` probes. Names and values come from the file as stored
(the CLI escapes control characters when it prints them).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..io import looks_continuous
from ..store import FeatureFile

SHOWN_CLASSES = 8  # the most frequent classes listed per column; the rest are counted
_NUMBER = re.compile(r"^[-+]?[0-9.,]+$")


def describe_labels(path: str | Path | None = None) -> list[str]:
    """The label columns of the features file at ``path`` (None: the last extraction in this directory), one
    line each, under a line on its rows."""
    from ..state import given_or_last

    path, using_last = given_or_last(path, "features")
    with FeatureFile(path) as features:
        lines = ([using_last] if using_last else []) + [_header(features)]
        columns = features.label_columns
        width = max((len(name) for name in columns), default=0)
        lines += ["sentence labels (featx probe --label NAME):" if columns else "no sentence label columns"]
        lines += [f"  {name.ljust(width)}  {_sentence_column(features, name)}" for name in columns]
        if features.has_words:
            lines += _word_lines(features)
        if not columns and not features.has_words:
            lines.append("  add some: featx labels add FEATURES labels.csv (an id column and label columns)")
    return lines


def _header(features: FeatureFile) -> str:
    split = features.split
    parts = f"{features.n_rows:,} rows"
    if features.pair_mode:
        parts += f" of sentence pairs (second text: {features.text_pair_col}, {features.pair_mode} mode)"
    if split is not None:
        names, counts = np.unique(np.asarray(split, dtype=str), return_counts=True)
        parts += "; split: " + ", ".join(f"{name} {count:,}" for name, count in zip(names, counts, strict=True))
    return f"{features.path}: {parts}"


def _classes(codes: np.ndarray, names: list[str]) -> str:
    """'3 classes: b 40, a 25, c 2', the most frequent first."""
    present = codes[codes >= 0]
    counts = np.bincount(present, minlength=len(names)) if len(names) else np.zeros(0, np.int64)
    order = np.argsort(-counts, kind="stable")
    shown = [f"{_name(names[i])} {counts[i]:,}" for i in order[:SHOWN_CLASSES] if counts[i] > 0]
    n = int(np.count_nonzero(counts))
    listed = ", ".join(shown) + (f", and {n - len(shown)} more" if n > len(shown) else "")
    return f"{n} class{'' if n == 1 else 'es'}: {listed}"


def _name(name: str) -> str:
    """A class name as listed: quoted where it could be read as a count or a separator ('3', ',', '')."""
    plain = name.strip() == name and name and not any(mark in name for mark in " ,;'")
    return name if plain and not _NUMBER.match(name) else repr(name)


def _missing(codes: np.ndarray) -> str:
    missing = int(np.count_nonzero(codes < 0))
    return f"; {missing:,} missing" if missing else ""


def _sentence_column(features: FeatureFile, name: str) -> str:
    codes, names = np.asarray(features.labels(name)), features.label_names(name)
    values = features.label_values(name)
    present = int(np.count_nonzero(codes >= 0))
    known = values[np.isfinite(values)] if values is not None else np.zeros(0)
    if known.size and looks_continuous(names, present):  # no known number (another writer's file): its classes
        text = (
            f"numbers: {len(np.unique(known)):,} distinct, {known.min():g} to {known.max():g}, mean {known.mean():.4g} "
            "(a regression: ridge, R²)"
        )
    else:
        text = _classes(codes, names)
    return text + _missing(codes)


def _word_lines(features: FeatureFile) -> list[str]:
    columns = features.word_label_columns()
    n_words = int(features.word_offsets()[-1])
    lines = [f"word labels ({n_words:,} words; featx probe --label NAME):" if columns else "no word label columns"]
    width = max((len(name) for name in columns), default=0)
    for name in columns:
        codes = np.asarray(features.word_labels(name))
        lines.append(f"  {name.ljust(width)}  {_classes(codes, features.word_label_names(name))}{_missing(codes)}")
    heads = features.word_heads()
    if np.any(heads >= 0):
        lines.append(f"dependency heads of {int(np.count_nonzero(heads >= 0)):,} words: featx probe --arcs")
    return lines


__all__ = ["describe_labels"]

"""``--group``: the group of every row, read from a label column (a stored one, or one of the ``--labels`` file's)
or from the stored texts themselves (the reserved names ``TEXT_GROUPS``), and the note that a pair file probed
without ``--group`` shares sentences across its rows.

The reserved names always mean the texts, never a label column of that name, compared exactly as stored:

- ``@text``: rows with the same (first) text;
- ``@text_pair``: rows with the same second text (sentence-pair files only);
- ``@texts``: rows linked by a shared sentence, as text a or text b, in chains (the connected components of the
  rows and their sentences: two rows are in one group when they share a sentence, or a row shares one with each);
  on a single-text file, as ``@text``.

Each such group is named by the row number (the predictions file's ``row``) of its first row in the features
file, and the groups are coded in that order: the names, read back from a predictions file's ``group`` column as
numbers, code the groups as the probe coded them (``featx compare`` and a study's paired tests draw the folds
again from them). A group takes every stored row of the file, labelled or not, so the groups of a file do not
depend on the label probed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import InputError
from ...options import spoken_value
from .. import evaluation as ev
from ..config import ProbeConfig
from ..shared_options import TEXT_GROUPS, refuse_group_label
from .sentences import SentenceLayout

if TYPE_CHECKING:
    from ...store import FeatureFile

# The remedy a note names where the command has no --group (featx lens): the corpus itself.
NO_GROUP = "leave the repeated texts out of the corpus to score without them"
SHOWN_CHARS = 60  # a group's text is named in a message by this many characters of it at most


def read_groups(
    features: FeatureFile, config: ProbeConfig, layout: SentenceLayout, label: str, notes: list[str]
) -> tuple[ev.Groups | None, SentenceLayout]:
    """The group of every probed row (``--group``: a label column, stored or of the ``--labels`` file, or the
    texts), or None without ``--group`` (then a note where a pair file's rows share sentences); and ``layout``
    whose per-row information holds each row's group (the predictions file's ``group`` column, which a paired
    test between runs rebuilds the run's folds by)."""
    if config.group is None:
        note_shared_texts(features, layout.kept, notes, has_group=config.has_group)
        return None, layout
    groups = group_rows(features, config.group, layout.kept, label, notes, config.labels, config.join)
    names = np.asarray(groups.names, dtype=object)
    return groups, replace(layout, row_info=layout.row_info.assign(group=names[groups.codes]))


def group_rows(
    features: FeatureFile,
    name: str,
    kept: np.ndarray,
    label: str,
    notes: list[str],
    labels: str | Path | None = None,
    join: str = "id",
) -> ev.Groups:
    """The group of every row of ``kept`` (stored rows) by ``name``: a label column (stored, or of the file of
    label columns ``labels`` joined by ``join``) or a reserved name of the texts; a group column that is the label
    or misses a kept row's group is refused before any probe is fitted (shared by ``featx probe`` and ``featx
    fit``)."""
    if name == label and name not in TEXT_GROUPS:
        refuse_group_label(name)
    codes, names = _group_column(features, name, labels, join)
    codes = codes[kept]
    missing = np.flatnonzero(codes < 0)
    if len(missing):
        example = np.asarray(features.ids, dtype=object)[kept[missing[0]]]
        raise InputError(
            f"{_group(name)}: {len(missing)} of the {len(kept)} labelled rows have no group (e.g. the row with id "
            f"'{example}')",
            "give every labelled row a group (a row alone can be a group of its own), or leave out --group",
        )
    shown = text_group_names(features, name, names) if name in TEXT_GROUPS else None
    ids = np.asarray(features.ids, dtype=object)[kept]
    groups = ev.Groups(name, codes, names, shown, np.asarray(kept), ids).take(np.arange(len(codes)))  # coded 0..k-1
    shadowed = name in TEXT_GROUPS and name in features.label_columns
    aside = f"; the label column '{name}' is not read: this name means the texts" if shadowed else ""
    notes.append(
        f"rows kept together by {_group(name)} ({groups.count} groups): the folds, the holdouts that choose C "
        f"and the bootstrap resamples take whole groups{aside}"
    )
    return groups


def group_codes(features: FeatureFile, name: str) -> np.ndarray:
    """A code per group of every stored row by ``name`` (a stored label column or a reserved name of the texts;
    -1: a row without a group, which ``group_rows`` refuses among the labelled rows; ``featx intervene --group``
    counts it a group of its own where it reads every row of the file)."""
    return _group_column(features, name, None, "id")[0]


def _group_column(
    features: FeatureFile, name: str, labels: str | Path | None, join: str
) -> tuple[np.ndarray, list[str]]:
    """The codes (-1: missing) of every stored row of the group column and the value of each code."""
    from ..labels import join_labels, stored_column

    if name in TEXT_GROUPS:
        return text_groups(features, name)
    if name in features.label_columns:
        column = stored_column(features, name)
    elif labels is not None and name in (joined := join_labels(features, labels, join)):
        column = joined[name]
    else:
        raise unknown_group(features, name, labels)
    codes = np.asarray(column.codes)
    if codes.dtype.kind == "f":  # a numeric column stored as its values (NaN: missing)
        finite = np.isfinite(codes)
        values, inverse = np.unique(codes[finite], return_inverse=True)
        coded = np.full(len(codes), -1, np.int64)
        coded[finite] = inverse
        return coded, [format(value, "g") for value in values]
    return codes.astype(np.int64), list(column.names)


def _group(name: str) -> str:
    """``--group doc`` on the command line, ``group='doc'`` from Python (``options.spoken_value``)."""
    return spoken_value(None, "group", name, "--group")


def unknown_group(features: FeatureFile, name: str, labels: str | Path | None) -> InputError:
    """``--group NAME`` naming neither a label column nor the texts (``@txt``: a misspelt reserved name)."""
    texts = ", ".join(TEXT_GROUPS if features.pair_mode is not None else ("@text", "@texts"))
    if name.startswith("@"):
        return InputError(
            f"{_group(name)}: '{name}' is not a name of the texts (and no label column)",
            f"group by the texts with {texts}, or name a label column",
        )
    where = f"{features.path} or {labels}" if labels is not None else str(features.path)
    return InputError(
        f"{_group(name)}: no label column '{name}' in {where}; label columns: "
        f"{', '.join(features.label_columns) or '(none)'}",
        "name a column whose values are the groups, store one first (featx labels add FEATURES FILE), or group "
        f"by the texts with {texts}",
    )


def text_groups(features: FeatureFile, name: str) -> tuple[np.ndarray, list[str]]:
    """The code of every stored row's group by the reserved name ``name`` and each group's name: its first row's
    number. ``@text_pair`` on a file of single texts is refused."""
    pairs = features.pair_texts
    if name == "@text_pair":
        if pairs is None:
            raise InputError(
                f"{_group('@text_pair')}: {features.path} holds single texts, not sentence pairs",
                "group by the texts with @text (or @texts), or extract the pairs with featx extract --text-pair-col",
            )
        roots = first_rows(pairs)
    else:
        roots = first_rows(features.texts) if name == "@text" else component_rows(features.texts, pairs)
    firsts, codes = np.unique(roots, return_inverse=True)
    return codes.astype(np.int64).reshape(-1), [str(int(row)) for row in firsts]


def text_group_names(features: FeatureFile, name: str, names: list[str]) -> list[str]:
    """Each group of the texts (``names``: its first row's number) as a user finds it in messages: by its text
    (``@text``), its second text (``@text_pair``), or its first pair's texts (``@texts`` of pairs), quoted."""
    pairs = features.pair_texts
    firsts = [int(row) for row in names]
    if name == "@text_pair" and pairs is not None:
        return [f"the second text {quoted_text(pairs[row])}" for row in firsts]
    if name == "@texts" and pairs is not None:
        return [
            f"the pairs sharing sentences with {quoted_text(features.texts[row])} / {quoted_text(pairs[row])}"
            for row in firsts
        ]
    return [f"the text {quoted_text(features.texts[row])}" for row in firsts]


def quoted_text(text: str, width: int = SHOWN_CHARS) -> str:
    """``text`` in double quotes for a message, its quotes, backslashes and control characters escaped (JSON's
    escapes), cut to ``width`` characters with a '…'."""
    import json

    cut = text if len(text) <= width else text[: width - 1].rstrip() + "…"
    return json.dumps(cut, ensure_ascii=False)


def first_rows(values: list[str]) -> np.ndarray:
    """Each row's first row holding the same value (exact comparison of the stored strings)."""
    if not values:
        return np.zeros(0, np.int64)
    _, first, inverse = np.unique(np.asarray(values, dtype=object), return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)].astype(np.int64)


def component_rows(texts: list[str], pairs: list[str] | None) -> np.ndarray:
    """Each row's first row of its connected component, rows linked by any sentence they share as text a or b
    (a union-find over the rows and their sentences); without pairs, ``first_rows(texts)``."""
    if pairs is None or not texts:
        return first_rows(texts)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(texts)
    sentence = _sentence_ids(texts, pairs)  # side a's then side b's sentence of every row
    rows = np.tile(np.arange(n), 2)
    links = coo_matrix((np.ones(2 * n, np.int8), (rows, n + sentence)), shape=(n + sentence.max() + 1,) * 2)
    _, component = connected_components(links, directed=False)
    first = np.full(component.max() + 1, n, np.int64)
    np.minimum.at(first, component[:n], np.arange(n))
    return first[component[:n]]


def _sentence_ids(texts: list[str], pairs: list[str]) -> np.ndarray:
    """A number per distinct sentence of either side: side a's of every row, then side b's."""
    both = np.asarray(list(texts) + list(pairs), dtype=object)
    return np.unique(both, return_inverse=True)[1].reshape(-1).astype(np.int64)


def shared_sentences(texts: list[str], pairs: list[str], rows: np.ndarray) -> int:
    """How many sentences of ``rows`` (as text a or b) occur in more than one of them."""
    if len(rows) == 0:
        return 0
    picked = np.asarray(rows, np.int64)
    sentence = _sentence_ids([texts[i] for i in picked], [pairs[i] for i in picked])
    side_a, side_b = sentence[: len(picked)], sentence[len(picked) :]
    other = side_b[side_b != side_a]  # a pair of one sentence twice holds it once
    counts = np.bincount(np.concatenate([side_a, other]), minlength=int(sentence.max()) + 1)
    return int((counts > 1).sum())


def repeated_texts(texts: list[str], split: np.ndarray | None, rows: np.ndarray) -> tuple[int, int, int | None]:
    """Copies of single texts among ``rows``: (distinct texts, rows holding them, test rows or None). Under a split
    with train and test rows, the test rows whose text a train or val row also holds (copies inside one part are
    harmless); else the texts on more than one row, which folds can put on both sides."""
    picked = np.asarray(rows, np.int64)
    if len(picked) == 0:
        return 0, 0, None
    code = np.unique(np.asarray([texts[i] for i in picked], dtype=object), return_inverse=True)[1].reshape(-1)
    train, test, dev = ev.split_parts(np.asarray(split, dtype=object)[picked]) if split is not None else ((),) * 3
    if len(train) and len(test):
        seen = np.isin(code[test], code[np.concatenate([train, dev])])
        return len(np.unique(code[test][seen])), int(seen.sum()), len(test)
    counts = np.bincount(code)
    return int((counts > 1).sum()), int(counts[counts > 1].sum()), None


def _note_repeated_texts(features: FeatureFile, rows: np.ndarray, notes: list[str], has_group: bool) -> None:
    """The note of a file of single texts whose ``rows`` repeat a text across what folds or the split separate."""
    texts, copies, tested = repeated_texts(features.texts, features.split, rows)
    if not texts:
        return
    if tested is None:
        remedy = f"{_group('@text')} keeps the rows of each text in one group" if has_group else NO_GROUP
        notes.append(
            f"{texts} text(s) occur on more than one of the {len(rows)} rows ({copies} rows in all): folds can put "
            f"copies of one text on both sides, and score what the probe memorised of it; {remedy}"
        )
    else:
        remedy = f"{_group('@text')} names them (and refuses such a split)" if has_group else NO_GROUP
        notes.append(
            f"{copies} of the {tested} test rows have a text that a train or val row also has ({texts} distinct "
            f"text(s)): their scores count what the probe memorised of it; {remedy}"
        )


def note_shared_texts(features: FeatureFile, rows: np.ndarray, notes: list[str], has_group: bool = True) -> None:
    """The note of a file probed or fitted without ``--group`` whose ``rows`` share texts: for sentence pairs, the
    sentences several pairs share (folds or a split can put pairs of one sentence on both sides; ``--group @texts``
    keeps them together); for single texts, the copies of a text that folds, or the split, put on both sides
    (``--group @text``). ``has_group=False``: the caller's command has no ``--group`` (``featx lens``), and the
    note names none (``NO_GROUP`` instead)."""
    pairs = features.pair_texts
    if pairs is None:
        _note_repeated_texts(features, rows, notes, has_group)
        return
    shared = shared_sentences(features.texts, pairs, rows)
    if shared:
        remedy = f"{_group('@texts')} keeps every pair sharing a sentence with another in one group"
        notes.append(
            f"{shared} sentence(s) occur in more than one of the {len(rows)} pairs (as text a or b): folds or a "
            f"split can put pairs sharing a sentence on both sides, and score what the probe memorised of it; "
            f"{remedy if has_group else NO_GROUP}"
        )

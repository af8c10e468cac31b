"""A corpus's group column (``[[corpora]] group = "COLUMN"``): rows that must stay together (a document, a speaker,
the sentence several pairs share). A group column is a property of a corpus, not of every corpus, so it is given
per ``[[corpora]]`` entry, never in ``[probe]``; each probe of that corpus (every model's, the one that computes
the lexical baseline, the control task) then keeps the groups whole, as ``featx probe --group COLUMN`` does, and
the paired tests between models draw those same folds again. ``group`` may also be one of the names of the texts
(``@text``, ``@text_pair``, ``@texts``: ``featx.probing.TEXT_GROUPS``), passed through to the probes as it is.

A label column is checked against the corpus file's columns by ``check_group_column``, which
``columns.check_corpora`` calls for ``study run`` (and its dry run) before any extraction, not for ``study status``
or ``study report``: a corpus without it, or whose labelled rows lack a group, is refused at its entry's ``group``
key. A name of the texts needs no column: ``@text_pair`` is refused for a corpus without a pair column
(``text_pair_col``). Then ``check_group_split`` refuses, as each probe would after every extraction, a group with
rows in two parts of the corpus's split (train, dev, test) among the rows of a probed label.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import InputError
from ..probing import TEXT_GROUPS
from .source import Place, Source


def entry_group(source: Source, place: Place, entry: dict[str, Any], labels: tuple[str, ...]) -> str | None:
    """The ``group`` of a ``[[corpora]]`` entry (None: none), a column name that is not one of its ``labels`` (a
    group column probed as a label would hold one class per group, as ``--group`` naming the label is refused)."""
    group = entry.get("group")
    where = (*place, "group")
    if group is None:
        return None
    if not isinstance(group, str) or not group.strip():
        raise source.error(
            where,
            f"group {group!r} must name a label column of the corpus or its texts ({', '.join(TEXT_GROUPS)})",
            'e.g. group = "doc", or group = "@texts" for the pairs sharing a sentence',
        )
    if group in labels and group not in TEXT_GROUPS:
        raise source.error(
            where,
            f"group '{group}' is also one of the corpus's labels: probed, every group would hold one class",
            "group by another column (a document, a speaker, a shared sentence), or take it out of labels",
        )
    return group


def check_group_column(
    source: Source, place: Place, group: str, labels: tuple[str, ...], extract: Any, columns: dict[str, Any]
) -> None:
    """The group column of a corpus (``extract``: its extraction's ``ExtractConfig``; ``columns``: the label
    columns of its file, as read): one of its label columns, and a group for every row labelled by a label the
    study probes. A name of the texts needs no column: ``@text_pair`` needs the corpus's pair column."""
    if group in TEXT_GROUPS:
        if group == "@text_pair" and not extract.text_pair_col:
            raise source.error(
                place,
                f"group @text_pair groups by the second text of a pair, and corpus {extract.corpus} has single texts",
                "group by @text or @texts, or name the pair column with text_pair_col",
            )
        return
    if group not in columns:
        named = ", ".join(columns) or "(none)"
        texts = ", ".join(TEXT_GROUPS if extract.text_pair_col else ("@text", "@texts"))
        raise source.error(
            place,
            f"corpus {extract.corpus} has no label column '{group}' to group by; its label columns: {named}",
            f"name a column of the corpus whose values are the groups (not its text, id or split column), or "
            f"group by its texts with {texts}",
        )
    codes = columns[group].codes
    for label in (name for name in labels if name in columns):
        labelled = columns[label].codes >= 0
        missing = int((labelled & (codes < 0)).sum())
        if missing:
            raise source.error(
                place,
                f"{missing} of the {int(labelled.sum())} rows of {extract.corpus} labelled '{label}' have no group",
                "give every labelled row a group (a row alone can be a group of its own), or leave out group",
            )


def check_group_split(
    source: Source, place: Place, group: str, labels: tuple[str, ...], extract: Any, read: Any
) -> None:
    """A corpus ``read`` (``featx.extraction.read_input``'s) with a split of train and test rows: no group with
    rows in two of its parts among the rows of each probed label, as ``featx probe --group`` refuses
    (``featx.probing.check_split_groups``), here before any extraction; a word corpus is left to its probes."""
    from .. import probing

    if read.split is None or read.words is not None:
        return
    if group in TEXT_GROUPS:
        texts = SimpleNamespace(texts=read.texts, pair_texts=read.pair_texts, path=extract.corpus)
        codes, names = probing.text_groups(texts, group)
        shown: list[str] | None = probing.text_group_names(texts, group, names)
    else:
        codes, names, shown = np.asarray(read.labels[group].codes), list(read.labels[group].names), None
    everyone = probing.Groups(group, codes, names, shown, np.arange(len(codes)), np.asarray(read.ids, dtype=object))
    split = np.asarray(read.split, dtype=object).astype(str)
    for label in (name for name in labels if name in read.labels):
        kept = np.flatnonzero((np.asarray(read.labels[label].codes) >= 0) & (codes >= 0))
        train, test, dev = probing.split_parts(split[kept])
        if not (len(train) and len(test)):
            continue  # cross-validated by group
        try:
            probing.check_split_groups(everyone.take(kept), train, test, dev if len(dev) else None)
        except InputError as err:
            raise source.error(place, f"corpus {extract.corpus}, label '{label}': {err.message}", err.hint) from None

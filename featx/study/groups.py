"""A corpus's group column (``[[corpora]] group = "COLUMN"``): rows that must stay together (a document, a speaker,
the sentence several pairs share). A group column is a property of a corpus, not of every corpus, so it is given
per ``[[corpora]]`` entry, never in ``[probe]``; each probe of that corpus (every model's, the one that computes
the lexical baseline, the control task) then keeps the groups whole, as ``featx probe --group COLUMN`` does, and
the paired tests between models draw those same folds again.

The column is read from the corpus file itself when the study is checked (``check_group_column``), before any
extraction: a corpus without it, or whose labelled rows lack a group, is refused at its entry's ``group`` key.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .source import Place, Source


def entry_group(source: Source, place: Place, entry: dict[str, Any], labels: tuple[str, ...]) -> str | None:
    """The ``group`` of a ``[[corpora]]`` entry (None: none), a column name that is not one of its ``labels`` (a
    group column probed as a label would hold one class per group, as ``--group`` naming the label is refused)."""
    group = entry.get("group")
    where = (*place, "group")
    if group is None:
        return None
    if not isinstance(group, str) or not group.strip():
        raise source.error(where, f"group {group!r} must name a label column of the corpus", 'e.g. group = "doc"')
    if group in labels:
        raise source.error(
            where,
            f"group '{group}' is also one of the corpus's labels: probed, every group would hold one class",
            "group by another column (a document, a speaker, a shared sentence), or take it out of labels",
        )
    return group


def check_group_column(source: Source, place: Place, group: str, labels: tuple[str, ...], extract: Any) -> None:
    """The group column of a corpus, read from the corpus file (``extract``: its extraction's ``ExtractConfig``):
    one of its label columns, and a group for every row labelled by a label the study probes that the corpus
    has (a label it lacks fails its own probe, as without a group)."""
    from ..extraction import read_input

    try:
        corpus = read_input(extract)
    except InputError as err:
        raise source.error(place, f"its group column cannot be checked: {err.message}", err.hint) from None
    columns = corpus.labels
    if group not in columns:
        named = ", ".join(columns) or "(none)"
        raise source.error(
            place,
            f"corpus {extract.corpus} has no label column '{group}' to group by; its label columns: {named}",
            "name a column of the corpus whose values are the groups (not its text, id or split column)",
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

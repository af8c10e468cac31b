"""A study's corpora read before any work (``check_corpora``, by ``study run`` and its dry run; not by ``study
status`` or ``study report``, which read no corpus): each corpus file once, as its extraction will read it (the
first model's ``ExtractConfig``), so that a label the study names that a corpus lacks is refused at that entry's
``labels`` key, naming the corpus, the label and the columns it has, before the first forward pass (not a failed
probe after its extraction ran), and its ``group`` column is checked against the same read (``groups``).

A corpus that cannot be read at all is left to its extraction cell, which fails with the reader's error (the
study goes on with the others); one with a ``group`` column is refused here, as that column cannot be checked.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..probing import TEXT_GROUPS
from .groups import check_group_column, check_group_split
from .source import Place, Source


def check_corpora(config: Any) -> None:
    """Each corpus of a ``StudyConfig``: its file read once, its labels there (``check_label_columns``) and its
    group (``groups.check_group_column``)."""
    from ..extraction import read_input

    for corpus in config.corpora:
        if not corpus.path.exists():  # gone, its extractions done (else missing.check_missing refused the run)
            continue
        extract = config.extract_config(config.models[0], corpus)
        group_place = ("corpora", corpus.entry, "group")
        try:
            read = read_input(extract)
        except InputError as err:
            if corpus.group is None or corpus.group in TEXT_GROUPS:
                continue  # its extraction cell fails with this error; the other cells go on
            cannot = f"its group column cannot be checked: {err.message}"
            raise config.source.error(group_place, cannot, err.hint) from None
        check_label_columns(config.source, ("corpora", corpus.entry, "labels"), corpus.labels, extract, read)
        if corpus.group is not None:
            check_group_column(config.source, group_place, corpus.group, corpus.labels, extract, read.labels)
            if dict(config.probe).get("min_class_rows") is None:  # else the probes may drop some of the rows
                check_group_split(config.source, group_place, corpus.group, corpus.labels, extract, read)


def check_label_columns(source: Source, place: Place, labels: tuple[str, ...], extract: Any, read: Any) -> None:
    """Every one of ``labels`` is a label column of the corpus ``read`` (``featx.extraction.read_input``'s
    ``Corpus``): a sentence label column, or a word label column of a word input."""
    words = list(read.words.labels) if read.words is not None else []
    for label in labels:
        if label in read.labels or label in words:
            continue
        named = ", ".join(read.labels) or "(none)"
        also = f"; word label columns: {', '.join(words) or '(none)'}" if read.words is not None else ""
        raise source.error(
            place,
            f"corpus {extract.corpus} has no label column '{label}'; its label columns: {named}{also}",
            f"take '{label}' out of this corpus's labels, or add the column to its file",
        )

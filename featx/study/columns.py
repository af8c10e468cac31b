"""A study's corpora read before any work (``check_corpora``, by ``study run`` and its dry run; not by ``study
status`` or ``study report``, which read no corpus): each corpus file once, as its extraction will read it (the
first model's ``ExtractConfig``), so that a label the study names that a corpus lacks is refused at that entry's
``labels`` key, naming the corpus, the label and the columns it has, before the first forward pass (not a failed
probe after its extraction ran), and its ``group`` column is checked against the same read (``groups``), and the
study's ``metric`` against each label's task (``check_metric_fits``), and ``[probe]``'s folds against each label's
rows where the corpus has no train/test split (``check_folds_fit``).

A corpus that cannot be read at all is left to its extraction cell, which fails with the reader's error (the
study goes on with the others); one with a ``group`` column is refused here, as that column cannot be checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from ..probing import TEXT_GROUPS
from .config import FEATURES_NAME
from .groups import check_group_column, check_group_split
from .source import Place, Source


def check_corpora(config: Any, folds: bool = True) -> None:
    """Each corpus of a ``StudyConfig``: its file read once, its labels there (``check_label_columns``) and its
    group (``groups.check_group_column``); then (``folds``) ``[probe]``'s folds against each (``check_folds_fit``)."""
    from ..extraction import read_input

    reads = []
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
        check_metric_fits(config, corpus, read)
        if corpus.group is not None:
            check_group_column(config.source, group_place, corpus.group, corpus.labels, extract, read.labels)
            if dict(config.probe).get("min_class_rows") is None:  # else the probes may drop some of the rows
                check_group_split(config.source, group_place, corpus.group, corpus.labels, extract, read)
        reads.append((corpus, read))
    for corpus, read in (
        reads if folds else ()
    ):  # after every corpus's keys: a [probe] folds that fits none is named once, last
        check_folds_fit(config, corpus, read)


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


class _ReadValues:
    """The corpus read as ``featx.probing.resolve_task`` reads a features file: each label's values, or None for a
    column that is not numeric (the stored file's ``label_values``)."""

    def __init__(self, read: Any) -> None:
        self._labels = read.labels

    def label_values(self, label: str):
        column = self._labels[label]
        return column.values() if column.numeric else None


def check_metric_fits(config: Any, corpus: Any, read: Any) -> None:
    """The study's ``metric`` against each of the corpus's labels as its probes will take it (classes, or a number:
    ``--bins``, ``--task`` and ``featx.probing.resolve_task`` on the values read; a word label is classes): a
    ``metric = "r2"`` beside a class label is refused at the metric key before any extraction, not by every probe
    of that label after them."""
    if config.metric is None:
        return
    from ..probing import check_metric, resolve_task

    for label in corpus.labels:
        probe = config.probe_config(Path(FEATURES_NAME), label, lexical=True)
        regression = False
        if label in read.labels and probe.bins is None:
            try:
                regression = resolve_task(_ReadValues(read), label, probe.task) == "regression"
            except InputError:  # --task regression of a column that is not numeric: its probes say so
                continue
        try:
            check_metric(config.metric, regression, label)
        except InputError as err:
            what = "a number (regression)" if regression else "classes"
            raise config.source.error(
                ("study", "metric"),
                f"metric '{config.metric}' does not fit label '{label}' of corpus '{corpus.name}', probed as {what}",
                f"{err.hint}, or probe that label in a study of its own",
            ) from None


def check_folds_fit(config: Any, corpus: Any, read: Any) -> None:
    """Each sentence label's evaluation plan made from the corpus ``read`` as its probes will make it (the split,
    else ``[probe]``'s folds: stratified over classes, or over the rows of a number), so that more folds than a
    class has rows is refused at the ``folds`` key before any extraction, not by every probe after them. Left to the
    probes: word labels, and runs whose ``min_class_rows`` or ``bins`` change the rows or classes first."""
    import numpy as np

    from ..probing import column_plan, regression_plan, resolve_task, split_parts

    if dict(config.probe).get("min_class_rows") is not None:
        return
    split = np.asarray(read.split, dtype=object).astype(str) if read.split is not None else None
    for label in (label for label in corpus.labels if label in read.labels):
        probe = config.probe_config(Path(FEATURES_NAME), label, lexical=True)
        column, folds, seed = read.labels[label], int(probe.folds), int(probe.seed)
        labelled = column.codes >= 0
        if probe.bins is not None or (split is not None and all(map(len, split_parts(split[labelled])[:2]))):
            continue  # binned classes, or the corpus's train/test split: no folds
        try:
            task = resolve_task(_ReadValues(read), label, probe.task)
        except InputError:  # --task regression of a column that is not numeric: its probes say so
            continue
        try:
            if task == "regression":
                regression_plan(column.values()[labelled], None, folds, seed)
            else:
                column_plan(column, None, folds, seed, label)
        except InputError as err:
            hint = (err.hint or "").replace("--folds ", "folds = ")  # as the study file spells it
            raise config.source.error(
                config.probe_key("fold"), f"corpus '{corpus.name}': {err.message}", hint
            ) from None

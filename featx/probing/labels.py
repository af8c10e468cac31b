"""Label columns made ready to probe: from the features file or joined from another file (``--labels``), made into
classes (``label_classes``: bins, refusals, rare classes), and the split values said."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .. import store
from ..checks import path_like
from ..errors import InputError
from ..io import (
    LabelColumn,
    label_column,
    normalise_sep,
    parse_table,
    read_source,
    refuse_other_formats,
    unwrap_gzip,
)
from ..options import Check, Options, keywords_of, option, sep_option, spoken_value
from ..store import FeatureFile
from .evaluation import usable_split
from .shared_options import check_join, join_option


@dataclass(frozen=True)
class LabelsAddConfig(Options):
    """Every option of ``featx labels add``, declared once: the command line's flags are made from these
    fields (``add_labels`` takes them one by one)."""

    features: str | Path
    label_file: str | Path
    join: str = join_option()
    missing_labels: str = option(
        "empty",
        flag="--missing-labels",
        help="Label values read as missing: empty, pandas, or a comma list such as 'NA,-'.",
    )
    sep: str | None = sep_option(what="LABEL_FILE's delimiter")

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("features", "label_file"),
        check_join,
    )


def read_label_file(path: str | Path, sep: str | None = None, encoding: str = "utf-8"):
    """Header, rows and lines of a label file (CSV/TSV/JSONL/Parquet, gz too; the delimiter sniffed)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"label file {path} does not exist", "give a CSV/TSV/JSONL file with an id column and labels")
    raw = read_source(path)
    suffix, data = unwrap_gzip(raw, path)
    refuse_other_formats(data, path, suffix)
    resave = f"re-save the label file as {encoding.upper()}: it is read as such"  # no label-file command has --encoding
    header, rows, lines = parse_table(data, path, suffix, encoding, normalise_sep(sep), [], resave)
    header = [name.strip() for name in header]
    _check_header(header, path)
    if not rows:
        raise InputError(f"{path} has a header but no rows", "add one row per stored row")
    return header, rows, lines


def _check_header(header: list[str], path: Path) -> None:
    """Every column named, no NUL in a name (HDF5 cannot store it), no name twice (the last would silently win)."""
    for position, name in enumerate(header, start=1):
        if not name:
            raise InputError(f"{path}: column {position} of the header has no name", "give every column a name")
        if "\0" in name:
            raise InputError(
                f"{path}: the name of column {position} ({name!r}) contains a NUL character",
                "remove it from the header",
            )
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise InputError(
            f"{path}: the header repeats column(s) {', '.join(repr(name) for name in duplicates)}",
            "give every column a unique name (only one of them would be used)",
        )


def _join(how: str) -> str:
    """``--join row`` on the command line, ``join='row'`` from Python (``options.spoken_value``)."""
    return spoken_value(None, "join", how, "--join")


def _key_of_rows(header, rows, lines, path: Path, join: str, id_col: str) -> tuple[dict[str, int], int | None]:
    """Each key (id, or data row number) -> its row in the label file; and the key column's position."""
    if join == "row":
        return {str(number): number for number in range(len(rows))}, None
    if id_col not in header:
        raise InputError(
            f"{path} has no id column '{id_col}' to join on; columns found: {', '.join(header)}",
            f"add it, or use {_join('row')} when the file's rows are the corpus rows in order",
        )
    position = header.index(id_col)
    keys: dict[str, int] = {}
    for number, row in enumerate(rows):
        key = row[position].strip()
        if key in keys:
            raise InputError(
                f"{path}: id '{key}' appears twice in column '{id_col}' "
                f"(line {lines[keys[key]]} and line {lines[number]})",
                "each stored row must match once",
            )
        keys[key] = number
    return keys, position


def _check_row_count(features: FeatureFile, path: Path, n_label_rows: int) -> None:
    """With --join row, a label file longer than the corpus is refused (its rows are not the corpus rows)."""
    attrs = features.attrs
    corpus_rows = int(attrs.get(store.schema.CORPUS_N_ROWS) or attrs.get(store.schema.N_ROWS) or len(features.ids))
    if n_label_rows > corpus_rows:
        raise InputError(
            f"{path} has {n_label_rows} data rows but {features.path} has {corpus_rows} corpus rows: with "
            f"{_join('row')} the label file's rows must be the corpus rows, in order",
            f"remove the extra rows, or give both files an id column and use {_join('id')}",
        )


def join_labels(
    features: FeatureFile, path: str | Path, join: str = "id", missing_labels: str = "empty", sep: str | None = None
) -> dict[str, LabelColumn]:
    """The label columns of ``path`` in the stored row order; every stored row must match exactly once. ``join``
    is checked by the caller's config (``ProbeConfig``, ``LabelsAddConfig``): id or row."""
    from ..io import missing_markers

    path = Path(path)
    header, rows, lines = read_label_file(path, sep)
    stored_id_col = str(features.attrs.get(store.schema.ID_COL, "") or "")
    if join == "row" and stored_id_col:
        raise InputError(
            f"{features.path} has ids from column '{stored_id_col}', not row numbers",
            f"use {_join('id')} with that column in the label file",
        )
    keys, position = _key_of_rows(header, rows, lines, path, join, stored_id_col or "id")
    if join == "row":
        _check_row_count(features, path, len(rows))
    ids = features.ids
    unmatched = [row_id for row_id in ids if row_id not in keys]
    if unmatched:
        shown = ", ".join(unmatched[:5]) + (f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else "")
        what = "data row numbers" if join == "row" else f"ids in column '{stored_id_col or 'id'}'"
        raise InputError(
            f"{len(unmatched)} of the {len(ids)} stored rows have no match in {path} (by {what}): {shown}",
            f"every stored row needs one row in the label file: check the file, or {_join('id')} (or 'row')",
        )
    order = [keys[row_id] for row_id in ids]
    skip = {
        position,
        *(
            index
            for index, name in enumerate(header)
            if name in ("text", "split", str(features.attrs.get(store.schema.TEXT_COL, "text")))
        ),
    }
    markers = missing_markers(missing_labels)
    columns = {
        name: label_column(name, [rows[i][index] for i in order], markers)
        for index, name in enumerate(header)
        if index not in skip
    }
    if not columns:
        raise InputError(f"{path} has no label columns besides the join column", "add a column of labels")
    return columns


def joined_label(
    features: FeatureFile, path: str | Path, join: str, label: str | None, notes: list[str]
) -> LabelColumn:
    """The column ``label`` (None: ``label``, else the first) of a file of label columns joined to the stored
    rows, said in ``notes``: what ``featx probe --labels FILE`` and its ``--sweep`` probe."""
    columns = join_labels(features, path, join)
    names = list(columns)
    label = label or ("label" if "label" in columns else names[0])
    if label not in columns:
        raise InputError(
            f"{path} has no label column '{label}'; label columns: {', '.join(names)}",
            f"pick one with {spoken_value(None, 'label', 'NAME', '--label', shown='NAME')}",
        )
    notes.append(f"labels from {path} (joined by {join}): probing '{label}'")
    return columns[label]


def stored_column(features: FeatureFile, label: str) -> LabelColumn:
    codes = features.labels(label)
    return _label_column_from(label, codes, features.label_names(label))


def _label_column_from(name: str, codes: np.ndarray, names: list[str]) -> LabelColumn:
    from ..io import NUMBER

    numeric = bool(names) and all(NUMBER.match(value) for value in names)
    return LabelColumn(name=name, codes=np.asarray(codes), names=list(names), numeric=numeric)


def in_split(present: np.ndarray, split: np.ndarray | None, notes: list[str], source: object) -> np.ndarray:
    """``present`` (a mask of the stored rows a probe would use: those with a label) less the rows whose split value
    is none of train, val (its aliases) and test, said in a note (``evaluation.usable_split``; featx fit leaves
    them out alike); when no such row has a usable value, the split is not used (every row kept, said in the note).
    No split column: ``present``."""
    if split is None:
        return present
    rows = np.flatnonzero(present)
    usable, note = usable_split(np.asarray(split, dtype=object)[rows], "rows", source)
    if note is None:
        return present
    notes.append(note)
    kept = np.array(present, dtype=bool)
    kept[rows[~usable]] = False
    return kept


def column_in_split(column: LabelColumn, split: np.ndarray | None, notes: list[str], source: object) -> LabelColumn:
    """``column`` with the rows ``in_split`` leaves out missing (their code -1)."""
    kept = in_split(column.codes >= 0, split, notes, source)
    if kept.sum() == (column.codes >= 0).sum():
        return column
    return replace(column, codes=np.where(kept, column.codes, -1).astype(column.codes.dtype))


def split_note(plan, split: np.ndarray, kept: np.ndarray) -> str | None:
    """Which split values were used as train/dev/test, e.g. ``dev = 'val' (1,000 rows)``."""
    if not plan.is_split:
        return None
    values = np.asarray(split, dtype=object)[kept]
    train, test = plan.folds[0]
    dev = plan.dev[0]
    parts = []
    for role, rows in (("train", train), ("dev", dev), ("test", test)):
        if rows is None or not len(rows):
            continue
        found = sorted(set(map(str, values[rows])))
        parts.append(f"{role} = {', '.join(repr(value) for value in found)} ({len(rows):,} rows)")
    return "split: " + "; ".join(parts)


@keywords_of(LabelsAddConfig)  # from Python, a message names the keyword given (features=''), the CLI the flag
def add_labels(config: LabelsAddConfig | str | Path, label_file: str | Path | None = None, **options: Any) -> str:
    """``featx labels add``: store the label columns of ``label_file`` in the features file for good
    (atomically); returns the line to show. ``config`` is a ``LabelsAddConfig``, or the features file's path
    with ``label_file`` and ``options`` (``join``, ``missing_labels``, ``sep``) its other fields, checked first.

    The whole read-check-write holds the features file's ``OutputLock`` (the one ``featx extract`` takes), so a
    second writer at the same time is refused, never silently overwritten; copies left by a killed add are
    removed first. A features path that is a symbolic link is written through: its target gets the columns and
    the link stays a link."""
    from ..safe_files import writing
    from ..store import OutputLock, add_label_columns, remove_stale_additions
    from .inputs import open_complete

    config = LabelsAddConfig.build(config, **({"label_file": label_file} if label_file is not None else {}), **options)
    features_path, labels_path = Path(config.features), config.label_file
    join, missing_labels, sep = config.join, config.missing_labels, config.sep
    target = features_path.resolve() if features_path.is_symlink() else features_path
    with OutputLock(target, "featx labels add", "wait for it to finish, then run featx labels add again"):
        remove_stale_additions(target)
        with open_complete(target) as features:
            columns = join_labels(features, labels_path, join, missing_labels, sep)
            clash = [name for name in columns if name in features.label_columns]
        if clash:
            raise InputError(
                f"{features_path} already has label column(s) {', '.join(clash)}",
                "rename them in the label file, or probe them without storing: featx probe --labels FILE",
            )
        with writing(target, "free disk space (the file is copied beside itself) or make its folder writable"):
            add_label_columns(target, columns)
    shown = ", ".join(
        f"{name} ({'numbers: ' if column.looks_continuous else ''}{len(column.names)} "
        f"{'distinct' if column.looks_continuous else 'classes'}, {column.n_missing} missing)"
        for name, column in columns.items()
    )
    through = f" (through the link to {target})" if target != features_path else ""
    return f"added to {features_path}{through}: {shown}"

"""A label column made into the classes a probe fits: quantile bins (``--bins``), a continuous-looking column or a
score with a few cells that are not numbers refused, rare classes dropped (``--min-class-rows``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..io import LabelColumn, looks_continuous, odd_cells
from ..options import Placeholder, spoken, spoken_value
from .evaluation import split_parts


@dataclass(frozen=True)
class Bins:
    """``--bins``' class edges and the rows whose values drew them: the meta's ``bins``."""

    edges: list[float]
    rows: str  # "train and val" (a split's non-test rows) or "every labelled row" (cross-validation)
    n_rows: int  # how many rows' values drew the edges

    def to_dict(self) -> dict[str, Any]:
        return {"edges": self.edges, "rows": self.rows, "n_rows": self.n_rows}


def bin_rows(present: np.ndarray, split: np.ndarray | None) -> tuple[np.ndarray, str]:
    """The rows (of ``present``, the rows with a value) whose values draw ``--bins``' edges: under a split with
    train and test rows, its train and val rows only (a test row's value never moves an edge); else (no split:
    cross-validation) every row with a value, since the bins then define the label's classes for every fold."""
    if split is not None:
        train, test, dev = split_parts(np.asarray(split, dtype=object)[present])
        if len(train) and len(test):
            return present[np.sort(np.concatenate([train, dev]))], "train and val"
    return present, "every labelled row"


def binned(column: LabelColumn, bins: int, split: np.ndarray | None = None) -> tuple[LabelColumn, Bins]:
    """Quantile bins of a numeric column: ``bins`` classes (fewer when quantiles coincide), their edges the
    quantiles of the rows ``bin_rows`` picks by the stored rows' ``split`` (None: every row with a value). A value
    beyond the outer edges (a test row's) falls in the first or the last bin."""
    if not column.numeric:
        raise InputError(
            f"--bins needs a numeric label; '{column.name}' has values such as '{column.names[0]}'",
            "leave --bins out for a column of classes",
        )
    values = column.values()
    present = ~np.isnan(values)
    drawn, rows = bin_rows(np.flatnonzero(present), split)
    edges = np.unique(np.quantile(values[drawn], np.linspace(0, 1, int(bins) + 1)))
    if len(edges) < 3:
        _refuse_one_bin(column, bins, values[drawn])
    inner = edges[1:-1]
    codes = np.full(len(values), -1, dtype=np.int32)
    codes[present] = np.searchsorted(inner, values[present], side="right")
    bounds = list(edges)
    names = [
        f"[{bounds[i]:.4g}, {bounds[i + 1]:.4g}{']' if i == len(bounds) - 2 else ')'}" for i in range(len(bounds) - 1)
    ]
    found = Bins([float(edge) for edge in edges], rows, int(len(drawn)))
    return LabelColumn(name=column.name, codes=codes, names=names), found


def _refuse_one_bin(column: LabelColumn, bins: int, drawn: np.ndarray) -> None:
    """``--bins`` whose quantiles coincide into a single bin (a 0/1 column, mostly one value): refused, naming the
    values, rather than probed as a label of one class."""
    distinct = np.unique(drawn)
    shown = ", ".join(f"{value:g}" for value in distinct[:5]) + (", ..." if len(distinct) > 5 else "")
    raise InputError(
        f"{spoken_value(None, 'bins', bins, '--bins')}: the quantiles of label '{column.name}' coincide, so its "
        f"values make one bin ({len(distinct)} distinct values ({shown}))",
        f"probe it as classes without {spoken(None, 'bins', '--bins')}"
        if len(distinct) > 1
        else f"pick another column with {spoken_value(None, 'label', 'NAME', '--label', shown='NAME')}",
    )


def bins_hint() -> str:
    """``--bins N`` on the command line, ``bins=N`` from Python: how to make classes of a number."""
    return f"bin it into classes with {spoken_value(None, 'bins', Placeholder('N'), '--bins')} (quantiles)"


def prepare(
    column: LabelColumn,
    bins: int | None,
    min_class_rows: int | None,
    notes: list[str],
    number_hint: str | None = None,
    split: np.ndarray | None = None,
) -> tuple[LabelColumn, Bins | None]:
    """The column to probe as classes (and its ``--bins`` edges, None without): binned when asked (the edges from
    the train and val rows of the stored rows' ``split``, ``bin_rows``), refused when it looks continuous
    (``number_hint``: what to do instead; None: bin it or probe it with a regression probe), rare classes
    dropped."""
    found = None
    if bins is not None:
        column, found = binned(column, bins, split)
        drawn = f"the {found.rows} rows" if found.rows == "train and val" else found.rows
        notes.append(
            f"label '{column.name}' in {len(column.names)} quantile bins (edges from {drawn}, {found.n_rows}): "
            f"{', '.join(column.names)}"
        )
    elif column.numeric and looks_continuous(column.names, int((column.codes >= 0).sum())):
        low, high = column.names[0], column.names[-1]
        raise InputError(
            f"label '{column.name}' looks continuous ({len(column.names)} distinct numbers from {low} "
            f"to {high}); probing it as classes would make {len(column.names)} classes",
            number_hint or f"{bins_hint()}, or probe it with a regression probe",
        )
    else:
        _refuse_nearly_numeric(column)
    return _rare_dropped(column, min_class_rows, notes), found


def _refuse_nearly_numeric(column: LabelColumn) -> None:
    """Refuse a score with a few cells that are not numbers (``io.odd_cells``): read as classes it would make one
    class per distinct number, and the split check or the probe would fail later with a puzzling message."""
    odd = [] if column.numeric else odd_cells(column.names, column.codes)
    if not odd:
        return
    odd_rows, labelled = sum(count for _, count in odd), int((column.codes >= 0).sum())
    shown = ", ".join(f"{value!r} ({count} row(s))" for value, count in odd[:5])
    raise InputError(
        f"label '{column.name}' holds numbers ({len(column.names) - len(odd)} distinct) except in {odd_rows} of its "
        f"{labelled} rows: {shown}; read as classes it would make {len(column.names)} classes",
        f"fix those cells, or mark them missing with --missing-labels {','.join(value for value, _ in odd[:5])} "
        "(featx extract, featx labels add) to leave them unlabelled; then it probes as a score",
    )


def _rare_dropped(column: LabelColumn, min_class_rows: int | None, notes: list[str]) -> LabelColumn:
    """``column`` without its classes of fewer than ``--min-class-rows`` rows (said in a note)."""
    if min_class_rows:
        counts = np.bincount(column.codes[column.codes >= 0], minlength=len(column.names))
        rare = [code for code in range(len(column.names)) if 0 < counts[code] < int(min_class_rows)]
        if rare:
            codes = column.codes.copy()
            codes[np.isin(codes, rare)] = -1
            shown = ", ".join(f"'{column.names[code]}' ({counts[code]})" for code in rare[:10])
            more = f" and {len(rare) - 10} more" if len(rare) > 10 else ""
            notes.append(
                f"--min-class-rows {min_class_rows}: dropped {len(rare)} class(es) of label "
                f"'{column.name}' with fewer rows: {shown}{more}"
            )
            column = LabelColumn(name=column.name, codes=codes, names=column.names)
            _check_classes_left(column, counts, int(min_class_rows))
    return column


def _check_classes_left(column: LabelColumn, counts: np.ndarray, min_class_rows: int) -> None:
    """Refuse, naming --min-class-rows, a threshold that leaves fewer than two classes to probe."""
    left = [code for code in range(len(column.names)) if counts[code] >= min_class_rows]
    if len(left) >= 2:
        return
    kept = f"only one class ('{column.names[left[0]]}', {counts[left[0]]} rows)" if left else "no class"
    second = int(np.sort(counts)[-2]) if len(counts) > 1 else 0
    hint = (
        f"use {spoken_value(None, 'min_class_rows', second, '--min-class-rows')} or less to keep two classes"
        if second
        else "pick another --label"
    )
    raise InputError(
        f"{spoken_value(None, 'min_class_rows', min_class_rows, '--min-class-rows')} leaves {kept} of label "
        f"'{column.name}'; a probe needs at least two",
        hint,
    )

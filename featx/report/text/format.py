"""The one set of formatters behind every terminal table: numbers, intervals, p-values and aligned columns.

A missing value (None, NaN, pandas' NA) is always ``-``; intervals read ``value [low, high]``; a p-value
below 0.001 reads ``<.001`` and gets a ``!`` when its test is significant after the correction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd


def missing(value: Any) -> bool:
    """True for None, NaN and pandas' missing values."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or bool(pd.isna(value))


def num(value: Any, digits: int = 3, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals (and a sign when ``signed``), or ``-`` when missing."""
    if missing(value):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def interval(value: Any, low: Any, high: Any) -> str:
    """``value [low, high]``, each with three decimals."""
    return f"{num(value)} [{num(low)}, {num(high)}]"


def row_interval(row: Any, name: str = "accuracy") -> str:
    """The interval of column ``name`` of a table row (a namedtuple from ``itertuples`` or a Series), read
    from ``name``, ``name_low`` and ``name_high``."""
    if isinstance(row, pd.Series):
        return interval(row[name], row[f"{name}_low"], row[f"{name}_high"])
    return interval(getattr(row, name), getattr(row, f"{name}_low"), getattr(row, f"{name}_high"))


def general(value: Any, digits: int = 6) -> str:
    """A hyperparameter as short as it reads (``0.1``, ``1e+03``), to at most ``digits`` significant digits, or
    ``-``."""
    return "-" if missing(value) else f"{value:.{digits}g}"


def count(value: Any, signed: bool = False) -> str:
    """A large count with thousands separators and no decimals (MDL bits; ``signed``: with its sign), or ``-``."""
    return "-" if missing(value) else f"{value:{'+' if signed else ''},.0f}"


def p_value(value: Any, significant: Any = False) -> str:
    """A (Holm-adjusted) p-value, with ``!`` when ``significant is True`` (the difference holds after the
    correction); ``-`` when untested."""
    if missing(value):
        return "-"
    text = "<.001" if value < 0.001 else f"{value:.3f}"
    return text + ("!" if significant is True else "")


def grid(header: Sequence[str], rows: Sequence[Sequence[str] | None]) -> list[str]:
    """Left-aligned columns under a header and a rule; ``None`` rows are blank separator lines."""
    widths = [max([len(header[i]), *(len(row[i]) for row in rows if row)]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=False)).rstrip(),
        "  ".join("-" * width for width in widths),
    ]
    lines += [
        "" if row is None else "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip()
        for row in rows
    ]
    return lines


def best_index(rows: pd.DataFrame, metric: str = "accuracy"):
    """The index of the best row of ``rows``: the highest ``selection_score`` (chosen on the training part)
    when the rows hold one, else the highest ``metric`` on the test rows."""
    if "selection_score" in rows and rows.selection_score.notna().any():
        return rows.selection_score.idxmax()
    return rows[metric].idxmax()


def chosen_how(rows: pd.DataFrame) -> str:
    """How ``best_index`` picks in ``rows``: ``chosen on the training part`` or ``best on the test rows``."""
    if "selection_score" in rows and rows.selection_score.notna().any():
        return "chosen on the training part"
    return "best on the test rows"


__all__ = [
    "best_index",
    "chosen_how",
    "count",
    "general",
    "grid",
    "interval",
    "missing",
    "num",
    "p_value",
    "row_interval",
]

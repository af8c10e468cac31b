"""The CSV featx writes, safe in a spreadsheet, and featx reading its own CSVs back.

Every CSV featx writes goes through ``write_csv`` (``csv_text`` for the text): a text cell starting with ``= + - @``,
a tab or a carriage return (OWASP's list) gets a leading ``'`` so that a spreadsheet shows it instead of running it
as a formula (class names, ids and label names come from the user's data). Numbers stay as they are, and so does
the JSON beside a CSV (exact names). The file is written whole or not at all (``featx.safe_files``); the path
``-`` is standard output. featx reads its own CSVs back with ``read_csv``, which takes the ``'`` off again.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..errors import StoreError
from ..options import spoken
from ..safe_files import atomic_write_text

STDOUT = "-"  # the output path that means standard output


def writable_hint() -> str:
    """Where a table may be written instead, as the caller names the option: ``-o`` on the command line, the
    ``output`` keyword from Python."""
    return f"choose a writable path with {spoken(None, 'output', '-o')}"


# Spreadsheet formula injection (OWASP "CSV Injection"): a cell that starts with one of these is run as a formula
# by Excel, LibreOffice and Google Sheets (``=HYPERLINK(...)``, ``+cmd|' /C calc'!A0``).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _needs_quote(text: str) -> bool:
    """Whether ``text`` (after any leading quotes) starts like a formula; a plain number (``-1``, ``+2.5e3``) or a
    lone ``-`` (featx's "none" mark) does not: no spreadsheet runs it. Counting the leading quotes makes the
    prefix reversible (``'=x`` -> ``''=x``)."""
    bare = text.lstrip("'")
    return bare[:1] in FORMULA_STARTS and bare != "-" and not _PLAIN_NUMBER.fullmatch(bare)


def neutral_cell(value):
    """A CSV cell as featx writes it: text that a spreadsheet would run as a formula gets a leading ``'`` (shown
    as text, never evaluated); numbers, missing values and other text unchanged. ``restored_cell`` undoes it."""
    if isinstance(value, str) and _needs_quote(value):
        return "'" + value
    return value


def restored_cell(value):
    """The text featx had before ``neutral_cell``: reading its own CSVs gives back the original names."""
    if isinstance(value, str) and value.startswith("'") and _needs_quote(value[1:]):
        return value[1:]
    return value


def _text_positions(frame) -> list[int]:
    """The positions of ``frame``'s columns that may hold text (not numbers or booleans)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    dtypes = frame.dtypes
    return [i for i in range(frame.shape[1]) if not (is_numeric_dtype(dtypes.iloc[i]) or is_bool_dtype(dtypes.iloc[i]))]


def _column_mapped(column, cell, candidates):
    """``column`` with ``cell`` applied to the cells ``candidates`` (vectorised, a superset) picks; unchanged
    (same dtype) when none is picked, so large tables of plain names cost one pass of pandas string code."""
    import pandas as pd

    mask = candidates(column.astype("string")).fillna(False).to_numpy(dtype=bool)
    if not mask.any():
        return column
    values = column.astype(object).to_numpy(copy=True)
    values[mask] = [cell(value) for value in values[mask]]
    mapped = pd.Series(values, index=column.index, name=column.name)
    return mapped.astype(column.dtype) if isinstance(column.dtype, pd.StringDtype) else mapped


def _formula_candidates(strings):
    return strings.str.lstrip("'").str[:1].isin(list(FORMULA_STARTS))


def _quoted_candidates(strings):
    return strings.str.startswith("'")


def _cells_mapped(frame, cell, candidates):
    """``frame`` with ``cell`` applied to its text cells, column names and index labels (numbers untouched)."""
    from pandas.api.types import is_numeric_dtype

    frame = frame.copy()
    for position in _text_positions(frame):
        frame.isetitem(position, _column_mapped(frame.iloc[:, position], cell, candidates))
    if frame.columns.nlevels == 1:
        frame.columns = frame.columns.map(cell)
    if frame.index.nlevels == 1 and not is_numeric_dtype(frame.index.dtype):
        frame.index = frame.index.map(cell)
    frame.index.name = cell(frame.index.name)
    return frame


def _has_carriage_return(frame) -> bool:
    names = [*frame.columns, *frame.index.names]
    if any(isinstance(name, str) and "\r" in name for name in names):
        return True
    return any(
        frame.iloc[:, i].astype("string").str.contains("\r", regex=False).fillna(False).any()
        for i in _text_positions(frame)
    )


def csv_text(frame, index: bool = False, sep: str = ",") -> str:
    """``frame`` as CSV text (``sep``: TSV) with every text cell neutralised (``neutral_cell``)."""
    import csv

    frame = _cells_mapped(frame, neutral_cell, _formula_candidates)
    # pandas leaves a cell with a carriage return unquoted (its line terminator is "\n"), which splits the row
    # for every reader: such a table has its text cells quoted.
    quoting = csv.QUOTE_NONNUMERIC if _has_carriage_return(frame) else csv.QUOTE_MINIMAL
    return frame.to_csv(index=index, sep=sep, quoting=quoting)


def write_csv(frame, path: str | Path, index: bool = False, sep: str = ",", hint: str | None = None) -> Path:
    """Write ``frame`` as CSV (``csv_text``) to ``path`` through a fresh temporary file renamed into place, or to
    standard output for ``-``; returns ``path``. A path that cannot be written is a ``StoreError`` with ``hint``
    (None: ``writable_hint()``)."""
    text = csv_text(frame, index=index, sep=sep)
    if str(path) == STDOUT:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError:  # ``> /dev/full``, a closed pipe: the caller says so (``featx.safe_files.writing``)
            _drop_stdout()
            raise
        return Path(path)
    try:
        atomic_write_text(Path(path), text)
    except OSError as err:
        hint = writable_hint() if hint is None else hint
        raise StoreError(f"cannot write {path}: {err.strerror or err}", hint) from None
    return Path(path)


def _drop_stdout() -> None:
    """After a failed write to standard output (``> /dev/full``, a closed pipe): point it at the null device, so
    that the text still buffered is not written again, and fails again, when Python exits."""
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def read_csv(path, **options):
    """``pandas.read_csv`` of a CSV featx wrote, its text cells and column names restored (``restored_cell``)."""
    import pandas as pd

    return _cells_mapped(pd.read_csv(path, **options), restored_cell, _quoted_candidates)


__all__ = [
    "FORMULA_STARTS",
    "STDOUT",
    "csv_text",
    "neutral_cell",
    "read_csv",
    "restored_cell",
    "writable_hint",
    "write_csv",
]

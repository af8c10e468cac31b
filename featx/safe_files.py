"""Files featx writes next to the user's outputs, safe in shared directories.

A temporary name (``x.tmp``) opened with ``open(path, "w")`` follows a symbolic link planted there, so
anyone who can write to the directory could make featx overwrite the link's target. Temporary files
are therefore created by ``tempfile.mkstemp`` (``O_CREAT|O_EXCL|O_NOFOLLOW``, a fresh random name, mode
0600) in the destination's own folder and renamed over the destination (``rename`` replaces a link
itself, never its target). Small files read back (``.featx/last.json``, manifests) are opened with
``O_NOFOLLOW``, must be regular files, and are read only up to a size bound.

Every CSV featx writes goes through ``csv_text``: a text cell starting with ``= + - @``, a tab or a carriage return
(OWASP's list) gets a leading ``'`` so that a spreadsheet shows it instead of running it as a formula (class names,
ids and label names come from the user's data). Numbers stay as they are, and so does the JSON beside a CSV (exact
names). featx reads its own CSVs back with ``read_csv``, which takes the ``'`` off again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import StoreError

# Why a write fails, in the user's words: the causes an output folder or disk gives (anything else: its strerror).
WRITE_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EFBIG: "the file is too large for this file system",
}
WRITE_HINT = "free disk space or choose a writable place with -o, then run the same command again"


def write_failure(err: OSError, path: object, hint: str = WRITE_HINT) -> StoreError:
    """The one-line error of a failed write of ``path``: what failed and why (an HDF5 error's errno too)."""
    code = err.errno
    if code is None:  # h5py: "... errno = 28, error message = 'No space left on device' ..."
        found = re.search(r"errno = (\d+)", str(err))
        code = int(found.group(1)) if found else None
    reason = WRITE_REASONS.get(code) if code is not None else None
    if reason is None:
        reason = err.strerror or (os.strerror(code) if code is not None else str(err).split("\n")[0])
    return StoreError(f"cannot write {path}: {reason}", hint)


@contextlib.contextmanager
def writing(path: object, hint: str = WRITE_HINT) -> Iterator[None]:
    """Turn an ``OSError`` raised inside into ``write_failure(err, path)``: one clear line, exit 2."""
    try:
        yield
    except OSError as err:
        raise write_failure(err, path, hint) from None


def check_writable(path: Path, hint: str = WRITE_HINT) -> None:
    """Before expensive work: create and remove a small file in the folder that will hold ``path`` (its nearest
    existing folder, when it is still to be made). ``os.access`` says "writable" to root even on a read-only
    mount, so this tries it; a full disk shows only when the file's bytes are flushed, so one block is written."""
    folder = Path(path).absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        descriptor, name = tempfile.mkstemp(dir=folder, prefix=".featx-write-test-")
    except OSError as err:
        raise write_failure(err, path, hint) from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as err:
        raise write_failure(err, path, hint) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def sibling(path: Path, name: object) -> Path | None:
    """The file ``name`` beside ``path``, when ``name`` is a bare file name (a results file names its predictions
    file so); None for anything else: a name from someone else's JSON may hold ``/``, ``..`` or markup."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        return None
    return Path(path).with_name(name)


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` through a fresh temporary file in its folder, then rename it into place."""
    path = Path(path)
    descriptor, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding=encoding) as handle:
            handle.write(text)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class NotARegularFile(OSError):
    """The path is a link, a device, a FIFO or a directory, or larger than allowed."""


def read_small_text(path: Path, max_bytes: int, encoding: str = "utf-8") -> str:
    """The text of a regular file of at most ``max_bytes``; never follows a link, never blocks on a FIFO."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == getattr(os, "ELOOP", 40):
            raise NotARegularFile(f"{path} is a symbolic link") from None
        raise
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        if info.st_size > max_bytes:
            raise NotARegularFile(f"{path} is larger than {max_bytes} bytes")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotARegularFile(f"{path} is larger than {max_bytes} bytes")
    return data.decode(encoding)


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


def csv_text(frame, index: bool = False) -> str:
    """``frame`` as CSV text with every text cell neutralised (``neutral_cell``): the one way featx writes CSV."""
    import csv

    frame = _cells_mapped(frame, neutral_cell, _formula_candidates)
    # pandas leaves a cell with a carriage return unquoted (its line terminator is "\n"), which splits the row
    # for every reader: such a table has its text cells quoted.
    quoting = csv.QUOTE_NONNUMERIC if _has_carriage_return(frame) else csv.QUOTE_MINIMAL
    return frame.to_csv(index=index, quoting=quoting)


def read_csv(path, **options):
    """``pandas.read_csv`` of a CSV featx wrote, its text cells and column names restored (``restored_cell``)."""
    import pandas as pd

    return _cells_mapped(pd.read_csv(path, **options), restored_cell, _quoted_candidates)

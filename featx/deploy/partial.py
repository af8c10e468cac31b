"""``featx predict``'s partial file (``OUT.partial``): a key line (what its rows depend on), then one JSON line of
scores per predicted row, appended chunk by chunk, so that a run stopped at any point resumes where it was."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ..errors import InputError
from ..options import spoken
from ..safe_files import NotARegularFile, loads_json, read_small_text, writing

MAX_PARTIAL_BYTES = 1 << 40  # its own file of score rows: no bound but the disk's


def resume(partial: Path, key: dict, notes: list[str], items: int, width: int | None) -> list[list[float]]:
    """The rows a previous run with the same key predicted (their score rows); a stale file is dropped, and so is
    one whose lines are not score rows of this run: at most ``items`` rows of ``width`` numbers (None: any one
    width), as featx writes them (a damaged or planted one ended the run in a ValueError)."""
    if partial.is_symlink():
        partial.unlink()
        return []
    if not partial.exists():
        return []
    try:  # never blocks on a FIFO planted there, never reads a folder
        text = read_small_text(partial, MAX_PARTIAL_BYTES)
    except (NotARegularFile, UnicodeDecodeError) as err:
        raise InputError(
            f"{partial} is not the partial predictions file featx predict writes ({err})",
            f"remove it, or choose another {spoken(None, 'output', '-o')} path",
        ) from None
    whole = text[: text.rfind("\n") + 1]  # a line cut by a kill mid-write: cut off before anything is appended
    if len(whole) < len(text):
        descriptor = os.open(partial, os.O_WRONLY | os.O_NOFOLLOW)
        try:
            os.ftruncate(descriptor, len(whole.encode("utf-8")))
        finally:
            os.close(descriptor)
    lines = whole.split("\n")[:-1]
    try:
        if loads_json(lines[0]) != key:
            notes.append(
                f"{partial.name} was made by another bundle, corpus or reading options (encoding, columns, device...): "
                "its rows are not reused, starting again"
            )
            partial.unlink()
            return []
        rows = [loads_json(line) for line in lines[1:]]
    except (ValueError, IndexError):
        partial.unlink()
        return []
    if not _score_rows(rows, items, width):
        notes.append(f"{partial.name} holds lines that are not this run's score rows: not reused, starting again")
        partial.unlink()
        return []
    return rows


def _score_rows(rows: list, items: int, width: int | None) -> bool:
    """Whether ``rows`` are at most ``items`` lists of ``width`` numbers each (``width`` None: of one length)."""
    if len(rows) > items or not all(isinstance(row, list) for row in rows):
        return False
    widths = {len(row) for row in rows}
    if widths and (len(widths) > 1 or 0 in widths or (width is not None and widths != {width})):
        return False
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for row in rows for v in row)


def append(partial: Path, key: dict, rows: list[list[float]], fresh: bool) -> None:
    """Append a chunk's score rows; a failed write (a full disk) is cut off again, so the file holds whole
    lines only, and is one clear error."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | (os.O_TRUNC if fresh else 0)
    text = (json.dumps(key) + "\n" if fresh else "") + "".join(
        json.dumps([float(v) for v in row]) + "\n" for row in rows
    )
    with writing(partial):
        descriptor = os.open(partial, flags, 0o600)
        size = os.fstat(descriptor).st_size
        try:
            with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError:
            with contextlib.suppress(OSError):
                if size:
                    os.truncate(partial, size)
                else:
                    partial.unlink()
            raise


__all__ = ["MAX_PARTIAL_BYTES", "append", "resume"]

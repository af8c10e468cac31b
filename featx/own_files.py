"""The outputs featx draws again from results on every run (figures, tables, report pages) and how it knows its own.

``featx compare``, ``similarity``, ``plot``, ``report`` and ``lens`` write their files again each time they run:
what they replace is their own earlier output, drawn from results that are still there, so nothing is lost.
A ``-o`` that lands on anything else (``-o reviews`` beside ``reviews.csv``, the corpus; a figure of the user's
own; a link) is refused before any work (``refuse_foreign``). Each kind is known by what featx puts in it:

- figures carry ``FIGURE_MARK`` in their metadata (PNG ``Software``, SVG and PDF ``Creator``: ``figure_metadata``);
  one drawn before the mark (featx 0.2.0) carries matplotlib's own there, and is taken as featx's too (a ``make
  demo`` run again over its earlier ``out/`` folder redraws its figures), so an image of any other making is kept;
- a report page has ``<title>featx report`` in its head;
- a table starts with the header featx writes for it (``table_with``);
- a JSON record names the command that wrote it (``json_of``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import InputError
from .safe_files import NotARegularFile, loads_json, output_hint, read_small_text

FIGURE_MARK = "featx"
FOREIGN_HINT = "move it away, or choose another -o path"
# featx 0.2.0 drew its figures without the mark: such a figure is refused like any other, and the hint says so
_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"<?xml", b"<svg", b"%PDF")
_MARKS = (FIGURE_MARK.encode(), b"Matplotlib")  # featx's mark; matplotlib's default Software/Creator/Producer
_HEAD, _TAIL = 4096, 16384  # a PNG's or SVG's metadata comes first; a PDF's Info dictionary near its end


def figure_metadata(extension: str) -> dict[str, Any]:
    """The metadata ``savefig`` writes into a featx figure of this format: the mark, and no date in an SVG (the
    same figure, the same bytes)."""
    extension = extension.lower().lstrip(".")
    if extension == "png":
        return {"Software": FIGURE_MARK}
    if extension == "svg":
        return {"Creator": FIGURE_MARK, "Date": None}
    if extension == "pdf":
        return {"Creator": FIGURE_MARK}
    return {}


def _ends(path: Path) -> bytes | None:
    """The first 4 KiB and the last 16 KiB of a regular file, read without following a link (None: not one)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        head = handle.read(_HEAD)
        if info.st_size > _HEAD:
            handle.seek(max(_HEAD, info.st_size - _TAIL))
            head += handle.read(_TAIL)
        return head


def is_featx_figure(path: Path) -> bool:
    """A PNG, SVG or PDF file with featx's mark in its metadata, or matplotlib's (a featx figure from before the
    mark: featx draws every figure with matplotlib)."""
    data = _ends(path)
    return data is not None and data.startswith(_SIGNATURES) and any(mark in data for mark in _MARKS)


def is_featx_page(path: Path) -> bool:
    """An HTML page ``featx report`` wrote (its title, in the page's head)."""
    data = _ends(path)
    return data is not None and data.startswith(b"<!DOCTYPE html>") and b"<title>featx report" in data[:_HEAD]


def table_with(header: str) -> Callable[[Path], bool]:
    """Whether a file is a CSV table whose first line starts with ``header`` (the columns featx writes first; quoted
    as a table with a carriage return in a cell is, ``featx.io.csv_text``)."""

    def own(path: Path) -> bool:
        data = _ends(path)
        return data is not None and data[:_HEAD].split(b"\n", 1)[0].replace(b'"', b"").startswith(header.encode())

    return own


def json_of(command: str) -> Callable[[Path], bool]:
    """Whether a file is a JSON record ``{"meta": {"command": command, ...}, ...}`` that ``featx command`` wrote."""

    def own(path: Path) -> bool:
        try:
            record = loads_json(read_small_text(path, 256 << 20))
        except (OSError, NotARegularFile, ValueError):
            return False
        meta = record.get("meta") if isinstance(record, dict) else None
        return isinstance(meta, dict) and meta.get("command") == command

    return own


def refuse_foreign(
    paths: Iterable[str | os.PathLike], what: str, own: Callable[[Path], bool], hint: str = FOREIGN_HINT
) -> None:
    """Before any work: each of ``paths`` that exists must be a ``what`` featx wrote (``own``), which a run draws
    again; a link, a folder or anyone else's file is refused with one line (``hint``), and nothing is replaced."""
    for path in map(Path, paths):
        if not os.path.lexists(path):
            continue
        if path.is_symlink():
            found = "is a symbolic link, not"
        elif path.is_dir():
            found = "is a folder, not"
        elif own(path):
            continue
        else:
            found = "exists and is not"
        raise InputError(f"{path} {found} a {what} featx wrote: not replaced", output_hint(hint))


__all__ = [
    "FIGURE_MARK",
    "figure_metadata",
    "is_featx_figure",
    "is_featx_page",
    "json_of",
    "refuse_foreign",
    "table_with",
]

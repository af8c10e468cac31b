"""The results files a figure is drawn from (``results_files``: one path or a list, checked), and the folder of the
files beside a figure (``featx compare``, ``featx similarity``), made when missing, with one clear error otherwise;
their CSVs are written by ``featx.io.write_csv``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import InputError, StoreError
from ..io import writable_hint
from ..options import normalise


def make_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) when missing."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"cannot create {folder}: {err.strerror or err}", writable_hint()) from None


def results_files(config: Any) -> None:
    """``results`` as a tuple: one results path (or table) alone, or a list, tuple or other iterable of them (``featx
    compare a.csv b.csv``); a number or None is an ``InputError`` before a file is read (each item is checked when
    loaded)."""
    given = config.results
    if isinstance(given, (str, os.PathLike)) or hasattr(given, "columns"):  # one path, or one DataFrame
        given = (given,)
    if not hasattr(given, "__iter__") or isinstance(given, dict):
        raise InputError(
            f"results takes results files, not a {type(given).__name__}",
            "give a path or a list of paths, e.g. ['a.probe.csv', 'b.probe.csv']",
        )
    normalise(config, "results", tuple(given))


__all__ = ["make_folder", "results_files"]

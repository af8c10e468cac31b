"""Writing the tables that sit beside a figure (``featx compare``, ``featx similarity``): the folder made
when missing, each CSV written whole or not at all (``featx.safe_files``), and one clear error otherwise."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import StoreError
from ..safe_files import atomic_write_text, csv_text


def make_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) when missing."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"cannot create {folder}: {err.strerror or err}", "choose a writable path with -o") from None


def write_csv(frame: pd.DataFrame, path: Path, index: bool = False) -> Path:
    """``frame`` as CSV at ``path`` (with its index when ``index``; formula-like text neutralised, see
    ``featx.safe_files.csv_text``); returns ``path``."""
    try:
        atomic_write_text(path, csv_text(frame, index=index))
    except OSError as err:
        raise StoreError(f"cannot write {path}: {err.strerror or err}", "choose a writable path with -o") from None
    return path


__all__ = ["make_folder", "write_csv"]

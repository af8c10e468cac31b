"""The folder of the files beside a figure (``featx compare``, ``featx similarity``), made when missing, with one
clear error otherwise; their CSVs are written by ``featx.io.write_csv``."""

from __future__ import annotations

from pathlib import Path

from ..errors import StoreError


def make_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) when missing."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"cannot create {folder}: {err.strerror or err}", "choose a writable path with -o") from None


__all__ = ["make_folder"]

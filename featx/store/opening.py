"""Finding and opening a features file for reading: the file itself, or its ``.partial`` when a partial file is
allowed (an incomplete one is refused with the rows written so far), a regular HDF5 file opened read-only."""

from __future__ import annotations

from pathlib import Path

import h5py

from ..errors import IncompleteError, StoreError
from . import schema as s
from .damage import HDF5_ERRORS, damaged
from .schema import partial_path


def _progress_of(path: Path) -> str:
    try:
        with h5py.File(path, "r", locking=False) as file:
            return f"{int(file[s.ROWS_DONE][0])} of {int(file.attrs[s.N_ROWS])}"
    except Exception:  # damaged or still being created: the message must not fail
        return "some"


# An unfinished file's hint, naming no flag: fit, similarity, labels... refuse one and have no --allow-partial; the
# probe, which reads the rows written so far, adds its option (featx.probing's open_probed).
RESUME = "run the same featx extract command again to resume it"


def located(path: Path, allow_partial: bool) -> Path:
    """The file to open: ``path``, or its ``.partial`` with ``allow_partial``; clear errors otherwise."""
    if path.exists():
        return path
    partial = partial_path(path)
    if partial.exists() and allow_partial:
        return partial
    if partial.exists():
        raise IncompleteError(
            f"{path} is incomplete: its extraction is in progress or was interrupted "
            f"({_progress_of(partial)} rows written to {partial.name})",
            RESUME,
        )
    if path.exists():  # the .partial was renamed into place between the two looks
        return path
    raise StoreError(f"features file {path} does not exist", "create it with featx extract")


def opened(actual: Path) -> h5py.File:
    """A regular HDF5 file, opened read-only."""
    if not actual.is_file():  # a FIFO or device would block or never end
        raise StoreError(f"{actual} is not a regular file", "give a features file written by featx extract")
    try:
        if not h5py.is_hdf5(actual) and actual.exists():  # gone since: h5py.File's FileNotFoundError, below
            raise StoreError(f"{actual} is not an HDF5 file", "give a features file written by featx extract")
        return h5py.File(actual, "r", locking=False)
    except FileNotFoundError:  # renamed (a .partial finished into place) or removed since it was found
        raise StoreError(
            f"{actual} was moved or removed while it was being opened",
            "open it again: a finished extraction renames its .partial file into place",
        ) from None
    except HDF5_ERRORS as err:
        raise damaged(actual, err) from None

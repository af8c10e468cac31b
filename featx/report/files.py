"""The results files a figure is drawn from (``results_files``: one path or a list, checked), and the folder of the
files beside a figure (``featx compare``, ``featx similarity``), made when missing, with one clear error otherwise,
and what may stand where they are written (``check_redrawn``); their CSVs are written by ``featx.io.write_csv``."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError, StoreError
from ..io import writable_hint
from ..options import normalise
from ..own_files import is_featx_figure, refuse_foreign, table_with
from ..safe_files import refuse_inputs
from .load import result_files


def make_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) when missing."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"cannot create {folder}: {err.strerror or err}", writable_hint()) from None


def check_redrawn(
    output: str | os.PathLike,
    formats: Iterable[str],
    tables: dict[str, tuple[str, str]],
    inputs: Iterable[Any] = (),
    results: Iterable[Any] = (),
) -> None:
    """Before any work, the files a figure command writes at ``output``: the figure in each of ``formats`` and each
    table of ``tables`` (``{suffix: (what it is, the header featx writes it with)}``). None of them may be one of
    the run's ``inputs`` or a file reading its ``results`` opens (``load.result_files``), and each that exists must
    be featx's own earlier output of its kind (``refuse_foreign``): a run draws it again, and replaces nothing else."""
    output = Path(output)
    figures = [output.with_suffix("." + extension.lstrip(".")) for extension in formats]
    written = {output.with_suffix(suffix): kind for suffix, kind in tables.items()}
    read = [*inputs, *(file for one in results if isinstance(one, (str, os.PathLike)) for file in result_files(one))]
    refuse_inputs([*figures, *written], read)
    refuse_foreign(figures, "figure", is_featx_figure)
    for path, (what, header) in written.items():
        refuse_foreign([path], what, table_with(header))


def remove_stale(path: Path, what: str, header: str) -> str | None:
    """A run whose output has no ``what`` this time removes the one an earlier run wrote at ``path`` (featx's own,
    known by ``header``: ``table_with``), so that no reader takes it for this run's; a user's file, a link or a
    folder is left as it is (``check_redrawn`` refused it before the work). Returns the note saying so, else None."""
    if path.is_symlink() or not path.is_file() or not table_with(header)(path):
        return None
    try:
        path.unlink()
    except OSError as err:
        raise StoreError(f"cannot remove the earlier {what} {path}: {err.strerror or err}", writable_hint()) from None
    return f"removed {path}, the {what} of an earlier run: this run has none"


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


__all__ = ["check_redrawn", "make_folder", "remove_stale", "results_files"]

"""Where a derived features file (``featx erase``) is written, whether it may be written there, and the tables
written beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...errors import InputError
from ...options import on_command_line, spoken_value
from ...safe_files import atomic_write_text, is_hdf5_file, refuse_replacing
from ...store import DERIVED_SUFFIX, escape_name

SIDE_FILES = ("erase.csv", "amnesic.csv", "erase.json", "erasers.npz")  # written beside the erased file


def default_output(source: Path, label: str, method: str) -> Path:
    """``<stem>.erased-<label>-<method>.h5`` beside the source (the label escaped as in result file names)."""
    stem = source.name[: -len(source.suffix)] if source.suffix else source.name
    return source.with_name(f"{stem}.erased-{escape_name(label)}-{method}.h5")


def check_output(source: Path, output: Path, overwrite: bool) -> None:
    """The derived file may be written at ``output``: named as the caller names it (``-o x.h5``, ``output='x.h5'``)."""
    cli = on_command_line()
    if output.resolve() == source.resolve():
        given = spoken_value(None, "output", str(output), "-o")
        raise InputError(f"{given} is the source features file", "write the derived file to another path")
    refuse_replacing(output, overwrite, "features file", is_hdf5_file)  # only a features file is ever replaced
    if not output.parent.exists():
        hint = "create it first, or choose another " + ("-o" if cli else "output")
        raise InputError(f"directory {output.parent} does not exist", hint)
    from ..results import check_name_length

    # named after the label by default: "File name too long" came once every eraser was fitted
    check_name_length([output], DERIVED_SUFFIX, "PATH")  # written through .NAME.XXXXXXXX.writing
    check_name_length([side_file(output, suffix) for suffix in SIDE_FILES], ".tmp", "PATH")


def side_file(output: Path, suffix: str) -> Path:
    """``erased.h5`` -> ``erased.<suffix>``: the summary files beside the erased features."""
    stem = output.name[: -len(output.suffix)] if output.suffix else output.name
    return output.with_name(f"{stem}.{suffix}")


def _records(table: pd.DataFrame) -> list[dict]:
    from ..results import json_safe

    return [{key: json_safe(value) for key, value in record.items()} for record in table.to_dict("records")]


def write_tables(result, output: Path) -> Path:
    """An ``EraseResult``'s tables beside the erased file: ``.erase.csv`` (returned), ``.amnesic.csv`` and
    ``.erase.json``."""
    from ..results import json_safe, write_table

    csv_path = side_file(output, "erase.csv")
    write_table(result.table, csv_path)
    if not result.amnesic.empty:
        write_table(result.amnesic, side_file(output, "amnesic.csv"))
    payload = {"meta": result.meta, "results": _records(result.table), "amnesic": _records(result.amnesic)}
    atomic_write_text(
        side_file(output, "erase.json"), json.dumps(payload, default=json_safe, indent=1, allow_nan=False)
    )
    return csv_path

"""Where a derived features file (``featx erase``) is written, and whether it may be written there."""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ...safe_files import check_overwrite, is_hdf5_file
from ...store import escape_name


def default_output(source: Path, label: str, method: str) -> Path:
    """``<stem>.erased-<label>-<method>.h5`` beside the source (the label escaped as in result file names)."""
    stem = source.name[: -len(source.suffix)] if source.suffix else source.name
    return source.with_name(f"{stem}.erased-{escape_name(label)}-{method}.h5")


def check_output(source: Path, output: Path, overwrite: bool) -> None:
    if output.resolve() == source.resolve():
        raise InputError(f"-o {output} is the source features file", "write the derived file to another path")
    if output.exists() and not overwrite:
        raise InputError(f"{output} exists", "pass --overwrite to replace it, or choose another path with -o")
    if overwrite:  # only a features file is ever replaced
        check_overwrite(output, "features file", is_hdf5_file)
    if not output.parent.exists():
        raise InputError(f"directory {output.parent} does not exist", "create it first, or choose another -o")

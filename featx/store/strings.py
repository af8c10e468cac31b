"""Row strings in HDF5: HDF5 strings cannot hold NUL, so a column with NUL (or the escape character
itself) is stored escaped, losslessly: NUL as U+FFFF "0", U+FFFF as U+FFFF "e". The dataset's ``escaped``
attribute says so to readers. ``decode_attr`` reads an attribute's value back as plain Python."""

from __future__ import annotations

import re
from collections.abc import Iterable

import h5py
import numpy as np

from ..errors import StoreError
from .schema import ESCAPED

STRING_ESCAPE = "\uffff"  # a Unicode noncharacter: in practice never in real text
_ESCAPED = re.compile("\uffff(.)", re.DOTALL)


def _strings(values: Iterable[str]) -> tuple[np.ndarray, bool]:
    """Strings for an HDF5 dataset, and whether they were escaped."""
    values = list(values)
    escaped = any("\x00" in value or STRING_ESCAPE in value for value in values)
    if escaped:
        values = [
            value.replace(STRING_ESCAPE, STRING_ESCAPE + "e").replace("\x00", STRING_ESCAPE + "0") for value in values
        ]
    return np.array(values, dtype=object), escaped


def write_strings(group: h5py.Group, name: str, values: Iterable[str]) -> h5py.Dataset:
    """A string dataset, created with its data and flushed at once (see ``writer._written``)."""
    data, escaped = _strings(values)
    dataset = group.create_dataset(name, data=data, dtype=h5py.string_dtype("utf-8"))
    dataset.flush()
    if escaped:
        dataset.attrs[ESCAPED] = True
    return dataset


def decode_attr(value):
    """An attribute's value as Python: bytes as str, numpy scalars as their Python value, the rest as stored."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value


def read_strings(dataset: h5py.Dataset, stop: int | None = None) -> list[str]:
    """The strings of a dataset written by ``write_strings`` (escapes undone), first ``stop`` rows."""
    try:
        values = [value.decode() if isinstance(value, bytes) else value for value in dataset[:stop]]
    except UnicodeDecodeError as err:  # featx writes UTF-8: another writer's bytes, or damage
        raise StoreError(
            f"{dataset.file.filename}: dataset '{dataset.name.lstrip('/')}' holds text that is not UTF-8 ({err})",
            "the file is damaged or was not written by featx: run featx extract again with --overwrite",
        ) from None
    if dataset.attrs.get(ESCAPED, False):
        values = [_ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else STRING_ESCAPE, value) for value in values]
    return values

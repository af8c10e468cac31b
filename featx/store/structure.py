"""The first check of a features file, before anything in it is read: a file someone else produced is hostile input.

``check_structure`` walks every link: each must be a hard link inside the file (no soft or external links, nothing
read from another file), each object a group or a dataset whose storage is in the file itself (no external raw
storage, no virtual datasets, no filters), and every attribute small. Then, and only then, the root attributes are
read (``FeatureFile.attrs``), through the handles their checks opened.

The walk uses h5py's low-level handles (a high-level ``Dataset`` looks up its file again on creation) and records
what it saw in ``Contents``, a tree of each object's kind, shape and dtype with each group's members in h5py's order,
so the layout checks (``validate.check_layout``) look nothing up again. It keeps no HDF5 handle: a hostile file of
nested groups costs no more than its count of objects (at most ``MAX_LINKS``). Each object's address is kept with
its place: featx links each object once, so a second link to one (a group linked into itself, which would send the
walk round a loop) is refused where the walk meets it, naming both paths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import h5py
import numpy as np
from h5py import h5, h5a, h5d, h5g, h5l, h5o, h5p, h5t

from ..errors import StoreError
from . import schema as s
from .strings import decode_attr

MAX_LINKS = 100_000  # objects in a features file: a few per site, pooling and label column
MAX_ATTRIBUTE_BYTES = 16 << 20  # the largest featx writes is the list of skipped empty rows
MAX_ATTRIBUTES = 256
FEATURE_DTYPES = (np.dtype("float16"), np.dtype("float32"))


def _fail(path: Path, what: str, hint: str | None = None) -> NoReturn:
    raise StoreError(f"{path} is not a valid featx features file: {what}", hint)


@dataclass(eq=False)
class Entry:
    """One object of the file: a group (its ``members`` by name, in h5py's order) or a dataset (shape, dtype)."""

    is_group: bool
    shape: tuple = ()
    dtype: np.dtype = np.dtype(np.void)
    members: dict[str, Entry] = field(default_factory=dict)


class Contents:
    """What ``check_structure`` saw: ``root`` (the root group's ``Entry``) and ``attrs``, the root attributes as
    Python values."""

    def __init__(self) -> None:
        self.root = Entry(True)
        self.attrs: dict = {}

    def get(self, name: str) -> Entry | None:
        """The object at ``name`` (HDF5's path rules: empty and ``.`` parts skipped), None when there is none."""
        entry: Entry | None = self.root
        for part in name.split("/"):
            if part in ("", "."):
                continue
            if entry is None or not entry.is_group:
                return None
            entry = entry.members.get(part)
        return entry

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def members_of(self, group: str) -> list[tuple[str, Entry]]:
        """``(name, entry)`` of each member of ``group`` in h5py's order (none when it is no group)."""
        entry = self.get(group)
        return [] if entry is None else list(entry.members.items())


def expect(contents: Contents, name: str, shape: tuple, kinds: str, path: Path, dtype: np.dtype | None = None) -> None:
    """The dataset ``name`` (in ``contents``) has ``shape`` and a dtype of ``kinds`` (``O``: text; ``f``: a float type
    of ``FEATURE_DTYPES``), or exactly ``dtype`` where given (a feature dataset: the file's ``store_dtype``)."""
    if (dataset := contents.get(name)) is None:
        _fail(path, f"dataset '{name}' is missing")
    if dataset.is_group:
        _fail(path, f"'{name}' is not a dataset")
    if tuple(dataset.shape) != tuple(shape):
        _fail(path, f"dataset '{name}' has shape {dataset.shape}, expected {tuple(shape)}")
    text = h5t.check_string_dtype(dataset.dtype) is not None
    kind = "O" if text else "V" if dataset.dtype.hasobject else dataset.dtype.kind  # "V": a vlen sequence, a reference
    if kind not in kinds or (kind == "f" and dataset.dtype not in FEATURE_DTYPES):
        _fail(path, f"dataset '{name}' has dtype {dataset.dtype}, which featx does not write there")
    if dtype is not None and dataset.dtype != dtype:
        _fail(path, f"dataset '{name}' has dtype {dataset.dtype}, but the file's {s.STORE_DTYPE} is {dtype}")


class _Where(NamedTuple):
    """An object's place, shown as its path (``/labels/label``) only in a message."""

    parent: _Where | None
    key: str

    def __str__(self) -> str:
        keys, at = [], self
        while at.parent is not None:
            keys.append(at.key)
            at = at.parent
        return "/" + "/".join(reversed(keys))


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")  # UTF-8 as h5py decodes it; anything else shown, never raised


def check_structure(file: h5py.File, path: Path) -> Contents:
    """Links, storage and attribute sizes of every object before anything is read (the module doc); what it saw."""
    contents, top = Contents(), _Where(None, "")
    root = _check_attributes(file.id, top, path)
    seen = {h5o.get_info(file.id).addr: top}  # each object's address: where the walk met it
    pending: list[tuple[Entry, h5g.GroupID, _Where]] = [(contents.root, file.id, top)]
    while pending:
        node, group, where = pending.pop()
        for raw in list(group):  # GroupID's iteration: h5py's order (creation order where the group tracks it)
            child = _Where(where, _name(raw))
            address = _check_link(group, raw, child, path)
            if address in seen:
                _linked_twice(path, seen[address], child)
            if len(seen) > MAX_LINKS:
                _fail(path, f"more than {MAX_LINKS:,} objects")
            seen[address] = child
            item = h5o.open(group, raw)
            _check_attributes(item, child, path)
            if isinstance(item, h5g.GroupID):
                entry = Entry(True)
                pending.append((entry, item, child))
            elif isinstance(item, h5d.DatasetID):
                entry = _check_storage(item, child, path)
            else:
                _fail(path, f"'{child}' is not a group or dataset")
            node.members[child.key] = entry
    contents.attrs = {_name(raw): decode_attr(_value(*checked)) for raw, *checked in root}
    return contents


def _check_link(group: h5g.GroupID, raw: bytes, child: _Where, path: Path) -> int:
    """The address of the object a hard link names; any other kind of link refused."""
    info = group.links.get_info(raw)
    kind = info.type
    if kind == h5l.TYPE_EXTERNAL:
        filename = group.links.get_val(raw)[0]
        _fail(path, f"'{child}' is an external link to {_name(filename)!r} (data from another file)")
    if kind == h5l.TYPE_SOFT:
        _fail(path, f"'{child}' is a soft link to '{_name(group.links.get_val(raw))}'")
    if kind != h5l.TYPE_HARD:
        _fail(path, f"'{child}' is a link of a kind featx never writes")
    return int(info.u)


def _linked_twice(path: Path, first: _Where, again: _Where) -> NoReturn:
    """featx links each object once: a second link (a group linked into itself, one dataset under two names) is
    refused where the walk meets it, before the walk would go round a loop up to ``MAX_LINKS`` times."""
    _fail(
        path,
        f"'{again}' links to the object already at '{first}' (featx links each object once: this file was not "
        "written by featx, or was changed since)",
        "extract the features again (featx extract ... --overwrite)",
    )


def _attribute_names(item) -> list[bytes]:
    """Its attributes' names in h5py's order (creation order where the object tracks it)."""
    plist = item.get_create_plist()
    tracked = plist.get_attr_creation_order() & h5p.CRT_ORDER_TRACKED
    names: list[bytes] = []
    h5a.iterate(item, lambda name, *_: names.append(name), index_type=h5.INDEX_CRT_ORDER if tracked else h5.INDEX_NAME)
    return names


def _check_attributes(item, name: _Where, path: Path) -> list[tuple[bytes, h5a.AttrID, np.dtype, tuple | None]]:
    """Each attribute of ``item`` bounded before any is read; their names, open handles, dtypes and shapes."""
    count = h5a.get_num_attrs(item)
    if count > MAX_ATTRIBUTES:
        _fail(path, f"'{name}' has {count} attributes")
    checked = []
    for raw in _attribute_names(item) if count else ():
        attribute = h5a.open(item, raw)
        dtype, shape = attribute.dtype, attribute.shape
        elements = 0 if shape is None else math.prod(shape)  # None: an empty dataspace
        size = attribute.get_storage_size() if elements else 0  # HDF5 reports no storage as an error
        declared = elements * (dtype.itemsize if dtype.kind != "O" else 16)
        if max(size, declared) > MAX_ATTRIBUTE_BYTES or elements > MAX_ATTRIBUTE_BYTES:
            _fail(path, f"attribute '{_name(raw)}' of '{name}' is too large ({max(size, declared):,} bytes)")
        if dtype.kind == "O" and elements > 1:
            _fail(path, f"attribute '{_name(raw)}' of '{name}' is an array of variable-length values")
        if dtype.hasobject and h5t.check_string_dtype(dtype) is None:  # HDF5 crashed reading a damaged one
            _fail(path, f"attribute '{_name(raw)}' of '{name}' is of a variable-length type featx never writes")
        checked.append((raw, attribute, dtype, shape))
    return checked


def _value(attribute: h5a.AttrID, dtype: np.dtype, shape: tuple | None):
    """An attribute's value exactly as h5py's ``AttributeManager.__getitem__`` reads it, from the open handle."""
    if shape is None:  # an empty dataspace
        return h5py.Empty(dtype)
    memory = h5t.py_create(dtype)
    if dtype.subdtype is not None:  # a top-level array type: numpy has none, so its shape joins the attribute's
        dtype, inner = dtype.subdtype
        shape = shape + inner
    value = np.zeros(shape, dtype=dtype, order="C")
    attribute.read(value, mtype=memory)
    string = h5t.check_string_dtype(dtype)
    if string and string.length is None:  # variable-length strings come back as bytes
        value = np.array([b.decode("utf-8", "surrogateescape") for b in value.flat], dtype=dtype).reshape(value.shape)
    return value[()] if value.ndim == 0 else value


def root_attributes(file: h5py.File, path: Path) -> dict[str, Any]:
    """The root group's attributes, each bounded and its type checked before it is read (``_check_attributes``:
    HDF5 crashed reading a damaged variable-length one), for a quick look at a file not opened as a
    ``FeatureFile`` (is it finished, can it be resumed); ``StoreError`` where a check fails."""
    checked = _check_attributes(file.id, _Where(None, ""), path)
    return {_name(raw): _value(attribute, dtype, shape) for raw, attribute, dtype, shape in checked}


def _check_storage(dataset: h5d.DatasetID, name: _Where, path: Path) -> Entry:
    plist = dataset.get_create_plist()
    if plist.get_external_count() > 0:
        _fail(path, f"dataset '{name}' keeps its data in external files")
    if plist.get_layout() == h5d.VIRTUAL:
        _fail(path, f"dataset '{name}' is a virtual dataset (data from other datasets or files)")
    if plist.get_nfilters() > 0:
        _fail(path, f"dataset '{name}' is compressed or filtered (featx never writes such datasets)")
    shape, dtype = dataset.shape, dataset.dtype
    elements = math.prod(shape) if shape else 1
    per_element = dtype.itemsize if dtype.kind != "O" else 4
    if dataset.get_storage_size() < elements * per_element:
        _fail(path, f"dataset '{name}' declares {shape} but the file holds data for fewer elements")
    return Entry(False, shape, dtype)

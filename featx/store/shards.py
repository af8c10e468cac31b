"""Shard files as the store sees them: which corpus rows a shard holds, its shard attributes, and the
copy of several shards into one features file in corpus order (``featx merge``).

A shard file is an ordinary features file plus ``rows/index`` (its corpus rows, ascending) and the
attributes in ``schema.SHARD_ATTRS``. The merge copies rather than building an HDF5 virtual dataset:
shards hold rows dealt round-robin, so a virtual dataset would need about one mapping per row, and a
virtual dataset whose source is missing silently reads fill values.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

import h5py
import numpy as np

from ..errors import StoreError
from ..options import on_command_line
from ..safe_files import loads_json
from . import schema as s
from .damage import HDF5_ERRORS, damaged, raised_by_h5py
from .finite import finite_rows
from .reader import FeatureFile
from .strings import decode_attr, read_strings
from .writer import FeatureWriter

BLOCK_BYTES = 256 << 20  # host memory for one block of merged rows
ShardFile: TypeAlias = h5py.File  # an open shard (``open_shard``): its ``filename``, and ``close()`` when done


def extract_again(elided: bool = False) -> str:
    """The command that re-runs a shard as its caller gives it: ``featx extract --overwrite`` on the command line,
    ``featx.extract(..., overwrite=True)`` from Python (not a flag reworded into ``featx extract overwrite=True``);
    the merge's hints (``featx.extraction.merge``) and the store's own say it alike."""
    return (
        f"featx extract{' ...' if elided else ''} --overwrite"
        if on_command_line()
        else "featx.extract(..., overwrite=True)"
    )


def _redo_shard() -> str:
    return f"re-run that shard with {extract_again()}, then merge again"


@contextmanager
def _reading(file: ShardFile) -> Iterator[None]:
    """A read of one shard: an HDF5 failure raised inside h5py (a damaged chunk that the shard's check at open did
    not read) is that shard's damage, named, with how to redo it; featx's own errors go on as they are."""
    try:
        yield
    except HDF5_ERRORS as err:
        if not raised_by_h5py(err):
            raise
        raise damaged(file.filename, err, _redo_shard()) from None


@dataclass
class StoredLabels:
    name: str
    codes: np.ndarray
    names: list[str]


@dataclass
class AnswerLengths:
    """A further ``--contrast`` answer's token counts, shaped as ``FeatureWriter.create`` reads a tokenisation's."""

    lengths: np.ndarray


@dataclass
class MergedRows:
    """Row metadata of every shard in corpus order, shaped as ``FeatureWriter.create`` takes a corpus
    and its tokenisation (both arguments get this object)."""

    texts: list[str]
    ids: list[str]
    split: list[str] | None
    labels: dict[str, StoredLabels]
    full_lengths: np.ndarray
    lengths: np.ndarray
    offsets: np.ndarray
    input_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    word_ids: np.ndarray | None = None
    contrast: list[AnswerLengths] | None = None  # --contrast: answers 1, 2, ...'s tokens (``rows/contrast_n_kept``)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def truncated(self) -> np.ndarray:
        return self.lengths < self.full_lengths


def shard_rows_match(writer: FeatureWriter, rows: np.ndarray) -> bool:
    """Whether an unfinished shard file holds exactly these corpus rows."""
    return s.ROW_INDEX in writer.file and np.array_equal(writer.file[s.ROW_INDEX][()], rows)


def open_shard(path: Path) -> ShardFile:
    """A finished shard file, read-only (``FeatureFile`` checks it first and raises its clear errors)."""
    with FeatureFile(path):
        pass
    return h5py.File(path, "r", locking=False)


def shard_attrs(file: ShardFile) -> dict:
    """The attributes a merge checks a shard by (``schema.SHARD_ATTRS`` and the provenance)."""
    with _reading(file):
        return {key: decode_attr(value) for key, value in file.attrs.items()}


def shard_row_index(file: ShardFile) -> np.ndarray | None:
    """The corpus rows of a shard (None when the file does not say)."""
    if s.ROW_INDEX not in file:
        return None
    with _reading(file):
        index = file[s.ROW_INDEX][()]
    return index if len(index) == int(file.attrs[s.N_ROWS]) else None


def _gather(files, indices, n_rows: int, path: str, dtype=None) -> np.ndarray:
    """A per-row dataset of every shard, put back in corpus order."""
    out = np.empty((n_rows, *files[0][path].shape[1:]), dtype=dtype or files[0][path].dtype)
    for file, index in zip(files, indices, strict=False):
        with _reading(file):
            out[index] = file[path][()]
    return out


def _gather_strings(files, indices, n_rows: int, path: str) -> list[str]:
    out = np.empty(n_rows, dtype=object)
    for file, index in zip(files, indices, strict=False):
        with _reading(file):
            out[index] = read_strings(file[path])
    return list(out)


def _token_positions(shard_offsets: np.ndarray, rows: np.ndarray, out_offsets: np.ndarray, out_base: int) -> np.ndarray:
    """Destination positions (relative to ``out_base``) of the tokens of shard rows, in shard order."""
    lengths = np.diff(shard_offsets)
    starts = out_offsets[rows] - out_base
    within = np.arange(int(lengths.sum())) - np.repeat(shard_offsets[:-1] - shard_offsets[0], lengths)
    return np.repeat(starts, lengths) + within


def _gather_tokens(files, indices, out_offsets, path) -> np.ndarray:
    out = np.empty(int(out_offsets[-1]), dtype=np.int32)
    for file, index in zip(files, indices, strict=False):
        with _reading(file):
            out[_token_positions(file[s.TOKEN_OFFSETS][()], index, out_offsets, 0)] = file[path][()]
    return out


def _labels(files, indices, n_rows: int) -> dict[str, StoredLabels]:
    labels = {}
    first = files[0]
    for key in first[s.LABELS]:
        dataset = first[s.LABELS][key]
        column, names = str(dataset.attrs[s.LABEL_COLUMN]), loads_json(dataset.attrs[s.LABEL_NAMES])
        for file in files[1:]:
            if key not in file[s.LABELS] or loads_json(file[s.LABELS][key].attrs[s.LABEL_NAMES]) != names:
                raise StoreError(f"{file.filename} has other label classes in column '{column}' than the first shard")
        labels[column] = StoredLabels(column, _gather(files, indices, n_rows, s.label_path(column)), names)
    return labels


def merged_rows(files, indices, n_rows: int) -> MergedRows:
    """Row metadata of the whole corpus from its shards."""
    first = files[0]
    with_tokens = s.TOKENS in first
    n_kept = _gather(files, indices, n_rows, s.N_KEPT).astype(np.int64)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(n_kept, out=offsets[1:])
    rows = MergedRows(
        texts=_gather_strings(files, indices, n_rows, s.TEXT),
        ids=_gather_strings(files, indices, n_rows, s.IDS),
        split=_gather_strings(files, indices, n_rows, s.SPLIT) if s.SPLIT in first else None,
        labels=_labels(files, indices, n_rows),
        full_lengths=_gather(files, indices, n_rows, s.N_TOKENS).astype(np.int32),
        lengths=n_kept.astype(np.int32),
        offsets=offsets,
    )
    if all(s.CONTRAST_N_KEPT in file for file in files):
        rows.contrast = [AnswerLengths(column) for column in _gather(files, indices, n_rows, s.CONTRAST_N_KEPT).T]
    if with_tokens:
        rows.input_ids = _gather_tokens(files, indices, offsets, s.TOKEN_INPUT_IDS)
        rows.word_ids = _gather_tokens(files, indices, offsets, s.TOKEN_WORD_IDS)
    return rows


def merged_attrs(files, fingerprint: str, indices=None) -> dict:
    """The merged file's provenance: the first shard's, without what is shard- or layout-specific; the
    prompt of row 0 (``--template``) from the shard holding corpus row 0, as a one-process run records it."""
    attrs = {
        key: value for key, value in files[0].attrs.items() if key not in s.SHARD_ATTRS and key not in s.LAYOUT_ATTRS
    }
    holder = next(
        (file for file, rows in zip(files, indices or [], strict=False) if (np.asarray(rows) == 0).any()), None
    )
    if holder is not None and s.PROMPT_EXAMPLE in holder.attrs:
        attrs[s.PROMPT_EXAMPLE] = holder.attrs[s.PROMPT_EXAMPLE]
    options = loads_json(attrs.get(s.OPTIONS, "{}"))
    options.pop("shard_index", None)
    attrs[s.OPTIONS] = json.dumps(options)
    attrs[s.FINGERPRINT] = fingerprint
    attrs[s.CREATED] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    attrs[s.MERGED_FROM] = json.dumps(
        [
            {
                "file": Path(file.filename).name,
                "rows": int(file.attrs[s.N_ROWS]),
                "device": str(file.attrs.get(s.DEVICE, "")),
            }
            for file in files
        ]
    )
    return attrs


def create_merged(output: Path, files, indices, n_rows: int, fingerprint: str) -> FeatureWriter:
    """Start the merged file: the shards' layout and the corpus-order rows."""
    first = files[0]
    rows = merged_rows(files, indices, n_rows)
    return FeatureWriter.create(
        output,
        merged_attrs(files, fingerprint, indices),
        rows,
        rows,
        s.layouts_from_attrs(first.attrs),
        np.dtype(str(first.attrs[s.STORE_DTYPE])),
        bool(first.attrs[s.WITH_TOKENS]),
    )


def _blocks(writer: FeatureWriter, plan_blocks) -> list[tuple[int, int]]:
    itemsize = np.dtype(str(writer.attrs[s.STORE_DTYPE])).itemsize
    row_bytes = sum(site.row_bytes(itemsize) for site in writer.sites)
    offsets = writer.token_offsets
    if offsets is None:
        return plan_blocks(writer.n_rows, int(max(1, BLOCK_BYTES // max(1, row_bytes))))
    token_bytes = sum(site.token_bytes(itemsize) for site in writer.sites)
    return plan_blocks(
        writer.n_rows, int(max(1, BLOCK_BYTES // max(1, row_bytes))), np.diff(offsets), BLOCK_BYTES / token_bytes
    )


def _finite(file, path: str, rows: slice) -> np.ndarray:
    """Rows of a shard's dataset, refused when any value is inf or NaN (a damaged shard is never merged)."""
    with _reading(file):
        values = file[path][rows]
    finite = finite_rows(values)
    if not finite.all():
        row = rows.start + int(np.argmin(finite))
        raise StoreError(
            f"shard {Path(file.filename).name} holds inf or NaN values in '{path}' (its row {row}); "
            "nothing was merged or deleted",
            _redo_shard(),
        )
    return values


def copy_shards(writer: FeatureWriter, files, indices, plan_blocks, progress: bool = False) -> None:
    """Copy every site's features from the shards into ``writer`` block by block in corpus order,
    committing each block (an interrupted merge resumes at the last one)."""
    from ..progress import progress_bar

    offsets = writer.token_offsets
    row_paths = [path for site in writer.sites for path in site.pooled_paths.values()]
    token_paths = [site.tokens_path for site in writer.sites] if offsets is not None else []
    shard_offsets = [_token_offsets(file) for file in files] if offsets is not None else None
    start_row = writer.rows_done
    with progress_bar(total=writer.n_rows, initial=start_row, unit="rows", disable=not progress, desc="merge") as bar:
        for start, stop in _blocks(writer, plan_blocks):
            if stop <= start_row:
                continue
            values = _read_block(files, indices, start, stop, row_paths, token_paths, offsets, shard_offsets)
            writer.write_block(start, stop, values)
            writer.commit(stop)
            bar.update(stop - start)


def _token_offsets(file: ShardFile) -> np.ndarray:
    with _reading(file):
        return file[s.TOKEN_OFFSETS][()]


def _read_block(
    files,
    indices,
    start: int,
    stop: int,
    row_paths: list[str],
    token_paths: list[str],
    offsets: np.ndarray | None,
    shard_offsets: list[np.ndarray] | None,
) -> dict[str, np.ndarray]:
    """Rows ``[start, stop)`` of every dataset (and their tokens), gathered from the shards that hold them;
    ``offsets`` are the merged file's token offsets, ``shard_offsets`` each shard's (None without tokens)."""
    values = {path: np.empty((stop - start,) + files[0][path].shape[1:], files[0][path].dtype) for path in row_paths}
    base = int(offsets[start]) if offsets is not None else 0
    if offsets is not None:
        for path in token_paths:
            values[path] = np.empty((int(offsets[stop]) - base,) + files[0][path].shape[1:], files[0][path].dtype)
    for k, (file, index) in enumerate(zip(files, indices, strict=False)):
        # A shard's rows are ascending, so those falling in [start, stop) are one contiguous slice.
        lo, hi = np.searchsorted(index, [start, stop])
        if lo == hi:
            continue
        for path in row_paths:
            values[path][index[lo:hi] - start] = _finite(file, path, slice(lo, hi))
        if offsets is not None and shard_offsets is not None and token_paths:
            shard = shard_offsets[k][lo : hi + 1]
            destination = _token_positions(shard, index[lo:hi], offsets, base)
            for path in token_paths:
                values[path][destination] = _finite(file, path, slice(int(shard[0]), int(shard[-1])))
    return values

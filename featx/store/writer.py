"""A crash-safe writer of features files.

Every dataset is created at full size with its storage allocated up front, so writing features never
changes HDF5 metadata. A SIGKILL can then only leave unwritten or half-written raw data past
``rows_done``, which resume overwrites. The file lives at ``<name>.partial`` until every row is in,
then is marked complete and renamed into place, so an earlier complete file is never touched by a
failed run.

The datasets of a new file are ``create.py``'s, the HDF5 primitives (preallocation, flushed writes, error
mapping, disk reservation) ``hdf5.py``'s; ``add_label_columns`` adds labels to a finished file atomically.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from pathlib import Path
from typing import BinaryIO

import h5py
import numpy as np

from ..errors import StoreError
from ..safe_files import atomic_write, loads_json
from . import schema as s
from .create import populate, write_label
from .damage import HDF5_ERRORS
from .hdf5 import (
    as_os_error,
    file_identity,
    file_size,
    preallocated,
    quiet_cleanup,
    reserve_space,
    row_chunks,
)
from .schema import SiteLayout, creating_path, partial_path
from .structure import root_attributes
from .words import create_words, word_value_paths


def resumable(final_path: Path) -> bool:
    """Whether ``<name>.partial`` exists and can be reopened with its progress marker.

    ``.partial`` only ever appears fully created (see ``FeatureWriter.create``), so an
    unreadable one holds no rows anyone could use: the caller starts over.
    """
    path = partial_path(final_path)
    if path.is_symlink() or not path.is_file():  # a planted link is never resumed (nor written through)
        return False
    try:
        with h5py.File(path, "r", locking=False) as file:  # each attribute checked before it is read
            return root_attributes(file, path).get(s.FORMAT) == s.FORMAT_NAME and s.ROWS_DONE in file
    except (*HDF5_ERRORS, StoreError):  # damaged (damage.py), or not featx's
        return False


class FeatureWriter:
    """Writes one features file block by block; see the module docstring for the guarantees.

    Blocks are ``{dataset path: values}`` maps over every site's datasets (``SiteLayout.pooled_paths``,
    ``SiteLayout.tokens_path``), hidden included: pooled values are rows ``[start, stop)``, token-level
    values are those rows' tokens.
    """

    def __init__(self, file: h5py.File, final_path: Path):
        self.file = file
        self.final_path = final_path
        self.sites = s.layouts_from_attrs(file.attrs)
        with_tokens = bool(file.attrs[s.WITH_TOKENS])
        # Handles stay open for the writer's lifetime so that ``file.flush()`` flushes their chunk
        # caches and raises on failure; a temporary handle would flush while being garbage-collected,
        # where HDF5 errors (ENOSPC) are only printed, and committed rows would silently be zeros.
        self._rows_done = file[s.ROWS_DONE]
        self._committed = int(self._rows_done[0])  # the marker as last written, readable after close
        self._identity = file_identity(partial_path(final_path))
        self._block_progress = file.get(s.BLOCK_PROGRESS)  # absent in older files
        self._row_datasets = {path: file[path] for site in self.sites for path in site.pooled_paths.values()}
        self._token_datasets = {site.tokens_path: file[site.tokens_path] for site in self.sites} if with_tokens else {}
        self._token_offsets = file[s.TOKEN_OFFSETS][()] if with_tokens else None
        # Word inputs: word vectors are written by their rows' words, like token states by their tokens.
        word_paths = word_value_paths(loads_json(file.attrs[s.WORD_POOLINGS])) if s.WORDS in file else []
        self._word_datasets = {path: file[path] for path in word_paths}
        self._word_offsets = file[s.WORD_OFFSETS][()] if word_paths else None

    @classmethod
    def create(
        cls,
        final_path: Path,
        attrs: dict,
        corpus,
        tokenized,
        sites: list[SiteLayout],
        store_dtype,
        with_tokens: bool,
        row_index: np.ndarray | None = None,
        word_poolings=(),
    ) -> FeatureWriter:
        """A new ``<final_path>.partial`` for ``corpus`` (its rows, labels) as ``tokenized``, with ``sites``
        (``hidden`` first); ``attrs`` are the provenance attributes; ``row_index`` marks a shard file;
        ``word_poolings`` the word vectors of a corpus of words (``corpus.words``)."""
        # Built under a temporary name and renamed to .partial only once fully created and
        # flushed: a kill during creation then never leaves a damaged .partial behind.
        path = creating_path(final_path)
        for stale in (path, partial_path(final_path)):
            # A planted (even dangling) symbolic link is removed, never written through.
            if stale.is_symlink() or stale.exists():
                stale.unlink()
        try:
            file = h5py.File(path, "x")  # O_CREAT|O_EXCL: fails rather than follow a link that reappeared
        except OSError as err:
            raise StoreError(
                f"cannot create {path}: {err}", "check the output directory exists and is writable"
            ) from None
        try:
            as_os_error(populate)(file, attrs, corpus, tokenized, sites, np.dtype(store_dtype), with_tokens, row_index)
            if getattr(corpus, "words", None) is not None:
                _create_words(file, corpus.words, tokenized, sites[0], np.dtype(store_dtype), word_poolings)
            as_os_error(file.flush)()
            reserve_space(path)
        except BaseException as err:
            failure = _creation_failure(err, file, path, final_path)
            if failure is None:
                raise
            raise failure from None
        os.replace(path, partial_path(final_path))
        return cls(file, final_path)

    @classmethod
    def resume(cls, final_path: Path) -> FeatureWriter:
        path = partial_path(final_path)
        try:
            file = h5py.File(path, "r+")
        except OSError as err:
            raise StoreError(
                f"the unfinished extraction {path} cannot be reopened ({err})",
                "it may be damaged; run again with --overwrite to start over",
            ) from None
        return cls(file, final_path)

    @property
    def attrs(self) -> h5py.AttributeManager:
        return self.file.attrs

    @property
    def rows_done(self) -> int:
        return int(self._rows_done[0]) if self.file.id.valid else self._committed

    def _check_in_place(self) -> None:
        """The file being written is still the one at ``<output>.partial`` (not removed or replaced)."""
        if file_identity(partial_path(self.final_path)) != self._identity:
            raise StoreError(
                f"{partial_path(self.final_path)} was removed or replaced while featx was writing it; "
                "the rows written to it are lost",
                "run the same featx extract command again (it starts over)",
            )

    @property
    def n_rows(self) -> int:
        return int(self.file.attrs[s.N_ROWS])

    @property
    def token_offsets(self) -> np.ndarray | None:
        return self._token_offsets

    @property
    def word_offsets(self) -> np.ndarray | None:
        """Word inputs: ``(n_rows + 1,)`` offsets of each row's words, else None."""
        return self._word_offsets

    def matches(self, fingerprint: str, merge: bool = False) -> bool:
        """Whether this unfinished file is the one ``fingerprint`` asks for (and a merge, if ``merge``)."""
        return self.file.attrs.get(s.FINGERPRINT) == fingerprint and (not merge or s.MERGED_FROM in self.file.attrs)

    @as_os_error
    def write_block(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        """Write rows ``[start, stop)`` of the datasets in ``values``; they count as committed only after ``commit``."""
        for path, data in values.items():
            if path in self._token_datasets:
                first, last = _span(self._token_offsets, start, stop)
                self._token_datasets[path][first:last] = data
            elif path in self._word_datasets:
                first, last = _span(self._word_offsets, start, stop)
                if last > first:
                    self._word_datasets[path][first:last] = data
            else:
                self._row_datasets[path][start:stop] = data

    @as_os_error
    def commit(self, rows_done: int) -> None:
        # Data first, marker second: a crash between the two only redoes the block.
        self._flush_data()
        self._rows_done[0] = rows_done
        self._rows_done.flush()
        self.file.flush()
        self._committed = rows_done
        self._check_in_place()

    @property
    def commits_inside_blocks(self) -> bool:
        """Whether this file can record batches committed inside a block (files from before cannot)."""
        return self._block_progress is not None

    @as_os_error
    def commit_batches(self, block_start: int, batches_done: int) -> None:
        """Mark the first ``batches_done`` batches of the block starting at ``rows_done`` as written.

        Their rows (written with ``write_block`` before) count as committed for resuming only: readers
        still see ``[0, rows_done)``. Data first, marker second, as in ``commit``.
        """
        if self._block_progress is None:
            return
        self._flush_data()
        self._block_progress[:] = np.array([block_start, batches_done], dtype=np.int64)
        self._block_progress.flush()
        self.file.flush()

    def batches_done(self, block_start: int) -> int:
        """Batches of the block starting at ``block_start`` already written (0 unless it is the next one)."""
        if self._block_progress is None or block_start != self.rows_done:
            return 0
        start, done = (int(value) for value in self._block_progress[()])
        return max(0, done) if start == block_start else 0

    def read_block(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        """Read rows ``[start, stop)`` of the datasets in ``values`` back into those buffers (resuming a block)."""
        for path, out in values.items():
            if path in self._token_datasets:
                first, last = _span(self._token_offsets, start, stop)
                self._token_datasets[path].read_direct(out, np.s_[first:last])
            elif path in self._word_datasets:
                first, last = _span(self._word_offsets, start, stop)
                if last > first:
                    self._word_datasets[path].read_direct(out, np.s_[first:last])
            else:
                self._row_datasets[path].read_direct(out, np.s_[start:stop])

    def _flush_data(self) -> None:
        for dataset in (*self._row_datasets.values(), *self._token_datasets.values(), *self._word_datasets.values()):
            dataset.flush()
        self.file.flush()

    def set_attrs(self, **attrs) -> None:
        """Add or replace root attributes (e.g. a shard's), flushed at once."""
        self.file.attrs.update(attrs)
        self.file.flush()

    @as_os_error
    def finish(self) -> Path:
        if self.rows_done != self.n_rows:
            raise StoreError("internal error: finishing a file whose rows are not all written")
        self._check_in_place()
        self.file.attrs[s.COMPLETE] = True
        self.file.flush()
        self.file.close()
        try:
            os.replace(partial_path(self.final_path), self.final_path)
        except FileNotFoundError:
            self._check_in_place()
            raise
        return self.final_path

    def close(self) -> None:
        """Close after success or failure. After a failed write (a full disk) HDF5 tries to flush
        again while closing and can only print the error; what counts is the committed marker."""
        with quiet_cleanup():
            self._row_datasets, self._token_datasets, self._word_datasets = {}, {}, {}
            if self.file.id.valid:
                self.file.close()


def _span(offsets: np.ndarray | None, start: int, stop: int) -> tuple[int, int]:
    """Rows ``[start, stop)``'s tokens (or words) in a dataset indexed by ``offsets``, which such a dataset has."""
    assert offsets is not None
    return int(offsets[start]), int(offsets[stop])


def _create_words(file: h5py.File, words, tokenized, hidden: SiteLayout, store_dtype: np.dtype, word_poolings) -> None:
    """A corpus of words: its word table and the hidden site's word vectors (``words.create_words``)."""
    as_os_error(create_words)(
        file,
        words,
        tokenized.n_subwords,
        word_poolings,
        len(hidden.layers),
        hidden.width,
        store_dtype,
        preallocated,
        row_chunks,
    )


def _creation_failure(err: BaseException, file: h5py.File, path: Path, final_path: Path) -> StoreError | None:
    """Close and remove the half-created file; the ``StoreError`` to raise for an ``OSError`` (a full disk
    says how much the file needs), None to re-raise ``err`` itself."""
    with quiet_cleanup():
        file.close()
    needed = file_size(path)
    path.unlink(missing_ok=True)
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
        return StoreError(
            f"not enough disk space for {partial_path(final_path)}: the features file needs "
            f"{needed / 1e6:,.1f} MB ({err.strerror})",
            "free disk space or choose another output with -o, then run the same command again",
        )
    if isinstance(err, OSError):
        return StoreError(
            f"cannot create {partial_path(final_path)}: {err}",
            "free disk space (or fix the problem) and run the same command again",
        )
    return None


ADDING_SUFFIX = ".adding"
COPY_BYTES = 8 << 20  # add_label_columns copies the features file in pieces of this size


def _adding_name(path: Path) -> re.Pattern:
    """The names ``add_label_columns`` gives its copies of ``path`` (``atomic_write``'s ``mkstemp``: 8 random
    characters)."""
    return re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}" + re.escape(ADDING_SUFFIX))


def remove_stale_additions(path: Path) -> list[Path]:
    """Remove the hidden copies of ``path`` that a killed ``add_label_columns`` left (each as large as the file);
    the caller holds ``path``'s ``OutputLock``, so no running add owns one. Returns what was removed."""
    path = Path(path)
    pattern = _adding_name(path)
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            if pattern.fullmatch(entry.name) and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


def add_label_columns(path: Path, columns: dict) -> None:
    """Store label columns (``LabelColumn``s in the file's row order) in a finished features file, atomically:
    the file is copied into a fresh hidden file beside itself, the copy gets the columns and is renamed over the
    original (with its mode), so a failed or interrupted add leaves the file as it was. The copy is written and
    read through its descriptor only (``safe_files.atomic_write``), never reopened by its name."""
    import shutil

    path = Path(path)

    def write(handle: BinaryIO) -> None:
        with open(path, "rb") as source:
            shutil.copyfileobj(source, handle, COPY_BYTES)
        with h5py.File(handle, "r+") as file:
            for name, column in columns.items():
                write_label(file, name, column)

    atomic_write(path, write, readable=True, mode=stat.S_IMODE(os.stat(path).st_mode), suffix=ADDING_SUFFIX)

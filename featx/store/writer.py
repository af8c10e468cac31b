"""A crash-safe writer of features files.

Every dataset is created at full size with its storage allocated up front, so writing features never
changes HDF5 metadata. A SIGKILL can then only leave unwritten or half-written raw data past
``rows_done``, which resume overwrites. The file lives at ``<name>.partial`` until every row is in,
then is marked complete and renamed into place, so an earlier complete file is never touched by a
failed run.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import os
import re
import sys
from pathlib import Path

import h5py
import numpy as np

from ..errors import StoreError
from . import schema as s
from .schema import SiteLayout, creating_path, partial_path
from .strings import write_strings
from .words import create_words, word_value_paths

CHUNK_BYTES = 1 << 20


def resumable(final_path: Path) -> bool:
    """Whether ``<name>.partial`` exists and can be reopened with its progress marker.

    ``.partial`` only ever appears fully created (see ``FeatureWriter.create``), so an
    unreadable one holds no rows anyone could use: the caller starts over.
    """
    path = partial_path(final_path)
    if path.is_symlink() or not path.is_file():  # a planted link is never resumed (nor written through)
        return False
    try:
        with h5py.File(path, "r", locking=False) as file:
            return file.attrs.get(s.FORMAT) == s.FORMAT_NAME and s.ROWS_DONE in file
    except Exception:  # h5py raises OSError, KeyError or RuntimeError on damaged files
        return False


def _preallocated(group: h5py.Group, name: str, shape: tuple[int, ...], dtype, chunks=None) -> h5py.Dataset:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    return group.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, dcpl=dcpl)


def _written(group: h5py.Group, name: str, **kwargs) -> h5py.Dataset:
    """``create_dataset`` with data, flushed at once: HDF5 would otherwise write the data when the
    handle is garbage-collected, where a write error (a full disk) is printed and ignored."""
    dataset = group.create_dataset(name, **kwargs)
    dataset.flush()
    return dataset


def _as_os_error(method):
    """h5py reports some failed writes (a full disk) as RuntimeError; callers handle them as OSError."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except RuntimeError as err:
            found = re.search(r"errno = (\d+)", str(err))
            code = int(found.group(1)) if found else errno.EIO
            raise OSError(code, os.strerror(code) if found else str(err)) from err

    return wrapper


@contextlib.contextmanager
def _quiet_cleanup():
    """Closing HDF5 handles after a failed write flushes again; h5py then prints the same error as
    "Exception ignored" with a traceback (through sys.excepthook and sys.unraisablehook). The failure
    was already reported, so silence the echo while closing."""
    hooks = sys.excepthook, sys.unraisablehook
    sys.excepthook = lambda *args: None
    sys.unraisablehook = lambda unraisable: None
    try:
        yield
    except Exception:
        pass
    finally:
        sys.excepthook, sys.unraisablehook = hooks


def _reserve_space(path: Path) -> None:
    """Allocate the whole (sparse, preallocated) file on disk now, so that a full disk is reported
    before the first row is computed rather than hours later.

    Uses Linux ``fallocate(2)`` directly: ``os.posix_fallocate`` falls back to writing every block
    where the filesystem lacks support (slow on network filesystems); there we simply skip it.
    """
    fallocate = _linux_fallocate()
    if fallocate is None:
        return
    descriptor = os.open(path, os.O_RDWR)
    try:
        if fallocate(descriptor, 0, 0, os.fstat(descriptor).st_size) != 0:
            code = ctypes.get_errno()
            if code not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                raise OSError(code, os.strerror(code), str(path))
    finally:
        os.close(descriptor)


@functools.lru_cache(maxsize=1)
def _linux_fallocate():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.fallocate64 if hasattr(libc, "fallocate64") else libc.fallocate
    except (OSError, AttributeError):  # not Linux/glibc
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    function.restype = ctypes.c_int
    return function


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _row_chunks(n_rows: int, row_bytes: int) -> int:
    return int(max(1, min(n_rows, CHUNK_BYTES // max(1, row_bytes))))


def allocated_rows(n_rows: int, width: int, itemsize: int) -> int:
    """Rows a feature dataset of ``n_rows`` takes on disk: whole chunks (one layer of a block of rows)."""
    chunk = _row_chunks(n_rows, width * itemsize)
    return -(-n_rows // chunk) * chunk if n_rows else 0


class FeatureWriter:
    """Writes one features file window by window; see the module docstring for the guarantees.

    Windows are ``{dataset path: values}`` maps over every site's datasets (``SiteLayout.pooled_paths``,
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
        self._identity = _identity(partial_path(final_path))
        self._window = file[s.WINDOW_PROGRESS] if s.WINDOW_PROGRESS in file else None  # absent in older files
        self._row_datasets = {path: file[path] for site in self.sites for path in site.pooled_paths.values()}
        self._token_datasets = {site.tokens_path: file[site.tokens_path] for site in self.sites} if with_tokens else {}
        self._token_offsets = file[s.TOKEN_OFFSETS][()] if with_tokens else None
        # Word inputs: word vectors are written by their rows' words, like token states by their tokens.
        word_paths = word_value_paths(json.loads(file.attrs[s.WORD_POOLINGS])) if s.WORDS in file else []
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
            _as_os_error(_populate)(
                file, attrs, corpus, tokenized, sites, np.dtype(store_dtype), with_tokens, row_index
            )
            if getattr(corpus, "words", None) is not None:
                hidden = sites[0]
                _as_os_error(create_words)(
                    file,
                    corpus.words,
                    tokenized.n_subwords,
                    word_poolings,
                    len(hidden.layers),
                    hidden.width,
                    np.dtype(store_dtype),
                    _preallocated,
                    _row_chunks,
                )
            _as_os_error(file.flush)()
            _reserve_space(path)
        except BaseException as err:
            with _quiet_cleanup():
                file.close()
            needed = _file_size(path)
            path.unlink(missing_ok=True)
            if isinstance(err, OSError) and err.errno == errno.ENOSPC:
                raise StoreError(
                    f"not enough disk space for {partial_path(final_path)}: the features file needs "
                    f"{needed / 1e6:,.1f} MB ({err.strerror})",
                    "free disk space or choose another output with -o, then run the same command again",
                ) from None
            if isinstance(err, OSError):
                raise StoreError(
                    f"cannot create {partial_path(final_path)}: {err}",
                    "free disk space (or fix the problem) and run the same command again",
                ) from None
            raise
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
        if _identity(partial_path(self.final_path)) != self._identity:
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

    @_as_os_error
    def write_window(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        """Write rows ``[start, stop)`` of the datasets in ``values``; they count as committed only after ``commit``."""
        for path, data in values.items():
            if path in self._token_datasets:
                first, last = int(self._token_offsets[start]), int(self._token_offsets[stop])
                self._token_datasets[path][first:last] = data
            elif path in self._word_datasets:
                first, last = int(self._word_offsets[start]), int(self._word_offsets[stop])
                if last > first:
                    self._word_datasets[path][first:last] = data
            else:
                self._row_datasets[path][start:stop] = data

    @_as_os_error
    def commit(self, rows_done: int) -> None:
        # Data first, marker second: a crash between the two only redoes the window.
        self._flush_data()
        self._rows_done[0] = rows_done
        self._rows_done.flush()
        self.file.flush()
        self._committed = rows_done
        self._check_in_place()

    @property
    def commits_inside_windows(self) -> bool:
        """Whether this file can record batches committed inside a window (files from before cannot)."""
        return self._window is not None

    @_as_os_error
    def commit_batches(self, window_start: int, batches_done: int) -> None:
        """Mark the first ``batches_done`` batches of the window starting at ``rows_done`` as written.

        Their rows (written with ``write_window`` before) count as committed for resuming only: readers
        still see ``[0, rows_done)``. Data first, marker second, as in ``commit``.
        """
        if self._window is None:
            return
        self._flush_data()
        self._window[:] = np.array([window_start, batches_done], dtype=np.int64)
        self._window.flush()
        self.file.flush()

    def batches_done(self, window_start: int) -> int:
        """Batches of the window starting at ``window_start`` already written (0 unless it is the next one)."""
        if self._window is None or window_start != self.rows_done:
            return 0
        start, done = (int(value) for value in self._window[()])
        return max(0, done) if start == window_start else 0

    def read_window(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        """Read rows ``[start, stop)`` of the datasets in ``values`` back into those buffers (resuming a window)."""
        for path, out in values.items():
            if path in self._token_datasets:
                first, last = int(self._token_offsets[start]), int(self._token_offsets[stop])
                self._token_datasets[path].read_direct(out, np.s_[first:last])
            elif path in self._word_datasets:
                first, last = int(self._word_offsets[start]), int(self._word_offsets[stop])
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

    @_as_os_error
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
        with _quiet_cleanup():
            self._row_datasets, self._token_datasets, self._word_datasets = {}, {}, {}
            if self.file.id.valid:
                self.file.close()


def _populate(
    file: h5py.File,
    attrs: dict,
    corpus,
    tokenized,
    sites: list[SiteLayout],
    store_dtype: np.dtype,
    with_tokens: bool,
    row_index: np.ndarray | None,
) -> None:
    hidden = sites[0]
    n_rows = len(corpus)
    file.attrs.update({key: value for key, value in attrs.items() if value is not None})
    file.attrs.update(
        {
            s.FORMAT: s.FORMAT_NAME,
            s.SCHEMA: s.SCHEMA_VERSION,
            s.LAYERS: json.dumps(list(hidden.layers)),
            s.POOLINGS: json.dumps(list(hidden.poolings)),
            s.N_ROWS: n_rows,
            s.HIDDEN_SIZE: hidden.width,
            s.STORE_DTYPE: store_dtype.name,
            s.WITH_TOKENS: bool(with_tokens),
            s.COMPLETE: False,
        }
    )
    if s.sites_attr(sites):
        file.attrs[s.SITES_ATTR] = s.sites_attr(sites)
    _write_rows(file, corpus, tokenized, row_index)
    itemsize = store_dtype.itemsize
    total = int(tokenized.offsets[-1])
    for site in sites:
        for path in site.pooled_paths.values():
            _preallocated(
                file,
                path,
                (n_rows, len(site.layers), site.width),
                store_dtype,
                chunks=(_row_chunks(n_rows, site.width * itemsize), 1, site.width),
            )
        if with_tokens:
            _preallocated(
                file,
                site.tokens_path,
                (total, len(site.layers), site.width),
                store_dtype,
                chunks=(_row_chunks(total, site.width * itemsize), 1, site.width),
            )
        if site.name != s.HIDDEN_SITE:
            file[s.site_group(site.name)].attrs[s.SITE_NAME] = site.name
        if with_tokens and site.name == s.HIDDEN_SITE:
            _written(file, s.TOKEN_OFFSETS, data=tokenized.offsets.astype(np.int64))
            _written(file, s.TOKEN_INPUT_IDS, data=tokenized.input_ids.astype(np.int32))
            _written(file, s.TOKEN_WORD_IDS, data=tokenized.word_ids.astype(np.int32))
            _write_pair_tokens(file, tokenized)
    rows_done = _preallocated(file, s.ROWS_DONE, (1,), np.int64)
    rows_done[0] = 0
    rows_done.flush()
    window = _preallocated(file, s.WINDOW_PROGRESS, (2,), np.int64)
    window[:] = np.array([-1, 0], dtype=np.int64)
    window.flush()


def _write_rows(file: h5py.File, corpus, tokenized, row_index: np.ndarray | None) -> None:
    rows = file.create_group(s.ROWS)
    write_strings(file, s.TEXT, corpus.texts)
    write_strings(file, s.IDS, corpus.ids)
    if corpus.split is not None:
        write_strings(file, s.SPLIT, corpus.split)
    _written(rows.file, s.N_TOKENS, data=tokenized.full_lengths.astype(np.int32))
    _written(rows.file, s.N_KEPT, data=tokenized.lengths.astype(np.int32))
    _written(rows.file, s.TRUNCATED, data=tokenized.truncated)
    if row_index is not None:
        _written(rows.file, s.ROW_INDEX, data=np.asarray(row_index, dtype=np.int64))
    _write_pair_rows(file, corpus, tokenized)
    file.create_group(s.LABELS, track_order=True)  # label_columns in corpus order
    for name, column in corpus.labels.items():
        write_label(file, name, column)


def _write_pair_rows(file: h5py.File, corpus, tokenized) -> None:
    """Sentence pairs: each row's second text, and side b's token counts in separate mode."""
    pair_texts = getattr(corpus, "pair_texts", None)
    if pair_texts is None:
        return
    write_strings(file, s.PAIR_TEXT, pair_texts)
    side_b = getattr(tokenized, "pair", None)
    if side_b is not None:
        _written(file, s.PAIR_N_TOKENS, data=side_b.full_lengths.astype(np.int32))
        _written(file, s.PAIR_N_KEPT, data=side_b.lengths.astype(np.int32))


def _write_pair_tokens(file: h5py.File, tokenized) -> None:
    """Cross-mode pairs with ``--tokens``: each token's segment (0 = a, 1 = b, -1 = special) and type id."""
    if getattr(tokenized, "segments", None) is None:
        return
    _written(file, s.TOKEN_SEGMENT_IDS, data=tokenized.segments.astype(np.int8))
    _written(file, s.TOKEN_TYPE_IDS, data=tokenized.type_ids.astype(np.int32))


def write_label(file: h5py.File, name: str, column) -> None:
    """One label column: its codes and class names, and its float values when it looks continuous."""
    dataset = _written(file, s.label_path(name), data=column.codes.astype(np.int32))
    dataset.attrs[s.LABEL_COLUMN] = name
    dataset.attrs[s.LABEL_NAMES] = json.dumps(column.names)
    if getattr(column, "looks_continuous", False):
        _written(file, s.label_values_path(name), data=column.values().astype(np.float64))


def add_label_columns(path: Path, columns: dict) -> None:
    """Store label columns (``LabelColumn``s in the file's row order) in a finished features file, atomically:
    the file is copied beside itself, the copy gets the columns and is renamed over the original, so a
    failed or interrupted add leaves the file as it was."""
    import shutil
    import tempfile

    path = Path(path)
    descriptor, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".adding")
    os.close(descriptor)
    try:
        shutil.copyfile(path, tmp)
        shutil.copymode(path, tmp)
        with h5py.File(tmp, "r+") as file:
            for name, column in columns.items():
                write_label(file, name, column)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

"""The HDF5 features file: its layout, a crash-safe writer and a reader.

Layout (schema 1)::

    /                      attrs: provenance and options (see ``FeatureWriter.create``), ``complete``
    /rows/text             (N,) UTF-8 strings; attr ``escaped`` when NUL had to be escaped (``read_strings``)
    /rows/id               (N,) UTF-8 strings, likewise
    /rows/split            (N,) UTF-8 strings (only if the corpus had a ``split`` column), likewise
    /rows/n_tokens         (N,) int32, tokens before truncation, special tokens included
    /rows/n_kept           (N,) int32, tokens fed to the model
    /rows/truncated        (N,) bool
    /labels/<column>       (N,) int32 class codes, -1 = missing; attrs ``column`` (original name), ``names`` (JSON)
    /pooled/<pooling>      (N, L, H) features of every stored layer; one chunk holds one layer of a row block
    /tokens/states         (T, L, H) token-level states (only with ``--tokens``)
    /tokens/offsets        (N+1,) int64, row i owns tokens offsets[i]:offsets[i+1]
    /tokens/input_ids      (T,) int32
    /tokens/word_ids       (T,) int32, -1 for special tokens
    /sites/<site>/pooled/<pooling>  (N, L_site, W_site) another site's features (featx/sites.py); the
                           ``hidden`` site is ``/pooled`` above, so files without sites read as before
    /sites/<site>/tokens/states     (T, L_site, W_site) its token-level states (only with ``--tokens``)
    /progress/rows_done    (1,) int64, rows [0, rows_done) are committed

Crash safety: every dataset is created at full size with its storage allocated
up front, so writing features never changes HDF5 metadata. A SIGKILL can then
only leave unwritten or half-written raw data past ``rows_done``, which resume
overwrites. The file lives at ``<name>.partial`` until every row is in, then is
marked complete and renamed into place, so an earlier complete file is never
touched by a failed run.
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
from typing import Iterable

import h5py
import numpy as np

from .errors import IncompleteError, StoreError

SCHEMA_VERSION = 1
FORMAT_NAME = "featx-features"
PARTIAL_SUFFIX = ".partial"
CREATING_SUFFIX = ".creating"
CHUNK_BYTES = 1 << 20
HIDDEN_SITE = "hidden"
TOKENS_SUFFIX = "/tokens/states"


def site_pooled_path(site: str, pooling: str) -> str:
    """Dataset path of one pooling of a site (``hidden`` lives at ``pooled/<pooling>``)."""
    return f"pooled/{pooling}" if site == HIDDEN_SITE else f"sites/{escape_name(site)}/pooled/{pooling}"


def site_tokens_path(site: str) -> str:
    return "tokens/states" if site == HIDDEN_SITE else f"sites/{escape_name(site)}{TOKENS_SUFFIX}"


def escape_name(name: str) -> str:
    """A column name made safe as one HDF5 link name ('/' would create groups)."""
    escaped = name.replace("%", "%25").replace("/", "%2F")
    return "%2E" if escaped == "." else escaped


def partial_path(path: Path) -> Path:
    return path.with_name(path.name + PARTIAL_SUFFIX)


def creating_path(path: Path) -> Path:
    """Where a new file is built before it becomes ``<name>.partial`` (a kill here loses nothing)."""
    return path.with_name(path.name + PARTIAL_SUFFIX + CREATING_SUFFIX)


def resumable(final_path: Path) -> bool:
    """Whether ``<name>.partial`` exists and can be reopened with its progress marker.

    ``.partial`` only ever appears fully created (see ``FeatureWriter.create``), so an
    unreadable one holds no rows anyone could use: the caller starts over.
    """
    path = partial_path(final_path)
    if not path.exists():
        return False
    try:
        with h5py.File(path, "r", locking=False) as file:
            return file.attrs.get("format") == FORMAT_NAME and "progress/rows_done" in file
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


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _row_chunks(n_rows: int, row_bytes: int) -> int:
    return int(max(1, min(n_rows, CHUNK_BYTES // max(1, row_bytes))))


STRING_ESCAPE = "\uffff"  # a Unicode noncharacter: in practice never in real text
_ESCAPED = re.compile("\uffff(.)", re.DOTALL)


def _strings(values: Iterable[str]) -> tuple[np.ndarray, bool]:
    """Strings for an HDF5 dataset, and whether they were escaped. HDF5 strings cannot hold NUL, so a
    column with NUL (or the escape character itself) is stored escaped, losslessly: NUL as
    U+FFFF "0", U+FFFF as U+FFFF "e". The dataset's ``escaped`` attribute says so to readers."""
    values = list(values)
    escaped = any("\x00" in value or STRING_ESCAPE in value for value in values)
    if escaped:
        values = [value.replace(STRING_ESCAPE, STRING_ESCAPE + "e").replace("\x00", STRING_ESCAPE + "0")
                  for value in values]
    return np.array(values, dtype=object), escaped


def _write_strings(group: h5py.Group, name: str, values: Iterable[str]) -> h5py.Dataset:
    data, escaped = _strings(values)
    dataset = _written(group, name, data=data, dtype=h5py.string_dtype("utf-8"))
    if escaped:
        dataset.attrs["escaped"] = True
    return dataset


def read_strings(dataset: h5py.Dataset, stop: int | None = None) -> list[str]:
    """The strings of a dataset written by ``_write_strings`` (escapes undone), first ``stop`` rows."""
    values = [value.decode() if isinstance(value, bytes) else value for value in dataset[:stop]]
    if dataset.attrs.get("escaped", False):
        values = [_ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else STRING_ESCAPE, value) for value in values]
    return values


class FeatureWriter:
    """Writes one features file window by window; see the module docstring for the guarantees."""

    def __init__(self, file: h5py.File, final_path: Path):
        self.file = file
        self.final_path = final_path
        # Handles stay open for the writer's lifetime so that ``file.flush()`` flushes their chunk
        # caches and raises on failure; a temporary handle would flush while being garbage-collected,
        # where HDF5 errors (ENOSPC) are only printed, and committed rows would silently be zeros.
        self._rows_done = file["progress/rows_done"]
        self._pooled = {name: file["pooled"][name] for name in file["pooled"]}
        self._token_states = file["tokens/states"] if "tokens" in file else None
        self._token_offsets = file["tokens/offsets"][()] if "tokens" in file else None
        self._site_datasets: dict[str, h5py.Dataset] = {}  # "sites/<site>/pooled/<pooling>", ".../tokens/states"
        if "sites" in file:
            file["sites"].visititems(lambda name, item: self._site_datasets.__setitem__(f"sites/{name}", item)
                                     if isinstance(item, h5py.Dataset) else None)

    @classmethod
    def create(cls, final_path: Path, attrs: dict, corpus, tokenized, layers: list[int],
               poolings: list[str], hidden_size: int, store_dtype: np.dtype, with_tokens: bool,
               sites: dict[str, dict] | None = None) -> "FeatureWriter":
        """``sites``: ``{name: {"layers": [...], "width": W, "poolings": [...], ...}}`` beyond ``hidden``."""
        # Built under a temporary name and renamed to .partial only once fully created and
        # flushed: a kill during creation then never leaves a damaged .partial behind.
        path = creating_path(final_path)
        for stale in (path, partial_path(final_path)):
            if stale.exists():
                stale.unlink()
        try:
            file = h5py.File(path, "w")
        except OSError as err:
            raise StoreError(f"cannot create {path}: {err}", "check the output directory exists and is writable") from None
        try:
            _as_os_error(cls._populate)(file, attrs, corpus, tokenized, layers, poolings, hidden_size,
                                        store_dtype, with_tokens, sites)
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

    @staticmethod
    def _populate(file: h5py.File, attrs: dict, corpus, tokenized, layers: list[int], poolings: list[str],
                  hidden_size: int, store_dtype: np.dtype, with_tokens: bool,
                  sites: dict[str, dict] | None = None) -> None:
        n_rows, n_layers = len(corpus), len(layers)
        file.attrs.update({key: value for key, value in attrs.items() if value is not None})
        file.attrs["format"] = FORMAT_NAME
        file.attrs["schema_version"] = SCHEMA_VERSION
        file.attrs["layers"] = json.dumps(layers)
        file.attrs["poolings"] = json.dumps(poolings)
        file.attrs["n_rows"] = n_rows
        file.attrs["hidden_size"] = hidden_size
        file.attrs["store_dtype"] = np.dtype(store_dtype).name
        file.attrs["tokens"] = bool(with_tokens)
        file.attrs["complete"] = False
        if sites:
            file.attrs["sites"] = json.dumps(sites)

        rows = file.create_group("rows")
        _write_strings(rows, "text", corpus.texts)
        _write_strings(rows, "id", corpus.ids)
        if corpus.split is not None:
            _write_strings(rows, "split", corpus.split)
        _written(rows, "n_tokens", data=tokenized.full_lengths.astype(np.int32))
        _written(rows, "n_kept", data=tokenized.lengths.astype(np.int32))
        _written(rows, "truncated", data=tokenized.truncated)

        labels = file.create_group("labels", track_order=True)  # label_columns in corpus order
        for name, column in corpus.labels.items():
            dataset = _written(labels, escape_name(name), data=column.codes.astype(np.int32))
            dataset.attrs["column"] = name
            dataset.attrs["names"] = json.dumps(column.names)

        itemsize = np.dtype(store_dtype).itemsize
        pooled = file.create_group("pooled")
        chunk_rows = _row_chunks(n_rows, hidden_size * itemsize)
        for pooling in poolings:
            _preallocated(pooled, pooling, (n_rows, n_layers, hidden_size), store_dtype,
                          chunks=(chunk_rows, 1, hidden_size))

        if with_tokens:
            tokens = file.create_group("tokens")
            total = int(tokenized.offsets[-1])
            _preallocated(tokens, "states", (total, n_layers, hidden_size), store_dtype,
                          chunks=(_row_chunks(total, hidden_size * itemsize), 1, hidden_size))
            _written(tokens, "offsets", data=tokenized.offsets.astype(np.int64))
            _written(tokens, "input_ids", data=tokenized.input_ids.astype(np.int32))
            _written(tokens, "word_ids", data=tokenized.word_ids.astype(np.int32))

        for name, site in (sites or {}).items():
            group = file.require_group("sites").create_group(escape_name(name))
            group.attrs["site"] = name
            width, n_site_layers = int(site["width"]), len(site["layers"])
            site_pooled = group.create_group("pooled")
            for pooling in site["poolings"]:
                _preallocated(site_pooled, pooling, (n_rows, n_site_layers, width), store_dtype,
                              chunks=(_row_chunks(n_rows, width * itemsize), 1, width))
            if with_tokens:
                total = int(tokenized.offsets[-1])
                _preallocated(group.create_group("tokens"), "states", (total, n_site_layers, width), store_dtype,
                              chunks=(_row_chunks(total, width * itemsize), 1, width))

        progress = file.create_group("progress")
        rows_done = _preallocated(progress, "rows_done", (1,), np.int64)
        rows_done[0] = 0
        rows_done.flush()

    @classmethod
    def resume(cls, final_path: Path) -> "FeatureWriter":
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
        return int(self._rows_done[0])

    @_as_os_error
    def write_window(self, start: int, stop: int, pooled: dict[str, np.ndarray],
                     token_states: np.ndarray | None = None, site_values: dict[str, np.ndarray] | None = None) -> None:
        """Write rows ``[start, stop)``; they count as committed only after ``commit``.

        ``site_values`` maps dataset paths of other sites (``site_pooled_path``, ``site_tokens_path``)
        to their rows (pooled) or tokens (token-level) of the window.
        """
        for pooling, values in pooled.items():
            self._pooled[pooling][start:stop] = values
        if token_states is not None:
            first, last = int(self._token_offsets[start]), int(self._token_offsets[stop])
            self._token_states[first:last] = token_states
        for path, values in (site_values or {}).items():
            if path.endswith(TOKENS_SUFFIX):
                self._site_datasets[path][int(self._token_offsets[start]) : int(self._token_offsets[stop])] = values
            else:
                self._site_datasets[path][start:stop] = values

    @_as_os_error
    def commit(self, rows_done: int) -> None:
        # Data first, marker second: a crash between the two only redoes the window.
        for dataset in (*self._pooled.values(), self._token_states, *self._site_datasets.values()):
            if dataset is not None:
                dataset.flush()
        self.file.flush()
        self._rows_done[0] = rows_done
        self._rows_done.flush()
        self.file.flush()

    @_as_os_error
    def finish(self) -> Path:
        if self.rows_done != int(self.file.attrs["n_rows"]):
            raise StoreError("internal error: finishing a file whose rows are not all written")
        self.file.attrs["complete"] = True
        self.file.flush()
        self.file.close()
        os.replace(partial_path(self.final_path), self.final_path)
        return self.final_path

    def close(self) -> None:
        """Close after success or failure. After a failed write (a full disk) HDF5 tries to flush
        again while closing and can only print the error; what counts is the committed marker."""
        with _quiet_cleanup():
            self._pooled, self._token_states = {}, None
            if self.file.id.valid:
                self.file.close()


def _progress_of(path: Path) -> str:
    try:
        with h5py.File(path, "r", locking=False) as file:
            return f"{int(file['progress/rows_done'][0])} of {int(file.attrs['n_rows'])}"
    except Exception:  # damaged or still being created: the message must not fail
        return "some"


def _decode_attr(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value


class FeatureFile:
    """Read access to a features file: ``features(pooling, layer)`` and row metadata as numpy.

    Only rows that are committed are visible. An incomplete file is refused
    unless ``allow_partial`` is true, in which case it shows the committed prefix.
    """

    def __init__(self, path: str | os.PathLike, allow_partial: bool = False):
        self.path = Path(path)
        actual = self.path
        if not actual.exists():
            if partial_path(actual).exists() and allow_partial:
                actual = partial_path(actual)
            elif partial_path(actual).exists():
                raise IncompleteError(
                    f"{self.path} is incomplete: its extraction is in progress or was interrupted "
                    f"({_progress_of(partial_path(actual))} rows written to {partial_path(actual).name})",
                    "run the same featx extract command again to resume it, or pass --allow-partial "
                    "to use the rows written so far",
                )
            else:
                raise StoreError(f"features file {self.path} does not exist", "create it with featx extract")
        if not h5py.is_hdf5(actual):
            raise StoreError(f"{actual} is not an HDF5 file", "give a features file written by featx extract")
        try:
            self._file = h5py.File(actual, "r", locking=False)
            attrs = {key: _decode_attr(value) for key, value in self._file.attrs.items()}
            rows_done = int(self._file["progress/rows_done"][0]) if "progress/rows_done" in self._file else 0
        except (OSError, KeyError, ValueError) as err:
            raise StoreError(f"{actual} cannot be read; it looks damaged ({err})",
                             "run featx extract again with --overwrite") from None
        if attrs.get("format") != FORMAT_NAME:
            self._file.close()
            raise StoreError(f"{actual} is an HDF5 file but not a featx features file")
        if attrs.get("schema_version") != SCHEMA_VERSION:
            self._file.close()
            raise StoreError(
                f"{actual} uses featx features schema {attrs.get('schema_version')}, this featx reads schema {SCHEMA_VERSION}",
                "re-extract with this featx version (featx extract ... --overwrite)",
            )
        self.attrs = attrs
        self.complete = bool(attrs.get("complete")) and rows_done == int(attrs["n_rows"])
        if not self.complete and not allow_partial:
            self._file.close()
            raise IncompleteError(
                f"{actual} is incomplete: {rows_done} of {attrs['n_rows']} rows written",
                "run the same featx extract command again to resume it, or pass --allow-partial",
            )
        self.n_rows = rows_done if not self.complete else int(attrs["n_rows"])
        self.layers: list[int] = json.loads(attrs["layers"])
        self.poolings: list[str] = json.loads(attrs["poolings"])
        self.hidden_size = int(attrs["hidden_size"])
        # Files written before sites existed have none besides hidden, and read unchanged.
        self._sites: dict[str, dict] = json.loads(attrs["sites"]) if attrs.get("sites") else {}

    # -- context manager -------------------------------------------------------------------
    def close(self) -> None:
        if self._file.id.valid:
            self._file.close()

    def __enter__(self) -> "FeatureFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "complete" if self.complete else f"partial, {self.n_rows} rows committed"
        return (f"FeatureFile({str(self.path)!r}, model={self.attrs.get('model')!r}, rows={self.n_rows}, "
                f"layers={self.layers}, poolings={self.poolings}, {state})")

    # -- features --------------------------------------------------------------------------
    @property
    def sites(self) -> list[str]:
        """Stored sites: ``hidden`` first, then e.g. ``attn_out``, ``ffn`` (see featx/sites.py)."""
        return [HIDDEN_SITE] + list(self._sites)

    def _site(self, site: str) -> dict:
        if site == HIDDEN_SITE:
            return {"layers": self.layers, "width": self.hidden_size, "poolings": self.poolings}
        if site not in self._sites:
            from .errors import InputError

            raise InputError(f"site '{site}' is not stored in {self.path}; stored sites: {', '.join(self.sites)}",
                             "re-extract with featx extract --site ... --overwrite")
        return self._sites[site]

    def site_layers(self, site: str = HIDDEN_SITE) -> list[int]:
        return list(self._site(site)["layers"])

    def site_poolings(self, site: str = HIDDEN_SITE) -> list[str]:
        return list(self._site(site)["poolings"])

    def site_width(self, site: str = HIDDEN_SITE) -> int:
        return int(self._site(site)["width"])

    def _layer_position(self, layer: int, site: str = HIDDEN_SITE) -> int:
        layers = self.site_layers(site)
        if layer < 0:
            layer += max(self.layers) + 1
        if layer not in layers:
            from .errors import InputError

            where = "" if site == HIDDEN_SITE else f" for site '{site}'"
            raise InputError(f"layer {layer} is not stored{where} in {self.path}; stored layers: {layers}")
        return layers.index(layer)

    def features(self, pooling: str, layer: int, dtype=np.float32, site: str = HIDDEN_SITE) -> np.ndarray:
        """``(n_rows, width)`` features of one pooling at one layer of a site; reads only that layer."""
        poolings = self.site_poolings(site)
        if pooling not in poolings:
            from .errors import InputError

            where = "" if site == HIDDEN_SITE else f" for site '{site}'"
            raise InputError(f"pooling '{pooling}' is not stored{where} in {self.path}; stored: {', '.join(poolings)}")
        position = self._layer_position(layer, site)
        dataset = self._file[site_pooled_path(site, pooling)]
        out = np.empty((self.n_rows, dataset.shape[2]), dtype=dataset.dtype)
        if self.n_rows:
            dataset.read_direct(out, np.s_[0 : self.n_rows, position, :])
        return out.astype(dtype, copy=False)

    def concatenated(self, pooling: str, layers: list[int], dtype=np.float32, site: str = HIDDEN_SITE) -> np.ndarray:
        """``(n_rows, width * len(layers))``: the "concatenate the last four layers" feature set."""
        return np.concatenate([self.features(pooling, layer, dtype, site) for layer in layers], axis=1)

    # -- rows ------------------------------------------------------------------------------
    def _rows(self, name: str) -> np.ndarray:
        return self._file["rows"][name][: self.n_rows]

    @property
    def texts(self) -> list[str]:
        return read_strings(self._file["rows"]["text"], self.n_rows)

    @property
    def ids(self) -> list[str]:
        return read_strings(self._file["rows"]["id"], self.n_rows)

    @property
    def split(self) -> np.ndarray | None:
        if "split" not in self._file["rows"]:
            return None
        return np.array(read_strings(self._file["rows"]["split"], self.n_rows), dtype=object)

    @property
    def n_tokens(self) -> np.ndarray:
        return self._rows("n_tokens")

    @property
    def n_kept(self) -> np.ndarray:
        return self._rows("n_kept")

    @property
    def truncated(self) -> np.ndarray:
        return self._rows("truncated")

    @property
    def label_columns(self) -> list[str]:
        return [str(self._file["labels"][key].attrs["column"]) for key in self._file["labels"]]

    def _label_dataset(self, column: str) -> h5py.Dataset:
        key = escape_name(column)
        if key not in self._file["labels"]:
            from .errors import InputError

            raise InputError(
                f"{self.path} has no label column '{column}'; label columns: {', '.join(self.label_columns) or '(none)'}",
                "pick one with --label NAME",
            )
        return self._file["labels"][key]

    def labels(self, column: str) -> np.ndarray:
        """Integer class codes of a label column (-1 = missing)."""
        return self._label_dataset(column)[: self.n_rows]

    def label_names(self, column: str) -> list[str]:
        return json.loads(self._label_dataset(column).attrs["names"])

    # -- tokens ----------------------------------------------------------------------------
    @property
    def has_tokens(self) -> bool:
        return "tokens" in self._file

    def _require_tokens(self) -> h5py.Group:
        if not self.has_tokens:
            from .errors import InputError

            raise InputError(f"{self.path} has no token-level states", "re-extract with featx extract --tokens")
        return self._file["tokens"]

    @property
    def token_offsets(self) -> np.ndarray:
        return self._require_tokens()["offsets"][: self.n_rows + 1]

    @property
    def token_ids(self) -> np.ndarray:
        return self._require_tokens()["input_ids"][: int(self.token_offsets[-1])]

    @property
    def word_ids(self) -> np.ndarray:
        return self._require_tokens()["word_ids"][: int(self.token_offsets[-1])]

    def token_states(self, layer: int, dtype=np.float32, site: str = HIDDEN_SITE) -> np.ndarray:
        """``(total_tokens, width)`` states of one layer for all committed rows (slice with ``token_offsets``)."""
        position = self._layer_position(layer, site)
        total = int(self.token_offsets[-1])  # token_offsets checks that the file has token states
        return self._file[site_tokens_path(site)][0:total, position, :].astype(dtype, copy=False)


def open_features(path: str | os.PathLike, allow_partial: bool = False) -> FeatureFile:
    """Open a features file for reading (``featx.open``)."""
    return FeatureFile(path, allow_partial=allow_partial)

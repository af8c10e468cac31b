"""The HDF5 features file: its layout, a crash-safe writer and a reader.

Layout (schema 1)::

    /                      attrs: provenance and options (see ``FeatureWriter.create``), ``complete``
    /rows/text             (N,) UTF-8 strings
    /rows/id               (N,) UTF-8 strings
    /rows/split            (N,) UTF-8 strings (only if the corpus had a ``split`` column)
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

import json
import os
from pathlib import Path
from typing import Iterable

import h5py
import numpy as np

from .errors import IncompleteError, StoreError

SCHEMA_VERSION = 1
FORMAT_NAME = "featx-features"
PARTIAL_SUFFIX = ".partial"
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


def _preallocated(group: h5py.Group, name: str, shape: tuple[int, ...], dtype, chunks=None) -> h5py.Dataset:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    return group.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, dcpl=dcpl)


def _row_chunks(n_rows: int, row_bytes: int) -> int:
    return int(max(1, min(n_rows, CHUNK_BYTES // max(1, row_bytes))))


def _strings(values: Iterable[str]) -> np.ndarray:
    # HDF5 strings cannot hold NUL; it never matters for the model (tokenizers drop it).
    return np.array([value.replace("\x00", "\ufffd") for value in values], dtype=object)


class FeatureWriter:
    """Writes one features file window by window; see the module docstring for the guarantees."""

    def __init__(self, file: h5py.File, final_path: Path):
        self.file = file
        self.final_path = final_path
        self._rows_done = file["progress/rows_done"]

    @classmethod
    def create(cls, final_path: Path, attrs: dict, corpus, tokenized, layers: list[int],
               poolings: list[str], hidden_size: int, store_dtype: np.dtype, with_tokens: bool,
               sites: dict[str, dict] | None = None) -> "FeatureWriter":
        """``sites``: ``{name: {"layers": [...], "width": W, "poolings": [...], ...}}`` beyond ``hidden``."""
        path = partial_path(final_path)
        if path.exists():
            path.unlink()
        try:
            file = h5py.File(path, "w")
        except OSError as err:
            raise StoreError(f"cannot create {path}: {err}", "check the output directory exists and is writable") from None
        n_rows, n_layers = len(corpus), len(layers)
        string = h5py.string_dtype("utf-8")
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
        rows.create_dataset("text", data=_strings(corpus.texts), dtype=string)
        rows.create_dataset("id", data=_strings(corpus.ids), dtype=string)
        if corpus.split is not None:
            rows.create_dataset("split", data=_strings(corpus.split), dtype=string)
        rows.create_dataset("n_tokens", data=tokenized.full_lengths.astype(np.int32))
        rows.create_dataset("n_kept", data=tokenized.lengths.astype(np.int32))
        rows.create_dataset("truncated", data=tokenized.truncated)

        labels = file.create_group("labels")
        for name, column in corpus.labels.items():
            dataset = labels.create_dataset(escape_name(name), data=column.codes.astype(np.int32))
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
            tokens.create_dataset("offsets", data=tokenized.offsets.astype(np.int64))
            tokens.create_dataset("input_ids", data=tokenized.input_ids.astype(np.int32))
            tokens.create_dataset("word_ids", data=tokenized.word_ids.astype(np.int32))

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
        _preallocated(progress, "rows_done", (1,), np.int64)
        progress["rows_done"][0] = 0
        file.flush()
        return cls(file, final_path)

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

    def write_window(self, start: int, stop: int, pooled: dict[str, np.ndarray],
                     token_states: np.ndarray | None = None, site_values: dict[str, np.ndarray] | None = None) -> None:
        """Write rows ``[start, stop)``; they count as committed only after ``commit``.

        ``site_values`` maps dataset paths of other sites (``site_pooled_path``, ``site_tokens_path``)
        to their rows (pooled) or tokens (token-level) of the window.
        """
        for pooling, values in pooled.items():
            self.file["pooled"][pooling][start:stop] = values
        offsets = self.file["tokens/offsets"] if "tokens" in self.file else None
        if token_states is not None:
            first, last = int(offsets[start]), int(offsets[stop])
            self.file["tokens/states"][first:last] = token_states
        for path, values in (site_values or {}).items():
            if path.endswith(TOKENS_SUFFIX):
                self.file[path][int(offsets[start]) : int(offsets[stop])] = values
            else:
                self.file[path][start:stop] = values

    def commit(self, rows_done: int) -> None:
        # Data first, marker second: a crash between the two only redoes the window.
        self.file.flush()
        self._rows_done[0] = rows_done
        self.file.flush()

    def finish(self) -> Path:
        if self.rows_done != int(self.file.attrs["n_rows"]):
            raise StoreError("internal error: finishing a file whose rows are not all written")
        self.file.attrs["complete"] = True
        self.file.flush()
        self.file.close()
        os.replace(partial_path(self.final_path), self.final_path)
        return self.final_path

    def close(self) -> None:
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
        layers = self.layers if site == HIDDEN_SITE else self.site_layers(site)
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
        return [value.decode() if isinstance(value, bytes) else value for value in self._rows("text")]

    @property
    def ids(self) -> list[str]:
        return [value.decode() if isinstance(value, bytes) else value for value in self._rows("id")]

    @property
    def split(self) -> np.ndarray | None:
        if "split" not in self._file["rows"]:
            return None
        return np.array([value.decode() for value in self._rows("split")], dtype=object)

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
        total = int(self.token_offsets[-1])
        self._require_tokens()
        return self._file[site_tokens_path(site)][0:total, position, :].astype(dtype, copy=False)


def open_features(path: str | os.PathLike, allow_partial: bool = False) -> FeatureFile:
    """Open a features file for reading (``featx.open``)."""
    return FeatureFile(path, allow_partial=allow_partial)

"""Read access to features files: ``FeatureFile`` (``featx.open``) and the small reads other stages need.

A features file is untrusted input: everything read from it is checked (format, schema version, the
committed-row marker) before use, and nothing in it is ever unpickled.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import IncompleteError, InputError, StoreError
from ..safe_files import loads_json
from . import schema as s
from .calls import checked_call, no_label_column
from .damage import HDF5_ERRORS, damage_reported, damaged
from .finite import FiniteReads, check_finite
from .hdf5 import read_layer
from .opening import RESUME, located, opened
from .schema import HIDDEN_SITE, escape_name, site_pooled_path, site_tokens_path
from .strings import read_strings
from .structure import check_structure, root_attributes
from .validate import check_layout
from .words import WordAccess


def _of(site: str, word: str = "of") -> str:
    return "" if site == HIDDEN_SITE else f" {word} site '{site}'"


def _checked(file: h5py.File, actual: Path) -> tuple[dict, int, dict]:
    """The root attributes, committed rows and layout of an open file, once its structure, format, schema
    version and layout are checked (in that order: nothing is read before the structure is)."""
    try:
        contents = check_structure(file, actual)  # links, storage, attribute sizes; then the root attributes
        attrs = contents.attrs
        rows_done = int(file[s.ROWS_DONE][0]) if s.ROWS_DONE in file else 0
    except StoreError:
        raise
    except HDF5_ERRORS as err:  # the check reads nothing but the file: any of these is the file's (damage.py)
        raise damaged(actual, err) from None
    if attrs.get(s.FORMAT) != s.FORMAT_NAME:
        raise StoreError(f"{actual} is an HDF5 file but not a featx features file")
    if attrs.get(s.SCHEMA) != s.SCHEMA_VERSION:
        raise StoreError(
            f"{actual} uses featx features schema {attrs.get(s.SCHEMA)}, this featx reads schema {s.SCHEMA_VERSION}",
            "re-extract with this featx version (featx extract ... --overwrite)",
        )
    try:
        layout = check_layout(file, contents, actual, rows_done)
    except StoreError:
        raise
    except HDF5_ERRORS as err:
        raise StoreError(f"{actual} is not a valid featx features file: {err}") from None
    return attrs, rows_done, layout


@damage_reported  # every read: an HDF5 failure on a damaged part of the file is a StoreError (damage.py)
class FeatureFile(WordAccess, FiniteReads):
    """Read access to a features file: ``features(pooling, layer)`` and row metadata as numpy; word inputs
    also have word-level reads (``word_features``, ``word_labels``..., ``words.py``).

    Only rows that are committed are visible. An incomplete file is refused
    unless ``allow_partial`` is true, in which case it shows the committed prefix.

    Attributes: ``path``; ``attrs`` (the root attributes as a dict); ``complete``; ``n_rows`` (the rows
    visible); ``layers``, ``poolings`` and ``hidden_size`` of the ``hidden`` site; ``store_dtype`` (numpy's float16
    or float32: the dtype of every stored feature, which ``dtype=features.store_dtype`` reads without conversion).
    """

    def __init__(self, path: str | os.PathLike, allow_partial: bool = False):
        self.path = Path(path)
        actual = located(self.path, allow_partial)
        self._file = opened(actual)
        try:
            attrs, rows_done, layout = _checked(self._file, actual)
            complete = bool(attrs.get(s.COMPLETE)) and rows_done == int(attrs[s.N_ROWS])
            if not complete and not allow_partial:
                raise IncompleteError(
                    f"{actual} is incomplete: {rows_done} of {attrs[s.N_ROWS]} rows written",
                    RESUME,
                )
        except BaseException:
            self._file.close()
            raise
        self.attrs = attrs
        self.complete = complete
        self.n_rows = rows_done if not self.complete else int(attrs[s.N_ROWS])
        self.layers: list[int] = layout["layers"]
        self.poolings: list[str] = layout["poolings"]
        self.hidden_size = int(attrs[s.HIDDEN_SIZE])
        self.store_dtype = np.dtype(attrs[s.STORE_DTYPE])  # every feature dataset's, checked at open
        # Files written before sites existed have none besides hidden, and read unchanged.
        self._sites: dict[str, dict] = layout["sites"]

    @property
    def fingerprint(self) -> str | None:
        """What the file's contents depend on (``featx.extraction.plan``); equal fingerprints, equal files."""
        return self.attrs.get(s.FINGERPRINT)

    # -- context manager -------------------------------------------------------------------
    def close(self) -> None:
        """Close the file (also done on leaving a ``with`` block)."""
        if self._file.id.valid:
            self._file.close()

    def __enter__(self) -> FeatureFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "complete" if self.complete else f"partial, {self.n_rows} rows committed"
        return (
            f"FeatureFile({str(self.path)!r}, model={self.attrs.get('model')!r}, rows={self.n_rows}, "
            f"layers={self.layers}, poolings={self.poolings}, {state})"
        )

    # -- features --------------------------------------------------------------------------
    @property
    def sites(self) -> list[str]:
        """Stored sites: ``hidden`` first, then e.g. ``attn_out``, ``ffn`` (see featx/extraction/forward/sites.py)."""
        return [HIDDEN_SITE] + list(self._sites)

    def _site(self, site: str) -> dict:
        if site == HIDDEN_SITE:
            return {"layers": self.layers, "width": self.hidden_size, "poolings": self.poolings}
        if site not in self._sites:
            raise InputError(
                f"site '{site}' is not stored in {self.path}; stored sites: {', '.join(self.sites)}",
                "re-extract with featx extract --site ... --overwrite",
            )
        return self._sites[site]

    def site_layers(self, site: str = HIDDEN_SITE) -> list[int]:
        """The stored layers of ``site``."""
        return list(self._site(site)["layers"])

    def site_poolings(self, site: str = HIDDEN_SITE) -> list[str]:
        """The stored poolings of ``site``."""
        return list(self._site(site)["poolings"])

    def site_width(self, site: str = HIDDEN_SITE) -> int:
        """The width of ``site``'s vectors (the hidden size for ``hidden``)."""
        return int(self._site(site)["width"])

    def _layer_position(self, layer: int, site: str = HIDDEN_SITE) -> int:
        layers = self.site_layers(site)
        if layer < 0:
            layer += max(self.layers) + 1
        if layer not in layers:
            raise InputError(
                f"layer {layer} is not stored{_of(site, 'for')} in {self.path}; stored layers: {layers}",
                "choose a stored layer (another needs extracting again with it)",
            )
        return layers.index(layer)

    def features(self, pooling: str, layer: int, dtype=np.float32, site: str = HIDDEN_SITE) -> np.ndarray:
        """``(n_rows, width)`` features of one pooling at one layer of a site; reads only that layer."""
        dtype = checked_call("features", dtype, pooling, layer)
        dataset, position, what = self._pooled(pooling, layer, site)
        return check_finite(read_layer(dataset, position, self.n_rows), self.path, what).astype(dtype, copy=False)

    def _pooled(self, pooling: str, layer: int, site: str) -> tuple[h5py.Dataset, int, str]:
        """The dataset, layer position and description (for errors) of one pooling at one layer of a site."""
        if pooling not in (poolings := self.site_poolings(site)):
            where = "" if site == HIDDEN_SITE else f" for site '{site}'"
            raise InputError(
                f"pooling '{pooling}' is not stored{where} in {self.path}; stored: {', '.join(poolings)}",
                f"choose a pooling the file stores ({', '.join(poolings)}); another needs extracting again with it",
            )
        position = self._layer_position(layer, site)
        what = f"the '{pooling}' features of layer {self.site_layers(site)[position]}{_of(site)}"
        return self._file[site_pooled_path(site, pooling)], position, what

    def concatenated(self, pooling: str, layers: list[int], dtype=np.float32, site: str = HIDDEN_SITE) -> np.ndarray:
        """``(n_rows, width * len(layers))``: the "concatenate the last four layers" feature set."""
        dtype = checked_call("concatenated", dtype, pooling, layers)  # ('mean', 3) or ('mean', [3], 5): refused
        return np.concatenate([self.features(pooling, layer, dtype, site) for layer in layers], axis=1)

    # -- rows ------------------------------------------------------------------------------
    def _rows(self, name: str) -> np.ndarray:
        return self._file[f"{s.ROWS}/{name}"][: self.n_rows]

    @property
    def texts(self) -> list[str]:
        """Each row's text, exactly as stored (NUL characters restored)."""
        return read_strings(self._file[s.TEXT], self.n_rows)

    @property
    def ids(self) -> list[str]:
        """Each row's id: the ``--id-col`` value, else its data row number in the corpus."""
        return read_strings(self._file[s.IDS], self.n_rows)

    @property
    def split(self) -> np.ndarray | None:
        """Each row's ``split`` value, or None when the corpus had no ``split`` column."""
        if s.SPLIT not in self._file:
            return None
        return np.array(read_strings(self._file[s.SPLIT], self.n_rows), dtype=object)

    @property
    def n_tokens(self) -> np.ndarray:
        """Each row's tokens before truncation, special tokens included."""
        return self._rows("n_tokens")

    @property
    def n_kept(self) -> np.ndarray:
        """Each row's tokens given to the model."""
        return self._rows("n_kept")

    @property
    def truncated(self) -> np.ndarray:
        """Whether each row was truncated."""
        return self._rows("truncated")

    @property
    def label_columns(self) -> list[str]:
        """The names of the stored label columns."""
        return [str(self._file[s.LABELS][key].attrs[s.LABEL_COLUMN]) for key in self._file[s.LABELS]]

    def _label_dataset(self, column: str) -> h5py.Dataset:
        key = escape_name(column)
        if key not in self._file[s.LABELS]:
            words = self.word_label_columns() if self.has_words else None
            raise no_label_column(self.path, column, self.label_columns, words)
        return self._file[s.LABELS][key]

    def labels(self, column: str) -> np.ndarray:
        """Integer class codes of a label column (-1 = missing)."""
        return self._label_dataset(column)[: self.n_rows]

    def label_names(self, column: str) -> list[str]:
        """The class names of a label column, indexed by the codes ``labels`` returns."""
        return loads_json(self._label_dataset(column).attrs[s.LABEL_NAMES])

    def label_values(self, column: str) -> np.ndarray | None:
        """The float values of a numeric label column (NaN = missing), else None.

        Stored values (``label_values/<column>``, kept for continuous-looking columns) or a float label
        dataset are returned as stored; an int-coded column is numeric when each of its class names parses
        as a finite number, and the values are those names."""
        dataset = self._label_dataset(column)
        key = s.label_values_path(column)
        if key in self._file:
            return np.asarray(self._file[key][: self.n_rows], dtype=np.float64)
        if dataset.dtype.kind == "f":
            return dataset[: self.n_rows].astype(np.float64)
        try:
            numbers = np.array([float(name) for name in self.label_names(column)], dtype=np.float64)
        except (TypeError, ValueError):
            return None
        if not np.all(np.isfinite(numbers)):
            return None
        codes = dataset[: self.n_rows]
        return np.where(codes >= 0, numbers[np.maximum(codes, 0)] if len(numbers) else np.nan, np.nan)

    @property
    def contrast_n_kept(self) -> np.ndarray:
        """``--contrast``: ``(n_rows, K - 1)``, the tokens of answers 1 .. K-1's prompts fed to the model (``n_kept``
        is answer 0's); ``(n_rows, 0)`` for any other file, or one written before featx stored them."""
        if s.CONTRAST_N_KEPT not in self._file:
            return np.zeros((self.n_rows, 0), dtype=np.int32)
        return self._file[s.CONTRAST_N_KEPT][: self.n_rows]

    # -- sentence pairs --------------------------------------------------------------------
    @property
    def pair_mode(self) -> str | None:
        """``cross`` or ``separate`` for a sentence-pair file (``--text-pair-col``), None for single texts."""
        mode = self.attrs.get(s.PAIR_MODE)
        return str(mode) if mode else None

    @property
    def text_pair_col(self) -> str | None:
        """The second text's column of a sentence-pair file, None for single texts."""
        return self.attrs.get(s.TEXT_PAIR_COL) or None

    @property
    def pair_texts(self) -> list[str] | None:
        """Each row's second text (None for single texts)."""
        return read_strings(self._file[s.PAIR_TEXT], self.n_rows) if s.PAIR_TEXT in self._file else None

    @property
    def pair_n_kept(self) -> np.ndarray:
        """Separate mode: side b's tokens fed to the model (zeros otherwise; ``n_kept`` is side a's or the pair's)."""
        if s.PAIR_N_KEPT not in self._file:
            return np.zeros(self.n_rows, dtype=np.int32)
        return self._file[s.PAIR_N_KEPT][: self.n_rows]

    @property
    def pair_truncated(self) -> np.ndarray:
        """Separate mode: was side b truncated (all False otherwise; ``truncated`` is side a's or the pair's)."""
        if s.PAIR_N_KEPT not in self._file:
            return np.zeros(self.n_rows, dtype=bool)
        return self._file[s.PAIR_N_TOKENS][: self.n_rows] > self.pair_n_kept

    def pair_features(self, pooling: str, layer: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
        """Separate mode: ``(u, v)``, side a's and side b's ``(n_rows, hidden)`` features of one pooling and layer."""
        if self.pair_mode != "separate":
            raise InputError(
                f"{self.path} is not a --pair-mode separate file (pair mode: {self.pair_mode or 'none'})",
                "extract with featx extract --text-pair-col COLUMN --pair-mode separate",
            )
        return self.features(pooling, layer, dtype), self.features(pooling, layer, dtype, site=s.PAIR_B_SITE)

    # -- tokens ----------------------------------------------------------------------------
    @property
    def has_tokens(self) -> bool:
        """Whether token-level states are stored (``featx extract --tokens``)."""
        return s.TOKENS in self._file

    def _require_tokens(self) -> h5py.Group:
        if not self.has_tokens:
            raise InputError(f"{self.path} has no token-level states", "re-extract with featx extract --tokens")
        return self._file[s.TOKENS]

    @property
    def token_offsets(self) -> np.ndarray:
        """``(n_rows + 1,)``: row i owns tokens ``offsets[i]:offsets[i + 1]``."""
        return self._require_tokens().file[s.TOKEN_OFFSETS][: self.n_rows + 1]

    @property
    def token_ids(self) -> np.ndarray:
        """The input id of every token of the committed rows."""
        return self._require_tokens().file[s.TOKEN_INPUT_IDS][: int(self.token_offsets[-1])]

    @property
    def word_ids(self) -> np.ndarray:
        """The word each token belongs to, -1 for special tokens."""
        return self._require_tokens().file[s.TOKEN_WORD_IDS][: int(self.token_offsets[-1])]

    @property
    def token_segments(self) -> np.ndarray | None:
        """Cross-mode pairs: each token's segment (0 = text a, 1 = text b, -1 = special); None otherwise."""
        if s.TOKEN_SEGMENT_IDS not in self._require_tokens().file:
            return None
        return self._file[s.TOKEN_SEGMENT_IDS][: int(self.token_offsets[-1])]

    def _n_tokens(self) -> int:
        return int(self.token_offsets[-1])  # token_offsets checks that the file has token states

    def _tokens(self, layer: int, site: str) -> tuple[h5py.Dataset, int, str]:
        """The dataset, layer position and description (for errors) of one layer's token states of a site."""
        position = self._layer_position(layer, site)
        self._require_tokens()
        what = f"the token states of layer {self.site_layers(site)[position]}{_of(site)}"
        return self._file[site_tokens_path(site)], position, what

    def token_states(self, layer: int, dtype=np.float32, site: str = HIDDEN_SITE) -> np.ndarray:
        """``(total_tokens, width)`` states of one layer for all committed rows (slice with ``token_offsets``)."""
        dtype = checked_call("token_states", dtype, layer)
        dataset, position, what = self._tokens(layer, site)
        states = read_layer(dataset, position, self._n_tokens())
        return check_finite(states, self.path, what, unit="token").astype(dtype, copy=False)


def open_features(path: str | os.PathLike, allow_partial: bool = False) -> FeatureFile:
    """Open a features file for reading (``featx.open``)."""
    return FeatureFile(path, allow_partial=allow_partial)


def finished_request(path: Path) -> tuple[str, int, dict[str, Any]] | None:
    """``(request key, skipped empty rows, root attributes)`` of a complete features file, or None (missing,
    partial, unreadable, or written before request keys). Cheap: opens the file's attributes only."""
    try:
        with h5py.File(path, "r") as file:
            attrs = root_attributes(file, Path(path))  # each checked before it is read: never HDF5's crash
        recorded = attrs.get(s.REQUEST_KEY)
        complete = bool(attrs.get(s.COMPLETE, False))
        skipped = len(loads_json(attrs.get(s.SKIPPED_EMPTY, "[]")))
    except (*HDF5_ERRORS, StoreError):  # damaged (h5py's RuntimeError too: damage.py), or not featx's
        return None
    if not recorded or not complete:
        return None
    return (recorded.decode() if isinstance(recorded, bytes) else str(recorded)), skipped, attrs

"""Word-level datasets of a features file: their creation, their checks, their reading.

A features file made from word inputs (CoNLL-U, column files, JSON Lines of tokens) keeps one ordinary row
per sentence and, beside the rows, the sentence's words flat under ``/words`` (layout in ``schema.py``):
row ``s`` owns words ``offsets[s]:offsets[s+1]``. Everything here is read as untrusted input: offsets are
checked monotone and ending at ``n_words``, heads in range within their sentence, shapes consistent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import h5py
import numpy as np

from ..errors import InputError, StoreError
from ..safe_files import is_text, loads_json
from ..selection import WORD_POOLINGS
from . import schema as s
from .finite import check_finite
from .hdf5 import read_layer
from .strings import read_strings, write_strings
from .structure import Contents, expect

MAX_WORD_POOLINGS = 8
MAX_LABEL_CLASSES = 10_000_000


def _fail(path: Path, what: str) -> NoReturn:
    raise StoreError(f"{path} is not a valid featx features file: {what}")


# -- writing -------------------------------------------------------------------------------------
def create_words(
    file: h5py.File,
    words,
    n_subwords: np.ndarray,
    poolings,
    n_layers: int,
    width: int,
    store_dtype: np.dtype,
    preallocate,
    chunk_rows,
) -> None:
    """The ``/words`` group of a new file: the words' metadata written now, their vectors preallocated.

    ``words`` has ``offsets``, ``forms``, ``heads`` and ``labels`` (``{column: LabelColumn}``);
    ``preallocate(group, name, shape, dtype, chunks)`` and ``chunk_rows(n, bytes)`` are the writer's."""
    n_words = int(words.offsets[-1])
    file.attrs[s.WORD_POOLINGS] = json.dumps(list(poolings))
    file.attrs[s.N_WORDS] = n_words
    group = file.create_group(s.WORDS)
    for name, data in (
        (s.WORD_OFFSETS, np.asarray(words.offsets, dtype=np.int64)),
        (s.WORD_HEAD, np.asarray(words.heads, dtype=np.int32)),
        (s.WORD_N_SUBWORDS, np.asarray(n_subwords, dtype=np.int32)),
    ):
        file.create_dataset(name, data=data).flush()
    write_strings(file, s.WORD_FORM, words.forms)
    file.create_group(s.WORD_LABELS, track_order=True)
    for column, label in words.labels.items():
        dataset = file.create_dataset(s.word_label_path(column), data=label.codes.astype(np.int32))
        dataset.flush()
        dataset.attrs[s.LABEL_COLUMN] = column
        dataset.attrs[s.LABEL_NAMES] = json.dumps(label.names)
    chunks = (chunk_rows(n_words, width * store_dtype.itemsize), 1, width)
    for pooling in poolings:
        preallocate(
            file, s.word_pooled_path(pooling), (n_words, n_layers, width), store_dtype, chunks if n_words else None
        )
    group.attrs[s.N_WORDS] = n_words


def word_value_paths(poolings) -> list[str]:
    return [s.word_pooled_path(pooling) for pooling in poolings]


# -- checking ------------------------------------------------------------------------------------
def _dataset(file: h5py.File, contents: Contents, name: str, shape: tuple, kinds: str, path: Path) -> h5py.Dataset:
    """The dataset ``name``, to be read, once ``expect`` has checked it."""
    expect(contents, name, shape, kinds, path)
    return file[name]


def _poolings(attrs: dict, path: Path) -> list[str]:
    raw = attrs.get(s.WORD_POOLINGS)
    try:
        value = loads_json(raw) if isinstance(raw, str) else None
    except ValueError:
        value = None
    if (
        not isinstance(value, list)
        or len(value) > MAX_WORD_POOLINGS
        or not all(isinstance(name, str) and name in WORD_POOLINGS for name in value)
    ):
        _fail(path, f"attribute '{s.WORD_POOLINGS}' is not a list of word poolings ({', '.join(WORD_POOLINGS)})")
    return value


def check_words(
    file: h5py.File, contents: Contents, path: Path, n_rows: int, n_layers: int, width: int, store: np.dtype
) -> list[str]:
    """The ``/words`` group against the rows and layers (``contents``: what ``check_structure`` saw, the root
    attributes; ``store``: the file's ``store_dtype``); returns the word poolings (see the module doc)."""
    attrs = contents.attrs
    poolings = _poolings(attrs, path)
    n_words = attrs.get(s.N_WORDS)
    if isinstance(n_words, bool) or not isinstance(n_words, (int, np.integer)) or n_words < 0:
        _fail(path, f"attribute '{s.N_WORDS}' is {n_words!r}, not a whole number")
    n_words = int(n_words)
    offsets = _dataset(file, contents, s.WORD_OFFSETS, (n_rows + 1,), "iu", path)[()].astype(np.int64)
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or offsets[-1] != n_words:
        _fail(path, f"'{s.WORD_OFFSETS}' is not a non-decreasing run from 0 to {n_words} words")
    expect(contents, s.WORD_FORM, (n_words,), "OSU", path)
    heads = _dataset(file, contents, s.WORD_HEAD, (n_words,), "i", path)[()].astype(np.int64)
    lengths = np.repeat(np.diff(offsets), np.diff(offsets))
    if np.any(heads < s.HEAD_UNKNOWN) or np.any(heads >= lengths):
        bad = int(np.flatnonzero((heads < s.HEAD_UNKNOWN) | (heads >= lengths))[0])
        _fail(path, f"word {bad} has head {int(heads[bad])}, outside its sentence of {int(lengths[bad])} words")
    subwords = _dataset(file, contents, s.WORD_N_SUBWORDS, (n_words,), "iu", path)[()]
    if np.any(subwords < 1):
        _fail(path, f"'{s.WORD_N_SUBWORDS}' has words without subwords")
    for pooling in poolings:
        expect(contents, s.word_pooled_path(pooling), (n_words, n_layers, width), "f", path, store)
    if (labels := contents.get(s.WORD_LABELS)) is not None:
        if not labels.is_group:
            _fail(path, f"'{s.WORD_LABELS}' is not a group")
        for key, _ in contents.members_of(s.WORD_LABELS):
            dataset = _dataset(file, contents, f"{s.WORD_LABELS}/{key}", (n_words,), "i", path)
            codes = dataset[()]
            names = _names(dataset, key, path)
            if len(codes) and (codes.min() < -1 or codes.max() >= len(names)):
                _fail(path, f"word label '{key}' has codes outside its {len(names)} class names")
    return poolings


def _names(dataset: h5py.Dataset, key: str, path: Path) -> list[str]:
    if not is_text(dataset.attrs.get(s.LABEL_COLUMN)):
        _fail(path, f"word label dataset '{key}' has no column name (as UTF-8 text)")
    try:
        names = loads_json(dataset.attrs.get(s.LABEL_NAMES))
    except (TypeError, ValueError, RecursionError):
        names = None
    if not isinstance(names, list) or len(names) > MAX_LABEL_CLASSES or not all(isinstance(n, str) for n in names):
        _fail(path, f"word label dataset '{key}' has no list of class names")
    return names


# -- reading -------------------------------------------------------------------------------------
class WordAccess:
    """``FeatureFile``'s word-level reads; only the words of committed rows are visible."""

    _file: h5py.File
    path: Path
    n_rows: int
    attrs: dict
    layers: list[int]

    def _layer_position(self, layer: int, site: str = s.HIDDEN_SITE) -> int:
        """The position of ``layer`` among the stored layers (``FeatureFile``'s)."""
        raise NotImplementedError

    @property
    def has_words(self) -> bool:
        """Whether the file holds word-level features (made from word inputs such as CoNLL-U)."""
        return s.WORDS in self._file

    def _require_words(self) -> h5py.Group:
        if not self.has_words:
            raise InputError(
                f"{self.path} has no word-level features",
                "extract word inputs: featx extract treebank.conllu (or --columns / JSON Lines of tokens)",
            )
        return self._file[s.WORDS]

    def word_poolings(self) -> list[str]:
        """The stored word poolings: ``first``, ``last`` and/or ``mean`` of each word's subwords."""
        self._require_words()
        return list(json.loads(self.attrs[s.WORD_POOLINGS]))

    def word_offsets(self) -> np.ndarray:
        """``(n_rows + 1,)`` int64: row ``s`` owns words ``offsets[s]:offsets[s+1]``."""
        self._require_words()
        return self._file[s.WORD_OFFSETS][: self.n_rows + 1].astype(np.int64)

    def _n_words(self) -> int:
        return int(self.word_offsets()[-1])

    def word_sentence(self) -> np.ndarray:
        """``(n_words,)`` int64: the row (sentence) of each word."""
        return np.repeat(np.arange(self.n_rows, dtype=np.int64), np.diff(self.word_offsets()))

    def word_forms(self) -> list[str]:
        """Each word's form, exactly as in the input."""
        self._require_words()
        return read_strings(self._file[s.WORD_FORM], self._n_words())

    def word_features(self, pooling: str, layer: int, dtype=np.float32) -> np.ndarray:
        """``(n_words, hidden)`` word vectors of one word pooling at one layer; reads only that layer."""
        dataset, position, what = self._word_vectors(pooling, layer)
        out = read_layer(dataset, position, self._n_words())
        return check_finite(out, self.path, what, unit="word").astype(dtype, copy=False)

    def _word_vectors(self, pooling: str, layer: int) -> tuple[h5py.Dataset, int, str]:
        """The dataset, layer position and description (for errors) of one word pooling at one layer."""
        poolings = self.word_poolings()
        if pooling not in poolings:
            raise InputError(
                f"word pooling '{pooling}' is not stored in {self.path}; stored: {', '.join(poolings)}",
                "re-extract with --word-pooling first,last,mean --overwrite",
            )
        position = self._layer_position(layer)
        return (
            self._file[s.word_pooled_path(pooling)],
            position,
            f"the '{pooling}' word vectors of layer {self.layers[position]}",
        )

    def word_label_columns(self) -> list[str]:
        """The names of the stored word label columns (``upos``, ``deprel``, ``feats.Number``, ...)."""
        self._require_words()
        if s.WORD_LABELS not in self._file:
            return []
        return [str(dataset.attrs[s.LABEL_COLUMN]) for dataset in self._file[s.WORD_LABELS].values()]

    def _word_label(self, column: str) -> h5py.Dataset:
        self._require_words()
        name = s.word_label_path(column)
        if name not in self._file:
            raise InputError(
                f"{self.path} has no word label column '{column}'; word label columns: "
                f"{', '.join(self.word_label_columns()) or '(none)'}",
                "pick one with --label NAME",
            )
        return self._file[name]

    def word_labels(self, column: str) -> np.ndarray:
        """``(n_words,)`` int32 class codes of a word label column (-1 = missing)."""
        return self._word_label(column)[: self._n_words()].astype(np.int32)

    def word_label_names(self, column: str) -> list[str]:
        """The class names of a word label column, indexed by the codes ``word_labels`` returns."""
        return list(json.loads(self._word_label(column).attrs[s.LABEL_NAMES]))

    def word_heads(self) -> np.ndarray:
        """``(n_words,)`` int32: each word's head as a 0-based index within its sentence; ``HEAD_ROOT`` (-1) for a
        root word, ``HEAD_UNKNOWN`` (-2) where the input gave no head ('_', or no head column). An arc is a value
        >= 0. Files written before -2 existed have -1 for an unknown head too."""
        self._require_words()
        return self._file[s.WORD_HEAD][: self._n_words()].astype(np.int32)

    def word_n_subwords(self) -> np.ndarray:
        """The number of tokens of each word (at least one)."""
        self._require_words()
        return self._file[s.WORD_N_SUBWORDS][: self._n_words()].astype(np.int32)

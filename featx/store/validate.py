"""Checking a features file before anything in it is used: a file someone else produced is hostile input.

``structure.check_structure`` runs before any attribute or dataset is read: every link in the file must be a
hard link inside it (no soft or external links, nothing read from another file), every dataset's storage is
in the file itself (no external raw storage, no virtual datasets), and every attribute is small; it returns
what it saw (``Contents``: each dataset's shape and dtype, the root attributes).
``check_layout`` then checks what the schema says against what is there: the JSON attributes parse into
bounded lists of the right types, and every dataset has the shape the row count and layers imply, a
dtype featx writes, and storage on disk for every declared element (a dataset declaring 10^9 rows in a
small file, or a compressed one that would inflate in memory, is refused before a single read).

Every violation is one ``StoreError`` naming the file and what is wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import h5py
import numpy as np

from ..errors import StoreError
from ..json_fields import shown
from ..safe_files import is_text, loads_json
from . import schema as s
from .structure import FEATURE_DTYPES, MAX_ATTRIBUTE_BYTES, Contents, expect
from .words import check_words

MAX_LAYERS = 4096
MAX_POOLINGS = 16
MAX_SITES = 256
MAX_LABEL_CLASSES = 10_000_000
MAX_NAME = 1024
# Provenance attributes featx writes as text, where present: readers use them as paths, names and JSON
TEXT_ATTRS = (
    s.MODEL, s.MODEL_PATH, s.MODEL_SHA256, s.MODEL_TYPE, s.CORPUS_PATH, s.CORPUS_SHA256, s.TEXT_COL, s.ID_COL,
    s.TEXT_PAIR_COL, s.PAIR_MODE, s.TOKENIZER, s.TOKENIZER_SHA256, s.CONFIG_SHA256, s.STORE_DTYPE, s.COMPUTE_DTYPE,
    s.DEVICE, s.FEATX_VERSION, s.FINGERPRINT, s.REQUEST_KEY, s.OPTIONS, s.CREATED, s.MODEL_PART, s.PADDING_SIDE,
    s.PAD_SOURCE, s.LONG_INPUTS, s.IMPLEMENTATION, s.TEMPLATE, s.SYSTEM_MESSAGE, s.POOL_AT, s.PROMPT_EXAMPLE,
)  # fmt: skip


def _fail(path: Path, what: str) -> NoReturn:
    raise StoreError(f"{path} is not a valid featx features file: {what}")


def _json_list(attrs: dict, key: str, path: Path, kind, limit: int) -> list:
    raw = attrs.get(key)
    try:
        value = loads_json(raw) if isinstance(raw, str) else raw
    except ValueError as err:  # loads_json: nested too deeply, or half of a surrogate pair, as its message says
        _fail(path, f"attribute '{key}' is not valid JSON ({getattr(err, 'msg', err)})")
    if (
        not isinstance(value, list)
        or len(value) > limit
        or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value)
    ):
        _fail(path, f"attribute '{key}' is not a list of at most {limit} {kind.__name__} values")
    return value


def _layer_list(attrs: dict, key: str, path: Path, whose: str = "") -> list[int]:
    """Layer indices as featx writes them: at least 0 and in increasing order, each once (a reader maps a
    stored position to its layer by this list, so a reordered list would label every layer's features wrongly)."""
    layers = _json_list(attrs, key, path, int, MAX_LAYERS)
    if any(layer < 0 for layer in layers) or any(a >= b for a, b in zip(layers, layers[1:], strict=False)):
        _fail(path, f"{whose}attribute '{key}' is not a list of increasing layer indices from 0 ({layers[:8]})")
    return layers


def _pooling_list(attrs: dict, key: str, path: Path, whose: str = "") -> list[str]:
    """Pooling names, each once (a reader finds a pooling's dataset by its name)."""
    poolings = _json_list(attrs, key, path, str, MAX_POOLINGS)
    if len(set(poolings)) != len(poolings):
        _fail(path, f"{whose}attribute '{key}' names a pooling twice ({poolings})")
    return poolings


def _int_attr(attrs: dict, key: str, path: Path, minimum: int = 0) -> int:
    value = attrs.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        _fail(path, f"attribute '{key}' is {value!r}, not a whole number of at least {minimum}")
    return int(value)


def check_layout(file: h5py.File, contents: Contents, path: Path, rows_done: int) -> dict:
    """The schema's attributes (``contents.attrs``) against the datasets ``check_structure`` saw (``contents``: no
    lookup again; ``file`` for the few values read); returns the parsed ``layers``, ``poolings``, ``sites``."""
    attrs = contents.attrs
    for key, value in attrs.items():  # variable-length strings live in the file's heap: bounded after reading
        if isinstance(value, (str, bytes)) and len(value) > MAX_ATTRIBUTE_BYTES:
            _fail(path, f"attribute '{key}' is too large ({len(value):,} characters)")
    for key in TEXT_ATTRS:
        if key in attrs and not is_text(attrs[key]):  # a str of bytes that are not UTF-8 holds surrogates
            _fail(path, f"attribute '{key}' is {shown(attrs[key])}, not text")
    n_rows = _int_attr(attrs, s.N_ROWS, path)
    if not 0 <= rows_done <= n_rows:
        _fail(path, f"{rows_done} rows marked done of {n_rows}")
    layers = _layer_list(attrs, s.LAYERS, path)
    poolings = _pooling_list(attrs, s.POOLINGS, path)
    width = _int_attr(attrs, s.HIDDEN_SIZE, path, 1)
    sites = _sites(attrs, path)
    store = _store_dtype(attrs, path)
    with_tokens = s.TOKEN_OFFSETS in contents
    offsets_shape = (n_rows + 1,)
    expect(contents, s.ROWS_DONE, (1,), "i", path)
    for name in (s.TEXT, s.IDS):
        expect(contents, name, (n_rows,), "OSU", path)
    if s.SPLIT in contents:
        expect(contents, s.SPLIT, (n_rows,), "OSU", path)
    for name in (s.N_TOKENS, s.N_KEPT):
        expect(contents, name, (n_rows,), "iu", path)
    expect(contents, s.TRUNCATED, (n_rows,), "biu", path)
    _check_labels(file, contents, path, n_rows)
    total_tokens = None
    if with_tokens:
        expect(contents, s.TOKEN_OFFSETS, offsets_shape, "iu", path)
        total_tokens = int(file[s.TOKEN_OFFSETS][n_rows]) if n_rows else 0
        for name in (s.TOKEN_INPUT_IDS, s.TOKEN_WORD_IDS):
            expect(contents, name, (total_tokens,), "iu", path)
    _check_pair_rows(contents, path, n_rows, total_tokens)
    if s.CONTRAST_N_KEPT in contents:  # --contrast: one column per further answer's site
        answers = [name for k in range(1, len(sites) + 1) if (name := s.contrast_site(k)) in sites]
        expect(contents, s.CONTRAST_N_KEPT, (n_rows, len(answers)), "iu", path)
    layouts = [(s.HIDDEN_SITE, layers, width, poolings)]
    layouts += [(name, site["layers"], site["width"], site["poolings"]) for name, site in sites.items()]
    for name, site_layers, site_width, site_poolings in layouts:
        for pooling in site_poolings:
            expect(
                contents, s.site_pooled_path(name, pooling), (n_rows, len(site_layers), site_width), "f", path, store
            )
        if with_tokens:
            expect(contents, s.site_tokens_path(name), (total_tokens, len(site_layers), site_width), "f", path, store)
    if s.WORDS in contents:
        check_words(file, contents, path, n_rows, len(layers), width, store)
    return {"layers": layers, "poolings": poolings, "sites": sites}


def _check_labels(file: h5py.File, contents: Contents, path: Path, n_rows: int) -> None:
    """The ``labels`` group (every featx file has one, empty without label columns); each column's codes index
    its class names (-1 = missing), whose list is at least as long as its largest code."""
    if (group := contents.get(s.LABELS)) is None or not group.is_group:
        _fail(path, f"its '{s.LABELS}' group is missing")
    for key, _ in contents.members_of(s.LABELS):
        expect(contents, f"{s.LABELS}/{key}", (n_rows,), "iu", path)
        dataset = file[f"{s.LABELS}/{key}"]
        names = _json_list(dict(dataset.attrs), s.LABEL_NAMES, path, str, MAX_LABEL_CLASSES)
        if not is_text(dataset.attrs.get(s.LABEL_COLUMN)):
            _fail(path, f"label dataset '{key}' has no column name (as UTF-8 text)")
        if len(set(names)) < len(names):  # featx writes each class once: a repeat would merge two in every table
            _fail(path, f"label '{key}' names class {_first_repeat(names)!r} more than once")
        codes = dataset[()]
        if len(codes) and (int(codes.min()) < -1 or int(codes.max()) >= len(names)):
            _fail(path, f"label '{key}' has codes outside its {len(names)} class names")
    _check_label_values(contents, path, n_rows)


def _first_repeat(names: list[str]) -> str:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return ""


def _check_label_values(contents: Contents, path: Path, n_rows: int) -> None:
    """The ``label_values`` group, where present (a continuous label's float value per row): one float vector of
    the rows per column, as featx writes it."""
    if (group := contents.get(s.LABEL_VALUES)) is None:
        return
    if not group.is_group:
        _fail(path, f"'{s.LABEL_VALUES}' is not a group")
    for key, dataset in contents.members_of(s.LABEL_VALUES):
        name = f"{s.LABEL_VALUES}/{key}"
        if dataset.is_group:
            _fail(path, f"'{name}' is not a dataset")
        if tuple(dataset.shape) != (n_rows,):
            _fail(path, f"dataset '{name}' has shape {dataset.shape}, expected {(n_rows,)}")
        if dataset.dtype not in (*FEATURE_DTYPES, np.dtype("float64")):
            _fail(path, f"dataset '{name}' has dtype {dataset.dtype}, which featx does not write there")


def _check_pair_rows(contents: Contents, path: Path, n_rows: int, total_tokens: int | None) -> None:
    """Sentence pairs' datasets, where present: a row's second text and side b's counts, token segments."""
    if s.PAIR_TEXT in contents:
        expect(contents, s.PAIR_TEXT, (n_rows,), "OSU", path)
    for name in (s.PAIR_N_TOKENS, s.PAIR_N_KEPT):
        if name in contents:
            expect(contents, name, (n_rows,), "iu", path)
    for name in (s.TOKEN_SEGMENT_IDS, s.TOKEN_TYPE_IDS):
        if name in contents:
            if total_tokens is None:
                _fail(path, f"dataset '{name}' without token-level states")
            expect(contents, name, (total_tokens,), "iu", path)


def _store_dtype(attrs: dict, path: Path) -> np.dtype:
    """The file's ``store_dtype``: every feature dataset's dtype (``expect``), float16 or float32."""
    value = attrs.get(s.STORE_DTYPE)
    if value not in [dtype.name for dtype in FEATURE_DTYPES]:
        given = "missing" if value is None else shown(value)
        _fail(path, f"attribute '{s.STORE_DTYPE}' is {given}, not float16 or float32")
    return np.dtype(value)


def _sites(attrs: dict, path: Path) -> dict:
    raw = attrs.get(s.SITES_ATTR)
    if not raw:
        return {}
    try:
        sites = loads_json(raw)
    except (TypeError, ValueError, RecursionError):
        _fail(path, f"attribute '{s.SITES_ATTR}' is not valid JSON")
    if not isinstance(sites, dict) or len(sites) > MAX_SITES:
        _fail(path, f"attribute '{s.SITES_ATTR}' is not an object of at most {MAX_SITES} sites")
    for name, site in sites.items():
        if not isinstance(site, dict) or len(name) > MAX_NAME:
            _fail(path, f"site {shown(name)} is not described by an object")
        _layer_list(site, "layers", path, f"site '{name}': ")
        _pooling_list(site, "poolings", path, f"site '{name}': ")
        _int_attr(site, "width", path, 1)
    return sites

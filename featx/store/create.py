"""The datasets of a new features file (``FeatureWriter.create`` calls ``populate``): root attributes, row
metadata, label columns, and every site's feature datasets preallocated at full size."""

from __future__ import annotations

import json

import h5py
import numpy as np

from . import schema as s
from .hdf5 import preallocated, row_chunks, written
from .schema import SiteLayout
from .strings import write_strings


def populate(
    file: h5py.File,
    attrs: dict,
    corpus,
    tokenized,
    sites: list[SiteLayout],
    store_dtype: np.dtype,
    with_tokens: bool,
    row_index: np.ndarray | None,
) -> None:
    """Every dataset and attribute of a new features file but the word-level ones (``words.create_words``):
    the root attributes, the rows' metadata and labels, each site's preallocated feature datasets (and the
    token metadata with ``with_tokens``), and the progress markers at zero."""
    n_rows = len(corpus)
    _root_attrs(file, attrs, sites, n_rows, store_dtype, with_tokens)
    _write_rows(file, corpus, tokenized, row_index)
    for site in sites:
        _site_datasets(file, site, n_rows, tokenized, store_dtype, with_tokens)
    rows_done = preallocated(file, s.ROWS_DONE, (1,), np.int64)
    rows_done[0] = 0
    rows_done.flush()
    block = preallocated(file, s.BLOCK_PROGRESS, (2,), np.int64)
    block[:] = np.array([-1, 0], dtype=np.int64)
    block.flush()


def _root_attrs(
    file: h5py.File, attrs: dict, sites: list[SiteLayout], n_rows: int, store_dtype: np.dtype, with_tokens: bool
) -> None:
    """The provenance ``attrs`` (None left out), then the layout's own attributes."""
    hidden = sites[0]
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


def _site_datasets(
    file: h5py.File, site: SiteLayout, n_rows: int, tokenized, store_dtype: np.dtype, with_tokens: bool
) -> None:
    """One site's pooled datasets (and token-level one), chunked by rows, one layer a chunk; the hidden
    site also carries the token metadata."""
    itemsize = store_dtype.itemsize
    total = int(tokenized.offsets[-1])
    for path in site.pooled_paths.values():
        preallocated(
            file,
            path,
            (n_rows, len(site.layers), site.width),
            store_dtype,
            chunks=(row_chunks(n_rows, site.width * itemsize), 1, site.width),
        )
    if with_tokens:
        preallocated(
            file,
            site.tokens_path,
            (total, len(site.layers), site.width),
            store_dtype,
            chunks=(row_chunks(total, site.width * itemsize), 1, site.width),
        )
    if site.name != s.HIDDEN_SITE:
        file[s.site_group(site.name)].attrs[s.SITE_NAME] = site.name
    if with_tokens and site.name == s.HIDDEN_SITE:
        written(file, s.TOKEN_OFFSETS, data=tokenized.offsets.astype(np.int64))
        written(file, s.TOKEN_INPUT_IDS, data=tokenized.input_ids.astype(np.int32))
        written(file, s.TOKEN_WORD_IDS, data=tokenized.word_ids.astype(np.int32))
        _write_pair_tokens(file, tokenized)


def _write_rows(file: h5py.File, corpus, tokenized, row_index: np.ndarray | None) -> None:
    """Each row's text, id, split, token counts (and corpus row, in a shard), pair texts, and label columns."""
    rows = file.create_group(s.ROWS)
    write_strings(file, s.TEXT, corpus.texts)
    write_strings(file, s.IDS, corpus.ids)
    if corpus.split is not None:
        write_strings(file, s.SPLIT, corpus.split)
    written(rows.file, s.N_TOKENS, data=tokenized.full_lengths.astype(np.int32))
    written(rows.file, s.N_KEPT, data=tokenized.lengths.astype(np.int32))
    written(rows.file, s.TRUNCATED, data=tokenized.truncated)
    if row_index is not None:
        written(rows.file, s.ROW_INDEX, data=np.asarray(row_index, dtype=np.int64))
    _write_pair_rows(file, corpus, tokenized)
    if getattr(tokenized, "contrast", None):  # --contrast: each further answer's tokens, as rows/n_kept answer 0's
        lengths = np.stack([answer.lengths for answer in tokenized.contrast], axis=1)
        written(rows.file, s.CONTRAST_N_KEPT, data=lengths.astype(np.int32))
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
        written(file, s.PAIR_N_TOKENS, data=side_b.full_lengths.astype(np.int32))
        written(file, s.PAIR_N_KEPT, data=side_b.lengths.astype(np.int32))


def _write_pair_tokens(file: h5py.File, tokenized) -> None:
    """Cross-mode pairs with ``--tokens``: each token's segment (0 = a, 1 = b, -1 = special) and type id."""
    if getattr(tokenized, "segments", None) is None:
        return
    written(file, s.TOKEN_SEGMENT_IDS, data=tokenized.segments.astype(np.int8))
    written(file, s.TOKEN_TYPE_IDS, data=tokenized.type_ids.astype(np.int32))


def write_label(file: h5py.File, name: str, column) -> None:
    """One label column: its codes and class names, and its float values when it looks continuous."""
    dataset = written(file, s.label_path(name), data=column.codes.astype(np.int32))
    dataset.attrs[s.LABEL_COLUMN] = name
    dataset.attrs[s.LABEL_NAMES] = json.dumps(column.names)
    if getattr(column, "looks_continuous", False):
        written(file, s.label_values_path(name), data=column.values().astype(np.float64))

"""The features file: the only place that names HDF5 paths and attributes.

``schema``   the layout: every path and attribute name, ``SiteLayout`` (one stored site, hidden included)
``strings``  row strings stored losslessly (NUL escaped), attribute values read back as Python
``writer``   ``FeatureWriter``: preallocated, crash-safe, committed block by block, resumable
``create``   the datasets of a new file (attributes, row metadata, labels, preallocated features)
``hdf5``     the HDF5 primitives under them: preallocation, flushed writes, errors as ``OSError``, chunking
``words``    the ``/words`` group of word inputs: written, checked, and read (``FeatureFile``'s word reads)
``structure`` the first check of a file, before anything in it is read: links, storage, attribute sizes
``validate`` the checks a file passes before anything in it is used: the layout against the schema
``reader``   ``FeatureFile`` (``featx.open``) and the cheap reads of the up-to-date check
``opening``  finding (a ``.partial`` too, when allowed) and opening a features file read-only
``damage``   HDF5's failures on a damaged file, at open and on every ``FeatureFile`` read, as a ``StoreError``
``shards``   a shard's row index and attributes, and the copy of shards into one file (``featx merge``)
``finite``   the finiteness check of every block of features read, and of every matrix a run will read
           (``FeatureFile.require_finite`` of ``FeatureRead``s), before its first fit
``lock``     ``OutputLock``: one writer per output

Other packages import only the names below; ``schema`` (every path and attribute name) is exported as a
namespace on purpose: its keys read best as ``schema.CORPUS_SHA``.
"""

from . import schema
from .derived import DERIVED_SUFFIX, derived_record, write_derived
from .finite import FeatureRead, finite_rows
from .hdf5 import CHUNK_BYTES, allocated_rows, open_file_count
from .lock import OutputLock
from .reader import FeatureFile, finished_request, open_features
from .schema import (
    FORMAT_NAME,
    HEAD_ROOT,
    HEAD_UNKNOWN,
    HIDDEN_SITE,
    PAIR_B_SITE,
    SCHEMA_VERSION,
    SiteLayout,
    contrast_site,
    creating_path,
    escape_name,
    hidden_layout,
    partial_path,
    site_pooled_path,
    site_tokens_path,
)
from .shards import (
    ShardFile,
    copy_shards,
    create_merged,
    extract_again,
    open_shard,
    shard_attrs,
    shard_row_index,
    shard_rows_match,
)
from .strings import STRING_ESCAPE, decode_attr, read_strings, write_strings
from .writer import FeatureWriter, add_label_columns, remove_stale_additions, resumable

__all__ = [
    "CHUNK_BYTES",
    "DERIVED_SUFFIX",
    "FORMAT_NAME",
    "FeatureFile",
    "FeatureRead",
    "FeatureWriter",
    "HEAD_ROOT",
    "HEAD_UNKNOWN",
    "HIDDEN_SITE",
    "OutputLock",
    "PAIR_B_SITE",
    "SCHEMA_VERSION",
    "STRING_ESCAPE",
    "ShardFile",
    "SiteLayout",
    "add_label_columns",
    "allocated_rows",
    "contrast_site",
    "copy_shards",
    "create_merged",
    "creating_path",
    "decode_attr",
    "derived_record",
    "escape_name",
    "finished_request",
    "finite_rows",
    "hidden_layout",
    "open_features",
    "open_file_count",
    "extract_again",
    "open_shard",
    "partial_path",
    "read_strings",
    "remove_stale_additions",
    "resumable",
    "schema",
    "shard_attrs",
    "shard_row_index",
    "shard_rows_match",
    "site_pooled_path",
    "site_tokens_path",
    "write_derived",
    "write_strings",
]

"""Writing a derived features file: the source's rows and labels with replaced pooled features.

A derived file has the same schema as an extracted one, so ``featx.open`` and ``featx probe`` read it
unchanged. It holds only the replaced (layer, pooling) features (float32, no token states, no other
sites), every row and label column of the source, and these attributes on ``/``:

- ``derived``: JSON of what made it (``kind``, e.g. ``"erasure"``, the settings, the source path and
  the source's ``fingerprint``), and ``source_fingerprint``: the source's fingerprint string as is;
- ``fingerprint``: a new one (the source's plus the settings), and no ``request_key``, so that
  ``featx extract`` never takes the derived file for the output of an extraction request.

Where a derived file goes and whether it may be written there is the caller's (``featx/probing/erase.py``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import BinaryIO

import h5py
import numpy as np

from ..safe_files import atomic_write, write_failure, write_hint
from . import schema as s
from .hdf5 import CHUNK_BYTES, write_layer

COPIED_GROUPS = (s.ROWS, s.LABELS, s.PROGRESS)
DROPPED_ATTRS = (s.REQUEST_KEY, s.SITES_ATTR)
DERIVED_SUFFIX = ".writing"  # the derived file's temporary is .NAME.XXXXXXXX.writing (results.check_name_length)


def write_derived(source: Path, output: Path, pooled: dict[str, dict[int, np.ndarray]], derived: dict) -> Path:
    """Write ``output``: ``source``'s rows/labels/attrs with ``pooled[pooling][layer]`` as its features.

    Every pooling must give the same layers. Written through the descriptor of a fresh temporary file in
    ``output``'s folder (``safe_files.atomic_write``: a random name, never a link planted there, never reopened by
    that name) and renamed when complete.
    """
    poolings = list(pooled)
    layers = sorted(next(iter(pooled.values())))
    if any(sorted(by_layer) != layers for by_layer in pooled.values()):
        raise ValueError("every pooling of a derived file must have the same layers")

    def write(handle: BinaryIO) -> None:
        with h5py.File(source, "r", locking=False) as src, h5py.File(handle, "w") as dst:
            for key, value in src.attrs.items():
                if key not in DROPPED_ATTRS:
                    dst.attrs[key] = value
            for name in COPIED_GROUPS:
                src.copy(src[name], dst, name)
            if s.CONTRAST_N_KEPT in dst:  # --contrast's other answers' tokens: a derived file has no answer sites
                del dst[s.CONTRAST_N_KEPT]
            source_fingerprint = str(src.attrs.get(s.FINGERPRINT, ""))
            record = {**derived, "source": str(Path(source).resolve()), "source_fingerprint": source_fingerprint}
            dst.attrs[s.DERIVED] = json.dumps(record, sort_keys=True)
            dst.attrs[s.SOURCE_FINGERPRINT] = source_fingerprint
            dst.attrs[s.FINGERPRINT] = json.dumps(
                {"derived": hashlib.sha256(dst.attrs[s.DERIVED].encode()).hexdigest()}
            )
            dst.attrs[s.LAYERS] = json.dumps(layers)
            dst.attrs[s.POOLINGS] = json.dumps(poolings)
            dst.attrs[s.STORE_DTYPE] = "float32"
            dst.attrs[s.WITH_TOKENS] = False
            _write_pooled(dst, pooled, layers, int(src.attrs[s.N_ROWS]))

    try:
        atomic_write(output, write, readable=True, suffix=DERIVED_SUFFIX)
    except OSError as err:
        raise write_failure(err, output, write_hint(again=False)) from None
    return output


def _write_pooled(dst: h5py.File, pooled: dict, layers: list[int], n_rows: int) -> None:
    for pooling, by_layer in pooled.items():
        width = next(iter(by_layer.values())).shape[1]
        rows = max(1, min(n_rows, CHUNK_BYTES // (4 * width)))
        dataset = dst.create_dataset(
            s.site_pooled_path(s.HIDDEN_SITE, pooling),
            (n_rows, len(layers), width),
            dtype=np.float32,
            chunks=(rows, 1, width),
        )
        for position, layer in enumerate(layers):
            values = np.asarray(by_layer[layer], dtype=np.float32)
            if values.shape != (n_rows, width):
                raise ValueError(f"pooling {pooling} layer {layer}: shape {values.shape}, expected {(n_rows, width)}")
            write_layer(dataset, position, values)


def derived_record(attrs: dict) -> dict | None:
    """The ``derived`` record in a features file's attributes (what made it: kind, method, label, fit_rows,
    source...), None for an extracted file; ``{"kind": "derived"}`` when the record is not a JSON object (a
    foreign or damaged file: it is still a derived one)."""
    value = attrs.get(s.DERIVED)
    if value is None:
        return None
    try:
        record = json.loads(value.decode() if isinstance(value, bytes) else value)
    except (ValueError, TypeError, RecursionError, UnicodeDecodeError):
        record = None
    return record if isinstance(record, dict) else {"kind": "derived"}

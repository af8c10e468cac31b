"""The finiteness check of every block of features read from a file.

A features file can hold inf or NaN (a model that overflowed in float16, a damaged or hand-edited file);
every reader of features (probes of each kind, erasure, neurons, similarity, word probes) would then fail
late and unclearly or, worse, return a number. So each block read is checked once, where it is read: one
``np.isfinite(block).all()`` per block, and only a failing block is searched for its first bad row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import StoreError

HINT = (
    "re-extract it (featx extract ... --overwrite): the model produced inf or NaN at this layer, "
    "e.g. float16 overflow; use --dtype float32"
)


def check_finite(block: np.ndarray, path: Path, what: str, unit: str = "row") -> np.ndarray:
    """``block`` (rows first) unchanged if every value is finite, else a ``StoreError`` naming ``path``,
    ``what`` was read (e.g. "the 'mean' features of layer 3") and the first ``unit`` holding inf or NaN."""
    if np.isfinite(block).all():
        return block
    finite = np.isfinite(block).reshape(len(block), -1).all(axis=1)
    first, affected = int(np.argmin(finite)), int(np.count_nonzero(~finite))
    kind = "NaN" if np.isnan(block[first]).any() else "inf"
    raise StoreError(
        f"{path} holds non-finite values ({kind}) in {what}: first at {unit} {first} "
        f"({affected} {unit}{'s' if affected > 1 else ''} affected)",
        HINT,
    )

"""The finiteness check of every block of features read from a file.

A features file can hold inf or NaN (a model that overflowed in float16, a damaged or hand-edited file);
every reader of features (probes of each kind, erasure, neurons, similarity, word probes) would then fail
late and unclearly or, worse, return a number. So each block read is checked once, where it is read, and
only a failing block is searched for its first bad row. The extraction loop checks each commit block the same
way before it is written (``finite_rows``).

A float is inf or NaN exactly when its exponent bits are all ones, so ``finite_rows`` reads the bits as
unsigned integers: numpy's ``isfinite`` has no vectorised float16 loop, and the bit test is about 5x faster
on the float16 features files hold (20,000 x 7 x 384 values: 21 ms against 103 ms on an AVX2 core).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import StoreError

HINT = (
    "re-extract it (featx extract ... --overwrite): the model produced inf or NaN at this layer, "
    "e.g. float16 overflow; use --dtype float32"
)


# IEEE exponent fields by item size: the unsigned view and the mask whose bits all set mean inf or NaN.
_EXPONENTS = {2: (np.uint16, 0x7C00), 4: (np.uint32, 0x7F800000), 8: (np.uint64, 0x7FF0000000000000)}
_CHUNK_BYTES = 16 << 20  # values tested at a time: the masked copy stays small whatever the block


def finite_rows(block: np.ndarray) -> np.ndarray:
    """Whether each row (first axis) of ``block`` holds only finite values, as a boolean vector."""
    n_rows = len(block)
    if n_rows == 0 or block.size == 0:
        return np.ones(n_rows, dtype=bool)
    flat = block.reshape(n_rows, -1)
    spec = _EXPONENTS.get(block.dtype.itemsize) if block.dtype.kind == "f" else None
    if spec is None or not flat.flags.c_contiguous:
        return np.isfinite(flat).all(axis=1)
    unsigned, mask = spec[0], spec[0](spec[1])
    bits = flat.view(unsigned)
    step = max(1, _CHUNK_BYTES // flat[0].nbytes)
    return np.concatenate([(bits[first : first + step] & mask).max(axis=1) != mask for first in range(0, n_rows, step)])


def check_finite(block: np.ndarray, path: Path, what: str, unit: str = "row") -> np.ndarray:
    """``block`` (rows first) unchanged if every value is finite, else a ``StoreError`` naming ``path``,
    ``what`` was read (e.g. "the 'mean' features of layer 3") and the first ``unit`` holding inf or NaN."""
    finite = finite_rows(block)
    if finite.all():
        return block
    first, affected = int(np.argmin(finite)), int(np.count_nonzero(~finite))
    kind = "NaN" if np.isnan(block[first]).any() else "inf"
    raise StoreError(
        f"{path} holds non-finite values ({kind}) in {what}: first at {unit} {first} "
        f"({affected} {unit}{'s' if affected > 1 else ''} affected)",
        HINT,
    )

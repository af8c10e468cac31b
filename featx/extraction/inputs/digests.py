"""The sha256 of an input file's bytes (a corpus's fingerprint, checked again for freshness), and a scope in
which each file is read for it once (``remembered_digests``: one study run, whose cells check the same corpus
again and again)."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

# While a caller remembers digests (``remembered_digests``): each file's sha256 by its identity.
_REMEMBERED: dict[str, str] | None = None


@contextlib.contextmanager
def remembered_digests() -> Iterator[None]:
    """Within, ``file_sha256`` reads each file once: its digest is remembered by the file's identity (resolved
    path, size, ``mtime_ns``, ``ctime_ns``, inode, device: editing, replacing or touching it changes one of them,
    and it is hashed again). What one study run uses, so that a corpus read by many cells (its plan, every
    probe's freshness check) is hashed once; nothing is kept after the outermost one ends."""
    global _REMEMBERED
    outermost = _REMEMBERED is None
    if outermost:
        _REMEMBERED = {}
    try:
        yield
    finally:
        if outermost:
            _REMEMBERED = None


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks (a corpus's fingerprint, checked again for freshness); within
    ``remembered_digests``, read once per identity of the file."""
    remembered = _REMEMBERED
    if remembered is None:
        return hash_file(path)
    from ..model.fingerprints import identity_key

    try:
        key = identity_key([Path(path)])
    except OSError:
        return hash_file(path)
    if key not in remembered:
        digest = hash_file(path)
        if identity_key([Path(path)]) != key:  # changed while it was read: not remembered
            return digest
        remembered[key] = digest
    return remembered[key]


def hash_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

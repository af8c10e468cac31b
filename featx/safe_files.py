"""Files featx writes next to the user's outputs, safe in shared directories.

A temporary name (``x.tmp``) opened with ``open(path, "w")`` follows a symbolic link planted there, so
anyone who can write to the directory could make featx overwrite the link's target. Temporary files
are therefore created by ``tempfile.mkstemp`` (``O_CREAT|O_EXCL|O_NOFOLLOW``, a fresh random name, mode
0600) in the destination's own folder and renamed over the destination (``rename`` replaces a link
itself, never its target). Small files read back (``.featx/last.json``, manifests) are opened with
``O_NOFOLLOW``, must be regular files, and are read only up to a size bound.

The CSV files featx writes go through ``featx.io.write_csv`` (formula-safe cells), which writes here.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` through a fresh temporary file in its folder, then rename it into place."""
    path = Path(path)
    descriptor, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding=encoding) as handle:
            handle.write(text)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class NotARegularFile(OSError):
    """The path is a link, a device, a FIFO or a directory, or larger than allowed."""


def read_small_text(path: Path, max_bytes: int, encoding: str = "utf-8") -> str:
    """The text of a regular file of at most ``max_bytes``; never follows a link, never blocks on a FIFO."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == getattr(os, "ELOOP", 40):
            raise NotARegularFile(f"{path} is a symbolic link") from None
        raise
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        if info.st_size > max_bytes:
            raise NotARegularFile(f"{path} is larger than {max_bytes} bytes")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotARegularFile(f"{path} is larger than {max_bytes} bytes")
    return data.decode(encoding)

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
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import InputError


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


# -- what --overwrite may replace ---------------------------------------------------------------------------
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
BUNDLE_FILES = ("manifest.json", "weights.safetensors")
OVERWRITE_HINT = "--overwrite replaces only what featx itself wrote: choose a new path with -o"


def refuse_unsafe_target(path: str | os.PathLike) -> None:
    """Refuse an output path that no command may write or replace: empty, a filesystem root, the current
    folder or a folder above it."""
    if not str(path).strip() or str(path) == ".":
        raise InputError("the output path is empty (or the current folder)", "name a new file or folder with -o")
    resolved = Path(path).resolve()
    if resolved == Path(resolved.anchor):
        raise InputError(f"the output path {path} is a filesystem root", "name a new file or folder with -o")
    if Path.cwd().resolve().is_relative_to(resolved):
        raise InputError(
            f"the output path {path} is the current folder or a folder above it", "name a new file or folder with -o"
        )


def check_overwrite(path: str | os.PathLike, what: str, own: Callable[[Path], bool]) -> None:
    """``--overwrite``'s one rule for every command: ``path`` is safe (``refuse_unsafe_target``) and, if it
    exists, is what featx itself writes there (``own``: ``is_bundle_folder``, ``is_hdf5_file``...), never a
    link, a user's folder or file; refused with one line otherwise, before any work."""
    refuse_unsafe_target(path)
    path = Path(path)
    if not os.path.lexists(path):
        return
    if path.is_symlink():
        raise InputError(f"{path} is a symbolic link, not a {what} featx wrote", OVERWRITE_HINT)
    if not own(path):
        kind = "a folder" if path.is_dir() else "a file" if path.is_file() else "not a regular file"
        raise InputError(f"{path} exists and is {kind} that is not a {what} featx wrote: not replaced", OVERWRITE_HINT)


def is_bundle_folder(path: Path) -> bool:
    """A real folder holding exactly a featx probe's ``manifest.json`` and ``weights.safetensors``."""
    if path.is_symlink() or not path.is_dir() or sorted(os.listdir(path)) != sorted(BUNDLE_FILES):
        return False
    try:
        manifest = json.loads(read_small_text(path / "manifest.json", 8 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == "featx-probe"


def _head(path: Path, size: int) -> bytes | None:
    """The first ``size`` bytes of a regular file (None: not one, or unreadable)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return None


def is_hdf5_file(path: Path) -> bool:
    """A regular file that is HDF5 (what featx writes as features files)."""
    return _head(path, len(HDF5_SIGNATURE)) == HDF5_SIGNATURE


def is_predictions_file(path: Path) -> bool:
    """A regular file whose first line names a ``prediction`` column (what ``featx predict`` writes)."""
    head = _head(path, 1 << 16)
    return head is not None and b"prediction" in head.split(b"\n", 1)[0]

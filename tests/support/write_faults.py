"""Write failures without a real full disk or read-only mount (the tests run as root, whom ``chmod`` does not
stop): ``refuse_writes_in`` makes every write-open in one folder fail with an errno, as a read-only folder or an
exhausted quota does; ``fail_nth_write`` makes the n-th write to files with a name ending fail half-way, as a
disk that fills up does."""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path

import h5py

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
REASONS = {errno.EROFS: "the file system is read-only", errno.ENOSPC: "the disk is full"}
REASONS |= {errno.EACCES: "permission denied", errno.EDQUOT: "the disk quota is exceeded"}


def _inside(path, folder: Path) -> bool:
    try:
        return Path(os.fsdecode(path)).absolute().parent == folder
    except TypeError:
        return False


def refuse_writes_in(monkeypatch, folder: Path, code: int) -> None:
    """Opening a file for writing, or making a folder, directly in ``folder`` raises ``OSError(code)``."""
    folder = Path(folder).absolute()
    real_open, real_mkdir, real_builtin_open, real_h5 = os.open, os.mkdir, builtins.open, h5py.File

    def refuse(path):
        raise OSError(code, os.strerror(code), os.fsdecode(path))

    def fake_open(path, flags, *args, **kwargs):
        if flags & WRITE_FLAGS and _inside(path, folder):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if _inside(path, folder):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    def fake_builtin_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and set(mode) & set("wax+") and _inside(file, folder):
            refuse(file)
        return real_builtin_open(file, mode, *args, **kwargs)

    def fake_h5(name, mode="r", *args, **kwargs):
        if mode != "r" and isinstance(name, (str, os.PathLike)) and _inside(name, folder):
            refuse(name)
        return real_h5(name, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    monkeypatch.setattr(builtins, "open", fake_builtin_open)
    monkeypatch.setattr(io, "open", fake_builtin_open)
    monkeypatch.setattr(h5py, "File", fake_h5)


class _FillingFile(io.TextIOWrapper):
    """A text file that writes half of what it is given, then fails as a full disk does."""

    def write(self, text):
        super().write(text[: len(text) // 2])
        super().flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def fail_nth_write(monkeypatch, suffix: str, nth: int) -> None:
    """The ``nth`` (from 1) text file opened by ``os.fdopen`` on a file named ``*suffix`` takes half of its
    first write, then raises ``ENOSPC``."""
    real_fdopen = os.fdopen
    seen = {"n": 0}

    def fake_fdopen(descriptor, mode="r", *args, **kwargs):
        if os.readlink(f"/proc/self/fd/{descriptor}").endswith(suffix) and "b" not in mode:
            seen["n"] += 1
            if seen["n"] == nth:
                raw = real_fdopen(descriptor, "ab" if "a" in mode else "wb")
                return _FillingFile(raw, encoding=kwargs.get("encoding") or "utf-8")
        return real_fdopen(descriptor, mode, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fake_fdopen)

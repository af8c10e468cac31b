"""``OutputLock``: an exclusive lock on ``<output>.lock`` so that two runs never write the same file."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import TextIO

from ..errors import StoreError
from ..safe_files import output_hint, write_failure


class OutputLock:
    """Held while a run writes ``output`` (its ``.partial``, its shards' manifest, its merge)."""

    def __init__(
        self,
        output: Path,
        command: str = "featx extract",
        hint: str = "wait for it to finish, or choose another output with -o",
    ):
        self.path = output.with_name(output.name + ".lock")
        self.command = command  # written into the lock file: a refused run names the holder
        self.hint = hint  # what a refused run is told to do
        self.handle: TextIO | None = None  # the open lock file, while held

    def _open(self) -> TextIO:
        """The lock file, never through a symbolic link planted at its name (that would write its target)."""
        if self.path.is_symlink():
            raise StoreError(
                f"the lock file {self.path} is a symbolic link; featx refuses to write through it",
                output_hint("remove the link (someone may have planted it), or choose another output with -o"),
            )
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise StoreError(
                    f"the lock file {self.path} is a symbolic link; featx refuses to write through it",
                    output_hint("remove the link, or choose another output with -o"),
                ) from None
            raise StoreError(
                f"cannot create the lock file {self.path} ({err.strerror or err})",
                output_hint("choose a writable output location with -o"),
            ) from None
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise StoreError(
                f"the lock file {self.path} is not a regular file",
                output_hint("remove it, or choose another output with -o"),
            )
        return os.fdopen(descriptor, "r+")

    def __enter__(self) -> OutputLock:
        try:
            while True:
                self.handle = handle = self._open()
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.seek(0)
                    holder = handle.read().strip() or "featx run"
                    handle.close()
                    if holder.startswith("pid "):  # written by a featx that named no command
                        holder = f"featx extract ({holder})"
                    raise StoreError(
                        f"another {holder} is writing {self.path.name[:-5]} right now", output_hint(self.hint)
                    ) from None
                # The holder unlinks the file when done: a lock taken on an unlinked file locks nothing.
                try:
                    if os.stat(self.path).st_ino == os.fstat(handle.fileno()).st_ino:
                        break
                except FileNotFoundError:
                    pass
                handle.close()
            try:
                handle.seek(0)
                handle.truncate()
                handle.write(f"{self.command} (pid {os.getpid()})")
                handle.flush()
            except OSError as err:  # a full disk: the holder's name cannot be written
                raise write_failure(
                    err, self.path, output_hint("free disk space, then run the same command again")
                ) from None
        except BaseException:  # Ctrl-C or SIGTERM while taking the lock: release (and remove) what was taken
            if self.handle is not None and not self.handle.closed:
                self._remove_if_ours(self.handle)
                with contextlib.suppress(OSError):  # closing flushes again what a full disk refused
                    self.handle.close()
            else:  # interrupted inside ``_open``, after it may have created the file: no handle to tell by
                self._remove_if_unheld()
            raise
        return self

    def _remove_if_unheld(self) -> None:
        """Unlink the lock file if no process holds its lock (one this run created before a signal cut ``_open``
        short, or a dead run's): opened again without creating it or following a link, then ``_remove_if_ours``
        on that descriptor, whose lock no other process can hold. A file another run holds is left alone."""
        try:
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return
        try:
            self._remove_if_ours(descriptor)
        finally:
            os.close(descriptor)

    def _remove_if_ours(self, handle: TextIO | int) -> None:
        """Unlink the lock file if this open file (or descriptor) holds its lock (taking it again on the same open
        file succeeds only then: another holder makes it fail) and it is still the file at the path."""
        descriptor = handle if isinstance(handle, int) else handle.fileno()
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(self.path).st_ino == os.fstat(descriptor).st_ino:
                self.path.unlink()
        except OSError:
            pass

    def __exit__(self, *exc) -> None:
        handle = self.handle
        if handle is None:  # never taken (``__enter__`` failed): nothing to release
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()

"""The end of a ``featx`` command: the process ends as soon as its work is done and its files are closed.

A Python process that has imported torch spends about 0.5 s of CPU after its last line, tearing the
interpreter down (freeing every module's objects; measured on MiniLM's 1-row ``featx extract``: 0.50-0.58 s
of the command's 3.5 s CPU, on a loaded 2-core host, several seconds of wall time there). Nothing of that
teardown is output. ``exit_now`` runs what a normal exit runs that matters (the ``atexit`` handlers:
temporary folders, logging, multiprocessing's children), flushes the standard streams and ends the process
with ``os._exit``. It falls back on a normal ``sys.exit`` wherever the teardown could still do work: a
thread that is not a daemon still running, an HDF5 file still open (HDF5 flushes those at exit), child
processes alive, or an interpreter without ``atexit._run_exitfuncs``.
Only the console command (``featx.cli.run``, ``python -m featx``) ends this way; ``featx.cli.main`` called in
a process that goes on (tests, notebooks) raises ``SystemExit`` as click does.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_code(code: object) -> int:
    """The status ``sys.exit(code)`` ends the process with (None: 0, an integer: itself, else 1, the
    code printed on standard error as Python prints it)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def can_exit_now() -> bool:
    """Whether nothing is left for the interpreter's teardown to do but free memory."""
    if not callable(getattr(atexit, "_run_exitfuncs", None)):
        return False
    main = threading.main_thread()
    if any(thread is not main and not thread.daemon and thread.is_alive() for thread in threading.enumerate()):
        return False
    if "multiprocessing" in sys.modules and sys.modules["multiprocessing"].active_children():
        return False
    if "h5py" in sys.modules:
        from .store import open_file_count

        if open_file_count():
            return False
    return True


def exit_now(code: str | int | None = None) -> NoReturn:
    """End the process with ``code`` (as ``sys.exit(code)`` would) without the interpreter's teardown, when
    ``can_exit_now()``; else ``sys.exit(code)``."""
    if not can_exit_now():
        sys.exit(code)
    status = exit_code(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe (featx ... | head), a closed stream
            status = status or 120  # what Python exits with when it cannot flush at exit
    os._exit(status)


__all__ = ["can_exit_now", "exit_code", "exit_now"]

"""SIGTERM and SIGHUP handled like Ctrl-C.

``kill``, batch schedulers, Kubernetes and ``timeout`` send SIGTERM; a closed terminal sends SIGHUP. By
default either ends Python at once: no message, the lock left behind, queued commit blocks lost. While
``interrupts_on_termination()`` is active they raise ``Terminated`` (a ``KeyboardInterrupt``) in the
main thread instead, so every place that already handles Ctrl-C (the writer finishing its commit block, the
lock's release, the resume hint) handles them too; the exit code is 128 + the signal (143, 129).
"""

from __future__ import annotations

import contextlib
import signal
import threading

from .errors import Terminated

HANDLED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _raise_terminated(signum, frame) -> None:
    raise Terminated(signum, signal.Signals(signum).name)


@contextlib.contextmanager
def interrupts_on_termination():
    """SIGTERM/SIGHUP raise ``Terminated`` in the main thread while active (a no-op in other threads)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum in HANDLED:
        try:
            if signal.getsignal(signum) is signal.SIG_IGN:  # nohup: the user asked to ignore it
                continue
            previous[signum] = signal.signal(signum, _raise_terminated)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

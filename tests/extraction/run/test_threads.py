"""The extraction's helper threads (``featx.extraction.run.threads``) survive a lost wake-up.

An interrupt (Ctrl-C, SIGTERM, SIGHUP) raises in the main thread wherever it is; one that lands inside
``queue.Queue``'s ``notify``, after it woke a waiter and before it took it off the condition's list, leaves a
stale waiter first in line: the next ``notify`` goes to it and the thread really waiting sleeps on. A SIGTERM test
of the whole suite hung that way (the writer asleep beside the ``None`` that closes it, the main thread joining
it: the stacks its fault handler printed). These tests put such a stale waiter in place and check that nothing
waits for good."""

from __future__ import annotations

import itertools
import queue
import threading
import time

import numpy as np

from featx.extraction.run import threads


def _stale_waiter(condition: threading.Condition) -> None:
    """What an interrupt inside ``condition.notify`` leaves: a woken waiter's lock, acquired again and never
    removed, first in line."""
    stale = threading.Lock()
    stale.acquire()
    with condition:
        condition._waiters.appendleft(stale)  # type: ignore[attr-defined]


class _Sink:
    def __init__(self):
        self.commits: list[int] = []

    def write_block(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        pass

    def commit(self, rows_done: int) -> None:
        self.commits.append(rows_done)

    def commit_batches(self, block_start: int, batches_done: int) -> None:
        pass


def _within(seconds: float, work) -> bool:
    """Whether ``work()`` returns within ``seconds`` (run in a daemon thread, so a hang fails the test only)."""
    finished = threading.Event()
    threading.Thread(target=lambda: (work(), finished.set()), daemon=True).start()
    return finished.wait(seconds)


def test_the_writer_closes_after_a_lost_wake_up():
    sink = _Sink()
    writer = threads.BackgroundWriter(sink)
    writer.submit(([], 0, 8, None))
    deadline = time.monotonic() + 10
    while sink.commits != [8] and time.monotonic() < deadline:  # the writer is idle, waiting on its queue
        time.sleep(0.01)
    time.sleep(0.05)
    _stale_waiter(writer.queue.not_empty)
    assert _within(10, writer.close), "the writer slept on beside the None that closes it"
    assert sink.commits == [8] and not writer.thread.is_alive()


def test_prefetch_stops_its_thread_after_a_lost_wake_up(monkeypatch):
    made: list[queue.Queue] = []

    class Recorded(queue.Queue):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(threads.queue, "Queue", Recorded)
    items = threads.prefetch(itertools.count(), depth=1)
    assert next(items) == 0
    deadline = time.monotonic() + 10
    while not made[0].full() and time.monotonic() < deadline:  # the producer is ahead, waiting for room
        time.sleep(0.01)
    time.sleep(0.05)
    _stale_waiter(made[0].not_full)
    assert _within(10, items.close), "the collating thread slept on, and closing the batches waited for it"
    assert not any(thread.name == "featx-collate" for thread in threading.enumerate())

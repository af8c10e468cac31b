"""The extraction's two helper threads: ``BackgroundWriter`` writes and commits finished blocks, and
``prefetch`` collates the next batches, so the forward pass waits on neither disk nor input.

Both wait on their queues with a timeout (``POLL_SECONDS``), never for good. A Ctrl-C, SIGTERM or SIGHUP raises
in the main thread wherever it is, and one that lands inside ``queue.Queue``'s ``notify`` (between waking a
waiter and removing it from the condition's list) leaves a stale waiter behind: the next ``notify`` wakes that one
and the thread really waiting sleeps on. A thread that waited for good then hung the interrupted run at its exit
(the writer asleep beside the ``None`` that closes it, the main thread joining it); a timed wait wakes anyway,
removes its own stale waiter and looks at the queue again."""

from __future__ import annotations

import queue
import threading
from typing import Protocol

import numpy as np

POLL_SECONDS = 0.25  # the longest a helper thread sleeps on a wake-up an interrupt made it miss


class Sink(Protocol):
    """Where the batch loop's blocks go: the HDF5 ``featx.store.FeatureWriter``, or ``embed``'s arrays in memory."""

    @property
    def rows_done(self) -> int: ...

    def batches_done(self, block_start: int) -> int: ...

    def read_block(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None: ...

    def write_block(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None: ...

    def commit(self, rows_done: int) -> None: ...

    def commit_batches(self, block_start: int, batches_done: int) -> None: ...


class BackgroundWriter:
    """Background thread that writes and commits blocks so the model never waits on disk.

    An item is ``(writes, block_start, block_stop, batches)``: ``writes`` are ``(start, stop, values)``
    row ranges to write, then, when ``batches is None``, every row up to ``block_stop`` is committed (the
    whole block is in); else the first ``batches`` batches of the block at ``block_start`` are marked
    as written (a commit by time inside a block).
    """

    def __init__(self, writer: Sink):
        self.writer = writer
        self.queue: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="featx-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                item = self.queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if item is None:
                return
            if self.error is not None:
                continue
            writes, block_start, block_stop, batches = item
            try:
                for start, stop, values in writes:
                    self.writer.write_block(start, stop, values)
                if batches is None:
                    self.writer.commit(block_stop)
                else:
                    self.writer.commit_batches(block_start, batches)
            except BaseException as err:  # surfaced in the main thread
                self.error = err

    def submit(self, item) -> None:
        self.raise_if_failed()
        self.queue.put(item)

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        # Let the thread finish the block it is committing even through a (second) Ctrl-C:
        # closing the file under it would only waste that block. The interrupt is re-raised.
        interrupted = False
        sent = False
        while not sent or self.thread.is_alive():
            try:
                if not sent:
                    self.queue.put(None)
                    sent = True
                self.thread.join()
            except KeyboardInterrupt:
                interrupted = True
        if interrupted:
            raise KeyboardInterrupt


def prefetch(iterable, depth: int = 2):
    """Run ``iterable`` in a thread, ``depth`` items ahead (batch collation overlaps the model)."""
    items: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in iterable:
                if not put(item):
                    return
        except BaseException as err:
            put(err)
        put(done)

    thread = threading.Thread(target=produce, name="featx-collate", daemon=True)
    thread.start()
    try:
        while True:
            try:
                item = items.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                items.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.05)

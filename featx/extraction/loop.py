"""The batch loop: windows of rows, batches within a window, results scattered into the window's host
buffers, and a background thread that writes and commits each finished window.

Collating the next batch (a thread), the forward pass (the main thread) and writing the previous
window (another thread) overlap, so the model never waits on tokenised input or on disk.
"""

from __future__ import annotations

import queue
import threading
import time

import numpy as np

from ..errors import StoreError
from ..store import FeatureWriter
from .batching import collate, plan_batches, plan_windows
from .plan import ExtractionPlan
from .runner import Runner
from .tokenize import TokenizedCorpus


class BackgroundWriter:
    """Background thread that writes and commits windows so the model never waits on disk."""

    def __init__(self, writer: FeatureWriter):
        self.writer = writer
        self.queue: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="featx-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            if self.error is not None:
                continue
            start, stop, values = item
            try:
                self.writer.write_window(start, stop, values)
                self.writer.commit(stop)
            except BaseException as err:  # surfaced in the main thread
                self.error = err

    def submit(self, item) -> None:
        self.raise_if_failed()
        self.queue.put(item)

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        # Let the thread finish the window it is committing even through a (second) Ctrl-C:
        # closing the file under it would only waste that window. The interrupt is re-raised.
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

    def produce():
        try:
            for item in iterable:
                if stop.is_set():
                    return
                items.put(item)
        except BaseException as err:
            items.put(err)
        items.put(done)

    thread = threading.Thread(target=produce, name="featx-collate", daemon=True)
    thread.start()
    try:
        while True:
            item = items.get()
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


class Window:
    """One window's host buffers, ``{dataset path: array}``, filled batch by batch in corpus order."""

    def __init__(self, plan: ExtractionPlan, tokenized: TokenizedCorpus, start: int, stop: int):
        self.start, self.stop, self.tokenized = start, stop, tokenized
        self.token_base = int(tokenized.offsets[start])
        n_tokens = int(tokenized.offsets[stop]) - self.token_base
        dtype = np.dtype(plan.store_dtype)
        self.values: dict[str, np.ndarray] = {}
        self.token_paths: set[str] = set()
        for site in plan.sites:
            shape = (len(site.layers), site.width)
            for path in site.pooled_paths.values():
                self.values[path] = np.empty((stop - start, *shape), dtype=dtype)
            if plan.with_tokens:
                self.values[site.tokens_path] = np.empty((n_tokens, *shape), dtype=dtype)
                self.token_paths.add(site.tokens_path)

    def store(self, positions: np.ndarray, batch: dict, event) -> None:
        """A batch's results (``Runner`` output) into the buffers; ``positions`` are window rows."""
        if event is not None:
            event.synchronize()
        for path, values in batch.items():
            if path in self.token_paths:
                self._scatter_tokens(values.numpy(), self.values[path], positions)
            else:
                self.values[path][positions] = values.numpy()

    def _scatter_tokens(self, flat: np.ndarray, out: np.ndarray, positions) -> None:
        """A batch's real tokens (in batch order) into the window's token buffer (in corpus order)."""
        offsets, cursor = self.tokenized.offsets, 0
        for position in positions:
            row = self.start + int(position)
            first, last = int(offsets[row]) - self.token_base, int(offsets[row + 1]) - self.token_base
            out[first:last] = flat[cursor : cursor + last - first]
            cursor += last - first

    def check_finite(self, store_dtype: str) -> None:
        """Refuse inf/NaN (float16 overflow) before anything is written."""
        rows_first = sorted(self.values.items(), key=lambda item: item[0] in self.token_paths)
        for path, values in rows_first:
            if path in self.token_paths:
                if not np.isfinite(values).all():
                    raise StoreError(f"token-level states in the window from row {self.start} are inf or NaN "
                                     "after casting", "re-run with --store-dtype float32 --overwrite")
                continue
            finite = np.isfinite(values).all(axis=(1, 2))
            if not finite.all():
                row = self.start + int(np.argmin(finite))
                name = path.rsplit("/", 1)[-1]
                raise StoreError(
                    f"'{name}' features of row {row} are inf or NaN after casting to {store_dtype}",
                    "values beyond float16's range (±65504)? re-run with --store-dtype float32 --overwrite; "
                    "with --dtype float16, try --dtype float32 or bfloat16",
                )


def windows(plan: ExtractionPlan, tokenized: TokenizedCorpus) -> list[tuple[int, int]]:
    lengths = tokenized.lengths if plan.with_tokens else None
    return plan_windows(len(tokenized), plan.window_rows, lengths, plan.window_tokens)


def split_batches(plan: ExtractionPlan, lengths: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Batches of the rows that fit the model, and (``--long window``) the longer rows, each run alone."""
    if plan.window is None:
        return plan_batches(lengths, plan.max_tokens, plan.batch_size), np.zeros(0, dtype=np.int64)
    fits = np.flatnonzero(lengths <= plan.max_length)
    batches = [fits[batch] for batch in plan_batches(lengths[fits], plan.max_tokens, plan.batch_size)]
    return batches, np.flatnonzero(lengths > plan.max_length)


def run(plan: ExtractionPlan, writer: FeatureWriter, tokenized: TokenizedCorpus, runner: Runner, pad_id: int,
        pin_memory: bool = False) -> None:
    """Extract every window after the writer's committed rows; each is committed in the background."""
    from tqdm.auto import tqdm

    start_row = writer.rows_done
    background = BackgroundWriter(writer)
    bar = tqdm(total=len(tokenized), initial=start_row, unit="rows", disable=not plan.config.progress,
               dynamic_ncols=True, desc="extract")
    tokens_done, began = 0, time.perf_counter()
    try:
        with runner.hooks():  # attached after the runner set the model up; off however the loop ends
            for start, stop in windows(plan, tokenized):
                if stop <= start_row:
                    continue
                window = Window(plan, tokenized, start, stop)
                batches, long_rows = split_batches(plan, tokenized.lengths[start:stop])

                def batches_of_window(batches=batches, long_rows=long_rows, start=start):
                    for positions in batches:
                        yield positions, collate(tokenized, positions + start, pad_id, pin_memory=pin_memory)
                    for position in long_rows:  # --long window: one row, split into windows by the runner
                        yield np.array([position]), tokenized.row(start + int(position))

                pending = None
                for positions, batch in prefetch(batches_of_window()):
                    if isinstance(batch, np.ndarray):
                        result, n_tokens = (positions, *runner.windowed(batch)), len(batch)
                    else:
                        result, n_tokens = (positions, *runner(*batch)), int(batch[1].sum())
                    if pending is not None:  # consume the previous batch while this one runs on the GPU
                        window.store(*pending)
                    pending = result
                    tokens_done += n_tokens
                    bar.update(len(positions))
                    bar.set_postfix_str(f"{tokens_done / max(time.perf_counter() - began, 1e-9):,.0f} tok/s",
                                        refresh=False)
                if pending is not None:
                    window.store(*pending)
                window.check_finite(plan.store_dtype)
                background.submit((start, stop, window.values))
    finally:
        bar.close()
        background.close()
    background.raise_if_failed()

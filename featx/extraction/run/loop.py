"""The batch loop: commit blocks of rows (written and committed together; ``--long window`` is another thing),
batches within a block (``--long window``'s long rows last, in steps whose windows share forward passes), results
scattered into the block's host buffers, and a background thread that writes and commits each finished block.

Collating the next batch (a thread), the forward pass (the main thread) and writing the previous
block (another thread) overlap, so the model never waits on tokenised input or on disk; the two threads
are ``threads.py``'s.
"""

from __future__ import annotations

import time

import numpy as np

from ...errors import NonFiniteError
from ...options import spoken_value
from ...store import finite_rows
from ..forward.runner import Runner
from ..forward.word_pooling import row_word_ids, with_word_index
from ..plan import ExtractionPlan
from ..tokens.batching import batch_tokens, collate, plan_batches, plan_blocks
from ..tokens.long_windows import WindowGroup, split_row, window_counts, window_groups, windows_per_pass
from ..tokens.tokenize import TokenizedCorpus
from .threads import BackgroundWriter, Sink, prefetch


class Block:
    """One block's host buffers, ``{dataset path: array}``, filled batch by batch in corpus order.

    Flat buffers (token-level states with ``--tokens``, word vectors of word inputs) hold the block rows'
    tokens or words, placed by the rows' offsets (``flat``: path -> offsets)."""

    def __init__(self, plan: ExtractionPlan, tokenized: TokenizedCorpus, start: int, stop: int):
        self.start, self.stop, self.tokenized = start, stop, tokenized
        dtype = np.dtype(plan.store_dtype)
        self.values: dict[str, np.ndarray] = {}
        self.flat: dict[str, np.ndarray] = {}
        for site in plan.sites:
            shape = (len(site.layers), site.width)
            for path in site.pooled_paths.values():
                self.values[path] = np.zeros((stop - start, *shape), dtype=dtype)
            if plan.with_tokens:
                self.flat[site.tokens_path] = tokenized.offsets
        for path in plan.word_paths:
            assert tokenized.word_offsets is not None  # word inputs have word offsets
            self.flat[path] = tokenized.word_offsets
        for path, offsets in self.flat.items():
            shape = (
                (len(plan.hidden.layers), plan.hidden.width)
                if path in plan.word_paths
                else next((len(site.layers), site.width) for site in plan.sites if site.tokens_path == path)
            )
            self.values[path] = np.zeros((int(offsets[stop] - offsets[start]), *shape), dtype=dtype)
        self.token_paths: set[str] = set(self.flat)

    def _span(self, path: str, first: int, last: int) -> tuple[int, int]:
        """Where block rows ``[first, last)`` sit in the flat buffer of ``path``."""
        offsets = self.flat[path]
        base = int(offsets[self.start])
        return int(offsets[self.start + first]) - base, int(offsets[self.start + last]) - base

    def store(self, positions: np.ndarray, batch: dict, event) -> None:
        """A batch's results (``Runner`` output) into the buffers; ``positions`` are block rows."""
        if event is not None:
            event.synchronize()
        for path, values in batch.items():
            # a --long window step gives one tensor per row (runner.windowed), in the order of positions
            array = np.concatenate([value.numpy() for value in values]) if isinstance(values, list) else values.numpy()
            if path in self.flat:
                self._scatter(path, array, positions)
            else:
                self.values[path][positions] = array

    def _scatter(self, path: str, flat: np.ndarray, positions) -> None:
        """A batch's real tokens or words (in batch order) into the block's flat buffer (in corpus order)."""
        out, cursor = self.values[path], 0
        for position in positions:
            first, last = self._span(path, int(position), int(position) + 1)
            out[first:last] = flat[cursor : cursor + last - first]
            cursor += last - first

    def rows(self, first: int, last: int) -> dict[str, np.ndarray]:
        """The buffers of block rows ``[first, last)`` (views), flat ones by the rows' tokens or words."""
        return {
            path: values[slice(*self._span(path, first, last))] if path in self.flat else values[first:last]
            for path, values in self.values.items()
        }

    def load(self, writer: Sink, undone: np.ndarray) -> None:
        """Resume a block: the rows committed inside it back from the file, the others zeroed."""
        writer.read_block(self.start, self.stop, self.values)
        for path, values in self.values.items():
            if path not in self.flat:
                values[undone] = 0
                continue
            for position in undone:
                values[slice(*self._span(path, int(position), int(position) + 1))] = 0

    def check_finite(self, store_dtype: str, first: int = 0, last: int | None = None, edited: bool = False) -> None:
        """Refuse inf/NaN (float16 overflow, an edit too large) in rows ``[first, last)`` before they are written."""
        hint = non_finite_hint(store_dtype, edited)
        last = self.stop - self.start if last is None else last
        rows_first = sorted(self.rows(first, last).items(), key=lambda item: item[0] in self.token_paths)
        for path, values in rows_first:
            if path in self.token_paths:
                if not finite_rows(values).all():
                    raise NonFiniteError(
                        f"token-level states or word vectors in the block from row {self.start} are inf or NaN "
                        "after casting",
                        hint,
                    )
                continue
            finite = finite_rows(values)
            if not finite.all():
                row = self.start + first + int(np.argmin(finite))
                name = path.rsplit("/", 1)[-1]
                raise NonFiniteError(
                    f"'{name}' features of row {row} are inf or NaN after casting to {store_dtype}", hint
                )


def _say(name: str, value, flag: str) -> str:
    from ..config import ExtractConfig

    return spoken_value(ExtractConfig, name, value, flag)


def non_finite_hint(store_dtype: str, edited: bool) -> str:
    """What to try when a row's states are inf or NaN: a smaller edit (``--intervene``), float32 storage (float16
    holds at most ±65504), or another compute dtype than float16."""
    hints = ["an --intervene edit may push the states out of range: give a smaller steer amount"] if edited else []
    if store_dtype == "float16":
        again = f"{_say('store_dtype', 'float32', '--store-dtype')} {_say('overwrite', True, '--overwrite')}"
        hints.append(f"values beyond float16's range (±65504)? re-run with {again}")
    hints.append(f"with {_say('dtype', 'float16', '--dtype')}, try {_say('dtype', 'float32', '--dtype')} or bfloat16")
    return "; ".join(hints)


def blocks(plan: ExtractionPlan, tokenized: TokenizedCorpus) -> list[tuple[int, int]]:
    lengths = tokenized.lengths if plan.with_tokens else None
    if plan.word_paths:  # word vectors (and token states) of a block share the host memory budget
        from ..forward.word_pooling import block_weights

        return plan_blocks(len(tokenized), plan.block_rows, *block_weights(plan, tokenized))
    return plan_blocks(len(tokenized), plan.block_rows, lengths, plan.block_tokens)


def split_batches(plan: ExtractionPlan, lengths: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Batches of the rows that fit the model, and (``--long window``) the longer rows, run in windows."""
    if plan.window is None:
        return plan_batches(lengths, plan.max_tokens, plan.batch_size), np.zeros(0, dtype=np.int64)
    fits = np.flatnonzero(lengths <= plan.max_length)
    batches = [fits[batch] for batch in plan_batches(lengths[fits], plan.max_tokens, plan.batch_size)]
    return batches, np.flatnonzero(lengths > plan.max_length)


class CommitClock:
    """When to commit inside a block, so that a kill at any moment loses less than ``seconds`` of work.

    ``covered`` is when the last committed batch finished: the work since then is what a kill would
    lose. A commit is made at a batch boundary when waiting for the next one (one more batch, as long as
    the last) would take that past ``seconds``.
    """

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.covered = self.last_finish = self.stored_until = time.perf_counter()
        self.batch_seconds = 0.0

    def batch_stored(self, finished: float) -> None:
        """A batch that finished (came back from the model) at ``finished`` is in the buffers."""
        self.batch_seconds, self.last_finish = max(0.0, finished - self.last_finish), finished
        self.stored_until = finished

    def due(self) -> bool:
        return time.perf_counter() + self.batch_seconds - self.covered >= self.seconds

    def committed(self) -> None:
        self.covered = self.stored_until


class BlockRun:
    """One block: its batches through the model, commits by time on batch boundaries, then the whole block.

    The batch plan is the block's (a function of its rows' lengths only), so commits by time change
    neither the features nor the fingerprint; a resumed block skips the batches committed inside it.
    """

    def __init__(
        self,
        plan: ExtractionPlan,
        tokenized: TokenizedCorpus,
        start: int,
        stop: int,
        background: BackgroundWriter,
        clock: CommitClock,
    ):
        self.plan, self.background, self.clock = plan, background, clock
        self.block = Block(plan, tokenized, start, stop)
        self.batches, self.n_batched = block_batches(plan, tokenized, start, stop)
        self.committed = 0  # batches written and marked inside this block
        self.stored = 0  # batches in the buffers
        self.fresh: list[np.ndarray] = []  # block rows stored since the last commit, batch by batch

    def resume(self, writer: Sink) -> int:
        """Skip the batches an earlier run committed inside this block; the rows they hold."""
        done = min(writer.batches_done(self.block.start), len(self.batches))
        if done:
            undone = np.concatenate(self.batches[done:]) if done < len(self.batches) else np.zeros(0, np.int64)
            self.block.load(writer, undone)
            self.committed = self.stored = done
        return int(sum(len(batch) for batch in self.batches[:done]))

    def store(self, pending, finished: float) -> None:
        """A batch's results (``(positions, values, event)``), which came back at ``finished``, into the block."""
        self.block.store(*pending)
        self.stored += 1
        self.fresh.append(pending[0])
        self.clock.batch_stored(finished)
        if self.clock.due() and self.stored < len(self.batches):
            self._submit(runs(np.concatenate(self.fresh)), batches=self.stored)

    def finish(self) -> None:
        """Check the whole block, write what no commit inside it wrote, and commit it."""
        self.block.check_finite(self.plan.store_dtype, edited=bool(self.plan.edits))
        whole = self.committed == 0 or not self.fresh  # nothing written yet (or all of it by an earlier run)
        self._submit(
            [(0, self.block.stop - self.block.start)] if whole else runs(np.concatenate(self.fresh)), batches=None
        )

    def _submit(self, spans: list[tuple[int, int]], batches: int | None) -> None:
        block = self.block
        if batches is not None:
            for first, last in spans:
                block.check_finite(self.plan.store_dtype, first, last, edited=bool(self.plan.edits))
        writes = [(block.start + first, block.start + last, block.rows(first, last)) for first, last in spans]
        self.background.submit((writes, block.start, block.stop, batches))
        self.committed, self.fresh = self.stored, []
        self.clock.committed()


def block_batches(
    plan: ExtractionPlan, tokenized: TokenizedCorpus, start: int, stop: int
) -> tuple[list[np.ndarray], int]:
    """The batches of the block ``[start, stop)`` (positions in it), and how many are collated batches: rows longer
    than the model (``--long window``) come last, in steps whose windows share forward passes
    (``long_windows.window_groups``)."""
    lengths = tokenized.batch_lengths[start:stop]
    batches, long_rows = split_batches(plan, lengths)
    if not len(long_rows):
        return batches, len(batches)
    spec = plan.window
    assert spec is not None  # long rows run in windows with --long window only
    counts = window_counts(lengths[long_rows], spec.n_lead, spec.n_trail, spec.budget, spec.stride)
    per_pass = windows_per_pass(plan.max_tokens, plan.batch_size, plan.max_length)
    return batches + [long_rows[group] for group in window_groups(counts, per_pass)], len(batches)


def rows_committed_inside(plan: ExtractionPlan, tokenized: TokenizedCorpus, block_start: int, n_batches: int) -> int:
    """The rows of the first ``n_batches`` batches of the block starting at ``block_start``: what a run committed
    inside that block, and the next run skips."""
    for start, stop in blocks(plan, tokenized):
        if start == block_start:
            return int(sum(len(batch) for batch in block_batches(plan, tokenized, start, stop)[0][:n_batches]))
    return 0


def runs(positions: np.ndarray, gap: int = 32) -> list[tuple[int, int]]:
    """Block rows ``[first, last)`` covering ``positions``: runs of rows, closer runs merged.

    Batches run longest first, so the rows finished since a commit are scattered over the block:
    writing only their runs (rows in the small gaps between them are written too; they are not yet
    committed, and rewritten when done) keeps a commit's cost to the rows it commits.
    """
    if not len(positions):
        return []
    ordered = np.unique(positions)
    breaks = np.flatnonzero(np.diff(ordered) > gap)
    firsts = np.r_[ordered[0], ordered[breaks + 1]]
    lasts = np.r_[ordered[breaks], ordered[-1]] + 1
    return [(int(first), int(last)) for first, last in zip(firsts, lasts, strict=False)]


def run(
    plan: ExtractionPlan,
    writer: Sink,
    tokenized: TokenizedCorpus,
    runner: Runner,
    pad_id: int,
    pin_memory: bool = False,
) -> int:
    """Extract every block after the writer's committed rows; each is committed in the background.

    Returns the rows an earlier run had committed inside the first block (skipped here)."""
    from ...progress import progress_bar

    start_row = writer.rows_done
    background = BackgroundWriter(writer)
    bar = progress_bar(
        total=len(tokenized),
        initial=start_row,
        unit="rows",
        disable=not plan.config.progress,
        dynamic_ncols=True,
        desc="extract",
    )
    speed = _Speed()
    clock = CommitClock(plan.commit_seconds)
    skipped = 0
    try:
        with runner.hooks():  # attached after the runner set the model up; off however the loop ends
            for start, stop in blocks(plan, tokenized):
                if stop <= start_row:
                    continue
                current = BlockRun(plan, tokenized, start, stop, background, clock)
                if start == start_row:
                    skipped = current.resume(writer)
                    bar.update(skipped)
                batches = _batches_of_block(plan, tokenized, current, start, pad_id, pin_memory)
                _extract_block(current, batches, runner, bar, speed)
    finally:
        bar.close()
        background.close()
    background.raise_if_failed()
    return skipped


class _Speed:
    """Tokens through the model since the loop began, for the progress bar's tokens per second."""

    def __init__(self) -> None:
        self.tokens = 0
        self.began = time.perf_counter()

    def add(self, n_tokens: int) -> str:
        self.tokens += n_tokens
        return f"{self.tokens / max(time.perf_counter() - self.began, 1e-9):,.0f} tok/s"


def _batches_of_block(
    plan: ExtractionPlan, tokenized: TokenizedCorpus, current: BlockRun, start: int, pad_id: int, pin_memory: bool
):
    """The block's batches not stored yet, as ``(positions, runner arguments)``: collated batches, then the
    ``--long window`` steps, their rows split into windows."""
    for index in range(current.stored, len(current.batches)):
        positions = current.batches[index]
        if index < current.n_batched:
            batch = collate(tokenized, positions + start, pad_id, pin_memory=pin_memory)
            yield positions, with_word_index(plan, tokenized, positions + start, batch)
        else:  # --long window: a step of long rows, whose windows the runner runs across rows
            yield positions, window_group(plan, tokenized, positions + start)


def window_group(plan: ExtractionPlan, tokenized: TokenizedCorpus, rows: np.ndarray) -> WindowGroup:
    """Corpus ``rows`` (longer than the model) split into their windows, with their word ids for word inputs."""
    spec = plan.window
    assert spec is not None  # rows run in windows with --long window only
    words = [row_word_ids(plan, tokenized, int(row)) for row in rows]
    split = [
        split_row(tokenized.row(int(row)), spec.n_lead, spec.n_trail, spec.budget, spec.stride, word_ids)
        for row, word_ids in zip(rows, words, strict=True)
    ]
    return WindowGroup(split, words)


def _extract_block(current: BlockRun, batches, runner: Runner, bar, speed: _Speed) -> None:
    """Run the model over the block's batches (collated ahead in a thread), storing each batch's results
    while the next one runs, then finish the block (checked and committed in the background)."""
    pending = None
    for positions, batch in prefetch(batches):
        if isinstance(batch, WindowGroup):
            result, n_tokens = (positions, *runner.windowed(batch)), batch.n_tokens
        else:
            result, n_tokens = (positions, *runner(*batch)), batch_tokens(batch)
        if pending is not None:  # consume the previous batch while this one runs on the GPU
            current.store(*pending)
        pending = result, time.perf_counter()
        bar.update(len(positions))
        bar.set_postfix_str(speed.add(n_tokens), refresh=False)
    if pending is not None:
        current.store(*pending)
    current.finish()

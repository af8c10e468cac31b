"""``--long window`` in the estimate: the windows and forward passes the run makes over texts longer than the
model, and their time, measured as the run spends it.

The plan is the run's own (``run.loop.blocks`` and ``block_batches``: steps of whole long rows per commit block,
``long_windows.windows_per_pass`` windows a pass, the last pass of a step often part-full). The time comes from
running a few long rows' real windows through ``Runner.windowed``, as the run does (every window of the model's
full length, so attention's cost, quadratic in length, is the windows' and not the short rows'; stitching and
pooling included), in a few samples after a warm-up; the median sample's seconds per window are applied to every
planned window.
"""

from __future__ import annotations

import time

import numpy as np

WINDOW_SAMPLES = 3  # timed samples of long rows, each filling a pass (on a CPU, of CPU_WINDOW_TOKENS at most)
CPU_WINDOW_TOKENS = 2048  # on a CPU the cost per window hardly depends on the windows a pass holds


def planned_passes(plan, tokenized) -> np.ndarray:
    """The windows of each forward pass the run makes over the rows longer than the model, in the run's order
    (block by block, step by step); empty without ``--long window`` or long rows."""
    from ..run.loop import block_batches, blocks
    from ..tokens.long_windows import window_counts, windows_per_pass

    spec = plan.window
    if spec is None:
        return np.zeros(0, dtype=np.int64)
    per_pass = windows_per_pass(plan.max_tokens, plan.batch_size, plan.max_length)
    sizes: list[int] = []
    for start, stop in blocks(plan, tokenized):
        batches, n_collated = block_batches(plan, tokenized, start, stop)
        lengths = tokenized.batch_lengths[start:stop]
        for step in batches[n_collated:]:  # the steps of long rows come after the block's collated batches
            n = int(window_counts(lengths[step], spec.n_lead, spec.n_trail, spec.budget, spec.stride).sum())
            sizes += [per_pass] * (n // per_pass) + ([n % per_pass] if n % per_pass else [])
    return np.asarray(sizes, dtype=np.int64)


def time_windows(plan, runner, tokenized, long_rows: np.ndarray, rng) -> tuple[float, int]:
    """(seconds per window, windows timed): ``WINDOW_SAMPLES`` samples of whole long rows (drawn with ``rng``),
    each filling at least one pass, run as the run runs a step of them, after a warm-up run of the first; the
    median sample counts, so that a moment's load on a shared machine does not make the estimate. Call inside
    ``runner.hooks()``."""
    from ..run.loop import window_group
    from ..tokens.long_windows import window_counts, windows_per_pass

    spec = plan.window
    per_pass = windows_per_pass(plan.max_tokens, plan.batch_size, plan.max_length)
    if runner.device.type == "cpu":  # time fewer windows: the rate per window barely depends on the pass's size
        per_pass = min(per_pass, max(1, CPU_WINDOW_TOKENS // plan.max_length))
    order = rng.permutation(long_rows)
    counts = window_counts(tokenized.batch_lengths[order], spec.n_lead, spec.n_trail, spec.budget, spec.stride)
    samples: list[tuple[np.ndarray, int]] = []
    first = 0
    while first < len(order) and len(samples) < WINDOW_SAMPLES:
        last = first + int(np.searchsorted(np.cumsum(counts[first:]), per_pass)) + 1  # rows filling a pass
        samples.append((order[first:last], int(counts[first:last].sum())))
        first = last
    _run(runner, window_group(plan, tokenized, samples[0][0]))  # warm-up: first-call allocations are not the rate
    seconds = []
    for rows, n_windows in samples:
        started = time.perf_counter()
        _run(runner, window_group(plan, tokenized, rows))
        seconds.append((time.perf_counter() - started) / n_windows)
    return float(np.median(seconds)), sum(n for _, n in samples)


def _run(runner, group) -> None:
    event = runner.windowed(group)[1]
    if event is not None:
        event.synchronize()

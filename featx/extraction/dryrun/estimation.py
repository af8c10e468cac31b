"""``featx extract --dry-run``: what an extraction will cost, before running it.

Everything but the time comes from tokenising the corpus (no forward pass): rows, tokens, truncation,
the size of the features file for the chosen layers/poolings/dtype/token storage, and the peak memory.
The time comes from a short calibration on the chosen device: a few batches drawn from the run's own
batch plan (so with the corpus's own length distribution) are timed after one warm-up batch, and the
measured seconds per padded token are applied to every planned batch; with ``--long window`` the windows of
longer rows are planned and timed as the run runs them (``windows``), apart from the batches. A model too
large to load for an estimate (or a folder with only its config.json) is estimated from its config alone
(``config_estimate``).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from .summary import Estimate, current_rss, file_sizes, human_duration, human_size

CALIBRATION_BATCHES = 3
CPU_CALIBRATION_TOKENS = 2048  # on CPU the rate per token hardly depends on batch size: time small slices


def batch_activation_bytes(
    max_tokens: int, n_model_layers: int, n_layers: int, hidden: int, n_heads: int, longest: int, compute_itemsize: int
) -> int:
    """Memory of one batch's forward pass: every hidden state (output_hidden_states), the stacked copy of
    the chosen layers, the MLP intermediates, and one layer's attention scores (with their softmax)."""
    hidden_states = max_tokens * hidden * compute_itemsize * (n_model_layers + n_layers + 4)
    attention = (max_tokens // max(1, longest)) * n_heads * longest * longest * compute_itemsize * 2
    return int(hidden_states + attention)


class LoadedModels:
    """The model of the last ``estimate``, kept for the next estimate that loads and prepares the very same (a
    study's dry run estimates each model over its corpora one after the other): each model is loaded once, the one
    before it let go first (one model in memory, as a run holds). The estimate that loaded it counts the load's
    seconds (with the imports of a first load, as its run's first extraction pays them); the next ones of that model
    count none, where their runs load it again (what a reload costs, a fraction of a second once its code is
    imported, is not measured). A model that failed to load fails the same way again, without another try."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._loaded: Any = None  # the last model loaded (a LoadedModel)
        self._error: Exception | None = None

    def load(self, config) -> tuple:
        """``(model, seconds)``: ``load_configured(config)``'s model and the seconds it took, loaded now; the last
        call's model and None when it loaded the very same."""
        from ...errors import FeatxError
        from ..fast.select import native_requested
        from ..model import loading

        # What loads it, and what prepares it in place (a Runner packs its linears, keeping the modules its sites'
        # hooks read on those layers, and an intervention's, unfused): a model is kept only for the very same.
        key = (
            config.model, config.device, config.dtype, config.trust_remote_code, config.random_init,
            config.init_seed, config.max_length, config.device_map, native_requested(config), config.sites,
            config.layers, config.intervene,
        )  # fmt: skip
        if key == self._key:
            if self._error is not None:
                raise self._error
            return self._loaded, None
        self._key, self._loaded, self._error = None, None, None
        started = time.perf_counter()
        try:
            loaded = loading.load_configured(config)
        except FeatxError as err:
            self._key, self._error = key, err
            raise
        self._key, self._loaded = key, loaded
        return loaded, time.perf_counter() - started


def estimate(
    config=None, calibrate: bool = True, from_config: bool | None = None, models: LoadedModels | None = None, **options
) -> Estimate:
    """The cost of ``featx.extract(config)`` without running it (the same options, the same plan).

    ``from_config``: estimate from the model's ``config.json`` alone, loading no weights
    (``model_budget``); None (the default) does so when the folder holds no weights or they are large.
    ``models``: a ``LoadedModels`` shared by several estimates, so that each model is loaded once.
    """
    from ..config import make_config
    from ..inputs.word_corpus import read_input
    from ..run.resolve import resolve_plan
    from .from_config import estimate_from_config, from_config_reason, shard_input
    from .windows import planned_passes

    config = make_config(config, **options)
    reason = from_config_reason(config) if from_config is not False else None
    if reason or from_config:
        return estimate_from_config(config, reason or "asked for", calibrate)
    corpus, shard = shard_input(config, read_input(config))  # a table of texts or word inputs; a shard's rows
    loaded, load_seconds = (models or LoadedModels()).load(config)
    setup_started = time.perf_counter()
    plan = resolve_plan(config, corpus.sha256, loaded, shard)
    from ..tokens.word_tokens import tokenize_input

    tokenized = tokenize_input(loaded, corpus, plan)
    setup_seconds = (load_seconds or 0.0) + time.perf_counter() - setup_started  # the run loads and tokenises so
    setup = "model load and tokenising" if load_seconds is not None else "tokenising (the model loaded before)"
    result = _sizes(plan, corpus, tokenized, loaded)
    passes = planned_passes(plan, tokenized)  # --long window: the windows of each pass the run makes
    result.windows, result.window_passes = int(passes.sum()), len(passes)
    if calibrate and len(corpus):
        forward, note = _calibrate(plan, loaded, tokenized, passes)
        result.seconds = forward + setup_seconds
        result.calibration = f"forward passes ~{human_duration(forward)}, {setup} {setup_seconds:.1f} s; {note}"
    return result


def _sizes(plan, corpus, tokenized, loaded) -> Estimate:
    """Sizes and memory of ``plan`` on the tokenised corpus; every site counted, as the writer stores it."""
    from .model_budget import loaded_truncation_notes

    n_tokens, n_rows = int(tokenized.lengths.sum()), len(corpus)
    pooled, token_bytes, other = _file_bytes(plan, corpus, tokenized, loaded, n_rows, n_tokens)
    model_bytes, activations = _device_bytes(plan, loaded, tokenized, n_rows)
    block_bytes = plan.block_bytes(n_rows)
    # The real run holds what this process holds now (model loaded, corpus tokenised), plus one batch's
    # activations (on the GPU when there is one) and up to four commit blocks of outputs (filled, two queued,
    # one being written).
    on_gpu = loaded.device.type != "cpu"
    output = plan.output
    directory = output.parent if output.parent.exists() else Path(".")
    free = shutil.disk_usage(directory).free
    result = Estimate(
        corpus=str(plan.config.corpus),
        output=str(output),
        model=loaded.name,
        device=str(loaded.device),
        rows=n_rows,
        tokens=tokenized.forward_tokens + _window_extra(plan, tokenized),  # both sides of a separate-mode pair,
        # every answer of --contrast, the overlapping windows of --long window
        truncated_rows=int(tokenized.rows_truncated.sum()),
        max_length=loaded.max_length,
        layers=plan.layers,
        poolings=plan.poolings,
        hidden_size=loaded.hidden_size,
        store_dtype=plan.store_dtype,
        with_tokens=plan.with_tokens,
        pooled_bytes=pooled,
        token_bytes=token_bytes,
        other_bytes=other,
        peak_memory_bytes=current_rss() + 4 * block_bytes + (0 if on_gpu else activations),
        free_disk_bytes=free,
        peak_device_bytes=model_bytes + activations if on_gpu else None,
        windowed_rows=int((tokenized.lengths > plan.max_length).sum()) if plan.window else 0,
    )
    result.notes += loaded_truncation_notes(loaded, plan.layers)
    if result.file_bytes > free:
        what = "token-level storage" if plan.with_tokens and token_bytes > pooled else "the output"
        result.warnings.append(
            f"{what} needs ~{human_size(result.file_bytes)} but {directory} has only "
            f"{human_size(free)} free; drop --tokens, choose fewer --layer, or write elsewhere with -o"
        )
    return result


def _window_extra(plan, tokenized) -> int:
    """The tokens ``--long window`` runs beyond the rows' own: their windows overlap (as extract's summary counts)."""
    from ..tokens.long_windows import window_tokens

    spec, lengths = plan.window, tokenized.lengths
    if spec is None:
        return 0
    return int(window_tokens(lengths, plan.max_length, spec.budget, spec.stride).sum() - lengths.sum())


def _file_bytes(plan, corpus, tokenized, loaded, n_rows: int, n_tokens: int) -> tuple[int, int, int]:
    """(pooled, token-level, everything else) bytes of the features file, every site and word vector counted."""
    text_bytes = sum(len(text.encode("utf-8")) for text in corpus.texts)
    id_bytes = sum(len(str(row_id).encode("utf-8")) for row_id in corpus.ids)
    pooled, token_bytes, other = file_sizes(
        n_rows,
        n_tokens,
        len(plan.layers),
        loaded.hidden_size,
        len(plan.poolings),
        plan.itemsize,
        plan.with_tokens,
        text_bytes,
        id_bytes,
        len(corpus.labels),
        corpus.split is not None,
    )
    for site in plan.sites[1:]:  # like hidden: own width and layers, no pooler
        site_pooled, site_tokens, _ = file_sizes(
            n_rows,
            n_tokens,
            len(site.layers),
            site.width,
            len(site.poolings),
            plan.itemsize,
            plan.with_tokens,
            0,
            0,
            0,
            False,
        )
        pooled += site_pooled
        token_bytes += site_tokens - (n_tokens * 8 + (n_rows + 1) * 8 if plan.with_tokens else 0)  # ids: once
    if plan.word_paths:  # word inputs: each word's vectors, and its form, labels, head and subword count
        from ...store import allocated_rows

        n_words = int(tokenized.word_offsets[-1])  # stored in whole chunks, like the pooled rows
        pooled += allocated_rows(n_words, plan.hidden.width, plan.itemsize) * plan.word_bytes()
        other += n_words * (16 + 4 * (len(corpus.words.labels) + 2))
    return pooled, token_bytes, other


def _device_bytes(plan, loaded, tokenized, n_rows: int) -> tuple[int, int]:
    """(the model's weights, one batch's activations) in bytes."""
    import torch

    compute_itemsize = torch.empty((), dtype=loaded.dtype).element_size()
    model_bytes = sum(p.numel() * p.element_size() for p in loaded.model.parameters())
    n_heads = int(getattr(loaded.model.config, "num_attention_heads", 12))
    longest = min(int(tokenized.lengths.max()) if n_rows else 1, plan.max_length)  # windows are no longer
    activations = batch_activation_bytes(
        plan.max_tokens, loaded.n_layers, len(plan.layers), loaded.hidden_size, n_heads, longest, compute_itemsize
    )
    return model_bytes, activations


def _calibrate(plan, loaded, tokenized, passes: np.ndarray) -> tuple[float, str]:
    """Seconds for every planned forward pass, from timing a few of them with the extraction's own runner and
    hooks (sites besides hidden included): the rows that fit the model by seconds per padded token of a few of
    their batches, the windows of longer rows (``--long window``) by seconds per window of a few of those rows
    run as the run runs them (``windows``)."""
    import torch

    from ..forward.runner import Runner
    from ..run.loop import split_batches
    from .windows import time_windows

    # As the run batches them: a separate-mode pair or a --contrast row by its longest sequence.
    batches, long_rows = split_batches(plan, tokenized.batch_lengths)
    runner = Runner(loaded, plan)
    rng = np.random.default_rng(plan.config.init_seed)
    total, notes = 0.0, []
    with runner.hooks():
        if batches:
            seconds, note = _time_batches(plan, runner, tokenized, batches, rng)
            total, notes = total + seconds, [note]
        if len(long_rows):
            per_window, timed = time_windows(plan, runner, tokenized, long_rows, rng)
            total += per_window * float(passes.sum())
            notes.append(f"windows calibrated on {timed:,} of {int(passes.sum()):,}: {per_window:.3g} s a window")
    return total, "; ".join(notes) + f" on {runner.device}, {torch.get_num_threads()} threads"


def _time_batches(plan, runner, tokenized, batches, rng) -> tuple[float, str]:
    """Seconds for every batch of rows that fit the model, from a few of them (seconds per padded token)."""
    from ..tokens.batching import collate

    lengths, pad_id = tokenized.batch_lengths, plan.pad_id
    padded = np.array([len(batch) * int(lengths[batch].max()) for batch in batches], dtype=np.float64)
    picks = rng.choice(len(batches), size=min(len(batches), CALIBRATION_BATCHES), replace=False)
    timed = {}
    for index in picks:
        batch = batches[int(index)]
        if runner.device.type == "cpu":  # rows of one batch share its padded width: keep a slice of them
            width = int(lengths[batch].max())
            batch = batch[: max(1, CPU_CALIBRATION_TOKENS // width)]
        timed[int(index)] = batch
    timed_tokens = sum(len(batch) * int(lengths[batch].max()) for batch in timed.values())

    def run(index):
        event = runner(*collate(tokenized, timed[index], pad_id))[1]  # sentence pairs add a third item
        if event is not None:
            event.synchronize()

    elapsed = 0.0
    for index in picks:
        run(int(index))  # warm-up per shape: first-call allocations and kernel selection are not the rate
        started = time.perf_counter()
        run(int(index))
        elapsed += time.perf_counter() - started
    note = (
        f"calibrated on {len(picks)} of {len(batches)} batches ({timed_tokens:,} padded tokens): "
        f"{timed_tokens / elapsed:,.0f} padded tokens/s"
    )
    return float(elapsed / timed_tokens * padded.sum()), note

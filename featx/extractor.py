"""``featx extract``: one batched forward pass over a corpus, every layer pooled, streamed to HDF5."""

from __future__ import annotations

import copy
import fcntl
import json
import os
import queue
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from . import __version__, sharding
from .batching import collate, plan_batches, plan_windows
from .corpus import Corpus, read_corpus
from .errors import FeatxError, InputError, Interrupted, StoreError
from .extract_config import ExtractConfig, ExtractSummary, make_config, output_path, summary_of
from .freshness import request_key
from .modeling import LoadedModel, dtype_name, load_model
from .onednn import prepack_linears
from .pooling import POOLING_FUNCTIONS, make_pooler_pool
from .selection import POOLINGS, parse_poolings, select_layers
from .sites import HIDDEN, Site, SiteRecorder, measure_widths, parse_sites, resolve_sites
from .state import remember
from .store import FeatureFile, FeatureWriter, partial_path, resumable, site_pooled_path, site_tokens_path
from .tokenize import TokenizedCorpus, tokenize_texts

WINDOW_BYTES = 256 << 20  # host memory for one commit window of outputs
STORE_DTYPES = {"float16": np.float16, "fp16": np.float16, "float32": np.float32, "fp32": np.float32}



def _check_output_dir(output: Path) -> None:
    directory = output.parent
    if not directory.exists():
        raise InputError(f"output directory {directory} does not exist", "create it first, or choose another path with -o")
    if not directory.is_dir():
        raise InputError(f"output directory {directory} is not a directory", "choose another path with -o OUT.h5")
    # Try it: os.access says "writable" to root even on read-only mounts.
    try:
        with tempfile.TemporaryFile(dir=directory, prefix=".featx-write-test-"):
            pass
    except OSError as err:
        raise InputError(f"output directory {directory} is not writable ({err.strerror or err})",
                         "choose a writable location with -o OUT.h5") from None


class OutputLock:
    """An exclusive lock on ``<output>.lock`` so that two runs never write the same file."""

    def __init__(self, output: Path):
        self.path = output.with_name(output.name + ".lock")
        self.handle = None

    def __enter__(self) -> "OutputLock":
        try:
            while True:
                self.handle = open(self.path, "a+")
                try:
                    fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self.handle.seek(0)
                    holder = self.handle.read().strip() or "another process"
                    self.handle.close()
                    raise StoreError(
                        f"another featx extract ({holder}) is writing {self.path.name[:-5]} right now",
                        "wait for it to finish, or choose another output with -o",
                    ) from None
                # The holder unlinks the file when done: a lock taken on an unlinked file locks nothing.
                try:
                    if os.stat(self.path).st_ino == os.fstat(self.handle.fileno()).st_ino:
                        break
                except FileNotFoundError:
                    pass
                self.handle.close()
            self.handle.seek(0)
            self.handle.truncate()
            self.handle.write(f"pid {os.getpid()}")
            self.handle.flush()
        except BaseException:  # Ctrl-C while taking the lock: release what was taken
            if self.handle is not None and not self.handle.closed:
                self.handle.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def _fingerprint(config: ExtractConfig, corpus: Corpus, loaded: LoadedModel, layers, poolings, max_tokens,
                 sites: list[Site] | None = None) -> str:
    """What the file's contents depend on; resuming or reusing requires an exact match."""
    extra_sites = [site.name for site in sites or [] if site.name != HIDDEN]
    # Only named when there are sites besides hidden, so files from before sites keep their fingerprint.
    return json.dumps({**({"sites": extra_sites} if extra_sites else {}),
        "corpus_sha256": corpus.sha256, "text_col": config.text_col, "id_col": config.id_col,
        "skip_empty": config.skip_empty, "model_sha256": loaded.weights_sha256, "random_init": config.random_init,
        "seed": config.seed if config.random_init else None, "max_length": loaded.max_length,
        "layers": layers, "poolings": poolings, "tokens": config.tokens, "store_dtype": config.store_dtype,
        "compute_dtype": dtype_name(loaded.dtype), "device_type": loaded.device.type,
        "max_tokens": max_tokens, "batch_size": config.batch_size, "commit_rows": config.commit_rows,
    }, sort_keys=True)


def _resolve_poolings(spec: str, loaded: LoadedModel) -> list[str]:
    explicit = spec is not None and spec.strip().lower() != "all"
    poolings = parse_poolings(spec, POOLINGS)
    if "pooler" in poolings and not loaded.has_pooler:
        if explicit:
            raise InputError(f"pooling 'pooler' is not available: model {loaded.name} has no pooler head",
                             "choose from cls, mean, max, last")
        poolings.remove("pooler")
    return poolings


class _Writer:
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
            start, stop, pooled, token_states, site_values = item
            try:
                self.writer.write_window(start, stop, pooled, token_states, site_values)
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


def _prefetch(iterable, depth: int = 2):
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


class _Runner:
    """Forward pass plus on-device pooling for one batch."""

    def __init__(self, loaded: LoadedModel, layers: list[int], poolings: list[str], with_tokens: bool,
                 store_dtype: np.dtype):
        self.model = loaded.model
        self.device = loaded.device
        pooler, pooler_dtype = getattr(self.model, "pooler", None), None
        if pooler is not None and loaded.dtype in (torch.bfloat16, torch.float16):
            # At the middle layers the pooler's tanh saturates and the information sits in 1 - tanh(z),
            # which bf16 cannot hold (its spacing below 1 is 2^-8): probes of bf16 pooler features lost
            # 1.5-2.9 points there. The head is one small matrix product per row: run it in float32.
            pooler, pooler_dtype = copy.deepcopy(pooler).float(), torch.float32
        self.packed_linears = prepack_linears(self.model, self.device, loaded.dtype)
        self.layers = layers
        self.with_tokens = with_tokens
        self.torch_store_dtype = torch.float16 if store_dtype == np.float16 else torch.float32
        self.functions = {}
        for name in poolings:
            self.functions[name] = (make_pooler_pool(pooler, pooler_dtype) if name == "pooler"
                                    else POOLING_FUNCTIONS[name])
        self.recorder: SiteRecorder | None = None  # set while sites other than hidden are hooked
        tokenizer = loaded.tokenizer
        self.special_ids = (tokenizer.cls_token_id, tokenizer.sep_token_id)

    @torch.inference_mode()
    def __call__(self, input_ids: torch.Tensor, mask: torch.Tensor):
        input_ids = input_ids.to(self.device, non_blocking=True)
        mask = mask.to(self.device, non_blocking=True)
        forward_options = self.recorder.forward_options if self.recorder is not None else {}
        output = self.model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True, **forward_options)
        selected = [output.hidden_states[layer] for layer in self.layers]  # L x (B, T, H)
        # Pool layer by layer: stacking all layers first would copy every hidden state once more.
        pooled = {name: torch.stack([fn(states, mask) for states in selected], dim=1).to(self.torch_store_dtype)
                  for name, fn in self.functions.items()}  # (B, L, H) each
        token_states = None
        if self.with_tokens:
            real = mask.bool()
            token_states = torch.stack([states[real] for states in selected], dim=1)  # (real tokens, L, H)
            token_states = token_states.to(self.torch_store_dtype)
        pooled = {name: value.to("cpu", non_blocking=True) for name, value in pooled.items()}
        if token_states is not None:
            token_states = token_states.to("cpu", non_blocking=True)
        site_values = self._site_values(output, input_ids, mask)
        if self.device.type == "cuda":
            event = torch.cuda.Event()
            event.record()
        else:
            event = None
        return pooled, token_states, event, site_values

    def _site_values(self, output, input_ids: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Sites besides hidden, pooled with the same functions: ``{dataset path: (B, L_site, W) or (tokens, L_site, W)}``."""
        if self.recorder is None:
            return {}
        values = {}
        real = mask.bool() if self.with_tokens else None
        for site, tensors in self.recorder.take(output, input_ids, mask, self.special_ids).items():
            for name, fn in self.functions.items():
                if name == "pooler":  # the pooler head reads hidden states only
                    continue
                pooled = torch.stack([fn(states, mask) for states in tensors], dim=1)
                values[site_pooled_path(site, name)] = pooled.to(self.torch_store_dtype).to("cpu", non_blocking=True)
            if real is not None:
                states = torch.stack([states[real] for states in tensors], dim=1).to(self.torch_store_dtype)
                values[site_tokens_path(site)] = states.to("cpu", non_blocking=True)
        return values


def extract(config: ExtractConfig | None = None, **options) -> ExtractSummary:
    """Run an extraction (``featx.extract("corpus.csv", model=..., ...)`` or with an ``ExtractConfig``)."""
    config = make_config(config, **options)
    launch = sharding.LaunchEnv.detect()
    if launch is not None and config.shards is None and config.shard_index is None:
        return sharding.extract_distributed(config, launch)  # torchrun: this rank's shard, then the merge
    started = time.perf_counter()
    output = output_path(config)
    store_dtype = STORE_DTYPES.get(str(config.store_dtype).lower())
    if store_dtype is None:
        raise InputError(f"--store-dtype '{config.store_dtype}' is not understood", "use float16 or float32")
    config.store_dtype = np.dtype(store_dtype).name
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise InputError(f"output {output} should end in .h5", "features files are HDF5; name them like out.h5")
    _check_output_dir(output)
    corpus = read_corpus(config.corpus, config.text_col, config.id_col, config.skip_empty, config.encoding)
    # Sharded run: from here on, `output` is this shard's file and `corpus` its rows.
    shard = sharding.ShardSpec.from_options(config.shards, config.shard_index)
    if shard is not None:
        merged_output, output, corpus_rows = output, shard.path(output), len(corpus)
        corpus, shard_rows = sharding.select_rows(corpus, shard)

    with OutputLock(output):
        timings = {"load_seconds": time.perf_counter()}
        loaded = load_model(config.model, config.device, config.dtype, config.trust_remote_code,
                            config.random_init, config.seed, config.max_length)
        layers = select_layers(config.layers, loaded.n_layers)
        poolings = _resolve_poolings(config.poolings, loaded)
        sites = resolve_sites(loaded.model, parse_sites(config.sites), layers, loaded.n_layers - 1)
        max_tokens = config.max_tokens or (65536 if loaded.device.type == "cuda" else 8192)
        if max_tokens < loaded.max_length:
            max_tokens = loaded.max_length
        fingerprint = _fingerprint(config, corpus, loaded, layers, poolings, max_tokens, sites)
        if shard is not None:
            base_fingerprint, fingerprint = fingerprint, shard.fingerprint(fingerprint)
            if merged_output.exists() and not config.overwrite:  # merged already: nothing to do
                _check_existing(merged_output, base_fingerprint)
                return summary_of(merged_output, "up-to-date", time.perf_counter() - started, len(corpus.skipped_rows))
            sharding.write_manifest(merged_output, sharding.make_manifest(
                merged_output, shard.count, corpus, corpus_rows, loaded.weights_sha256, base_fingerprint),
                config.overwrite)

        if output.exists() and not config.overwrite:
            _check_existing(output, fingerprint)
            remember("features", output)
            return summary_of(output, "up-to-date", time.perf_counter() - started, len(corpus.skipped_rows))

        timings["load_seconds"] = time.perf_counter() - timings["load_seconds"]
        timings["tokenize_seconds"] = time.perf_counter()
        tokenized = tokenize_texts(loaded.tokenizer, corpus.texts, loaded.max_length, with_word_ids=config.tokens)
        timings["tokenize_seconds"] = time.perf_counter() - timings["tokenize_seconds"]
        measure_widths(loaded.model, sites, loaded.device, (loaded.tokenizer.cls_token_id, loaded.tokenizer.sep_token_id),
                       loaded.hidden_size)
        writer = _open_writer(config, output, corpus, tokenized, loaded, layers, poolings, store_dtype, fingerprint,
                              sites)
        resumed_from = writer.rows_done
        if shard is not None:
            sharding.annotate_shard(writer.file, shard, shard_rows, base_fingerprint, corpus_rows)
        try:
            timings["forward_seconds"] = time.perf_counter()
            _run(config, writer, tokenized, loaded, layers, poolings, store_dtype, max_tokens, sites)
            timings["forward_seconds"] = time.perf_counter() - timings["forward_seconds"]
            final = writer.finish()
        except KeyboardInterrupt:
            done = writer.rows_done
            writer.close()
            raise Interrupted(
                f"interrupted: {done} of {len(corpus)} rows are saved in {partial_path(output)}",
                "run the same featx extract command again to resume where it stopped",
            ) from None
        except OSError as err:
            done = writer.rows_done
            writer.close()
            raise StoreError(
                f"writing {partial_path(output)} failed ({err.strerror or err}); {done} of {len(corpus)} rows are saved",
                "free disk space (or fix the problem) and run the same command again to resume",
            ) from None
        except BaseException:
            writer.close()
            raise
    if shard is None:
        remember("features", final)
    status = "resumed" if resumed_from else "written"
    summary = summary_of(final, status, time.perf_counter() - started, len(corpus.skipped_rows))
    summary.resumed_from = resumed_from
    if shard is not None and launch is None:
        summary.notes.append(f"shard {shard.index} of {shard.count} done; when all are done: featx merge {merged_output}")
    for name, seconds in timings.items():
        setattr(summary, name, seconds)
    return summary


def _check_existing(output: Path, fingerprint: str) -> None:
    try:
        with FeatureFile(output) as existing:
            same = existing.attrs.get("fingerprint") == fingerprint
    except FeatxError as err:
        raise StoreError(f"{output} already exists and cannot be used: {err.message}",
                         "pass --overwrite to replace it, or choose another output with -o") from None
    if not same:
        raise StoreError(
            f"{output} already exists and was made from a different corpus, model or options",
            "pass --overwrite to replace it, or choose another output with -o",
        )


def _open_writer(config, output, corpus, tokenized, loaded, layers, poolings, store_dtype, fingerprint,
                 sites: list[Site] | None = None) -> FeatureWriter:
    partial = partial_path(output)
    # An unfinished file made by this very command is always resumed (--overwrite included: it is
    # what the command would write anyway). One that cannot be reopened holds nothing usable.
    if resumable(output):
        writer = FeatureWriter.resume(output)
        if writer.attrs.get("fingerprint") == fingerprint:
            return writer
        writer.close()
        if not config.overwrite:
            raise StoreError(
                f"{partial} holds an unfinished extraction with a different corpus, model or options",
                "run the original command to resume it, or pass --overwrite to start over",
            )
    attrs = {
        "featx_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "model": loaded.name,
        "model_path": loaded.path,
        "model_sha256": loaded.weights_sha256,
        "model_type": getattr(loaded.model.config, "model_type", ""),
        "random_init": bool(config.random_init),
        "tokenizer": type(loaded.tokenizer).__name__,
        "max_length": loaded.max_length,
        "compute_dtype": dtype_name(loaded.dtype),
        "device": str(loaded.device),
        "corpus_path": str(Path(config.corpus).resolve()),
        "corpus_sha256": corpus.sha256,
        "text_col": corpus.text_col,
        "id_col": corpus.id_col or "",
        "skipped_empty_rows": json.dumps(corpus.skipped_rows),
        "n_model_layers": loaded.n_layers,
        "fingerprint": fingerprint,
        "request_key": request_key(config, corpus.sha256) or "",  # for the quick check (freshness.py)
        "options": json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()}),
    }
    site_poolings = [name for name in poolings if name != "pooler"]
    stored_sites = {site.name: {**site.describe(), "poolings": site_poolings}
                    for site in sites or [] if site.name != HIDDEN}
    return FeatureWriter.create(output, attrs, corpus, tokenized, layers, poolings, loaded.hidden_size,
                                store_dtype, config.tokens, stored_sites)


def _run(config, writer: FeatureWriter, tokenized: TokenizedCorpus, loaded: LoadedModel, layers, poolings,
         store_dtype, max_tokens, sites: list[Site] | None = None) -> None:
    from tqdm.auto import tqdm

    n_rows = len(tokenized)
    itemsize = np.dtype(store_dtype).itemsize
    extra_sites = [site for site in sites or [] if site.name != HIDDEN]
    site_poolings = [name for name in poolings if name != "pooler"]
    site_token_width = sum(len(site.layers) * site.width for site in extra_sites)  # per token, all extra sites
    row_bytes = (len(layers) * loaded.hidden_size * len(poolings) + site_token_width * len(site_poolings)) * itemsize
    rows_per_window = config.commit_rows or int(max(64, min(8192, WINDOW_BYTES // max(1, row_bytes))))
    lengths = tokenized.lengths
    token_bytes = (len(layers) * loaded.hidden_size + site_token_width) * itemsize
    windows = plan_windows(n_rows, rows_per_window, lengths if config.tokens else None,
                           WINDOW_BYTES / token_bytes if config.tokens else None)
    start_row = writer.rows_done
    pad_id = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    pin = loaded.device.type == "cuda"
    runner = _Runner(loaded, layers, poolings, config.tokens, store_dtype)
    background = _Writer(writer)
    bar = tqdm(total=n_rows, initial=start_row, unit="rows", disable=not config.progress, dynamic_ncols=True,
               desc="extract")
    # Hooks go on after the runner has set the model up, and come off however the loop ends.
    recorder = SiteRecorder(loaded.model, extra_sites)
    if extra_sites:
        runner.recorder = recorder.__enter__()
    tokens_done, began = 0, time.perf_counter()
    try:
        for start, stop in windows:
            if stop <= start_row:
                continue
            window_lengths = lengths[start:stop]
            batches = plan_batches(window_lengths, max_tokens, config.batch_size)
            pooled_out = {name: np.empty((stop - start, len(layers), loaded.hidden_size), dtype=store_dtype)
                          for name in poolings}
            token_out = None
            token_base = int(tokenized.offsets[start])
            if config.tokens:
                token_out = np.empty((int(tokenized.offsets[stop]) - token_base, len(layers), loaded.hidden_size),
                                     dtype=store_dtype)
            site_out = _site_buffers(extra_sites, site_poolings, stop - start,
                                     int(tokenized.offsets[stop]) - token_base if config.tokens else None, store_dtype)

            def batches_of_window(batches=batches, start=start):
                for positions in batches:
                    yield positions, collate(tokenized, positions + start, pad_id, pin_memory=pin)

            pending = None
            for positions, (input_ids, mask) in _prefetch(batches_of_window()):
                result = (positions, runner(input_ids, mask))
                if pending is not None:  # consume the previous batch while this one runs on the GPU
                    _store_batch(pending, pooled_out, token_out, tokenized, start, token_base, site_out)
                pending = result
                tokens_done += int(mask.sum())
                bar.update(len(positions))
                elapsed = time.perf_counter() - began
                bar.set_postfix_str(f"{tokens_done / max(elapsed, 1e-9):,.0f} tok/s", refresh=False)
            if pending is not None:
                _store_batch(pending, pooled_out, token_out, tokenized, start, token_base, site_out)
            site_rows = {path: values for path, values in site_out.items() if not path.endswith("tokens/states")}
            _check_finite({**pooled_out, **site_rows}, token_out, start, config.store_dtype)
            for path, values in site_out.items():
                if path not in site_rows:
                    _check_finite({}, values, start, config.store_dtype)
            background.submit((start, stop, pooled_out, token_out, site_out))
    finally:
        bar.close()
        background.close()
        recorder.__exit__(None, None, None)
    background.raise_if_failed()


def _site_buffers(sites: list[Site], poolings: list[str], n_rows: int, n_tokens: int | None, store_dtype) -> dict:
    """One window's host buffers for the sites besides hidden, by dataset path."""
    buffers = {}
    for site in sites:
        for name in poolings:
            buffers[site_pooled_path(site.name, name)] = np.empty((n_rows, len(site.layers), site.width), store_dtype)
        if n_tokens is not None:
            buffers[site_tokens_path(site.name)] = np.empty((n_tokens, len(site.layers), site.width), store_dtype)
    return buffers


def _store_batch(pending, pooled_out, token_out, tokenized: TokenizedCorpus, start: int, token_base: int,
                 site_out: dict | None = None) -> None:
    positions, (pooled, token_states, event, site_values) = pending
    if event is not None:
        event.synchronize()
    for name, values in pooled.items():
        pooled_out[name][positions] = values.numpy()
    if token_states is not None:
        _scatter_tokens(token_states.numpy(), token_out, positions, tokenized, start, token_base)
    for path, values in site_values.items():
        if path.endswith("tokens/states"):
            _scatter_tokens(values.numpy(), site_out[path], positions, tokenized, start, token_base)
        else:
            site_out[path][positions] = values.numpy()


def _scatter_tokens(flat: np.ndarray, token_out: np.ndarray, positions, tokenized: TokenizedCorpus, start: int,
                    token_base: int) -> None:
    """A batch's real tokens (in batch order) into the window's token buffer (in corpus order)."""
    cursor = 0
    for position in positions:
        row = start + int(position)
        first, last = int(tokenized.offsets[row]) - token_base, int(tokenized.offsets[row + 1]) - token_base
        token_out[first:last] = flat[cursor : cursor + last - first]
        cursor += last - first


def _check_finite(pooled_out: dict, token_out, start: int, store_dtype: str) -> None:
    for name, values in pooled_out.items():
        finite = np.isfinite(values).all(axis=(1, 2))
        if not finite.all():
            row = start + int(np.argmin(finite))
            raise StoreError(
                f"'{name}' features of row {row} are inf or NaN after casting to {store_dtype}",
                "values beyond float16's range (±65504)? re-run with --store-dtype float32 --overwrite; "
                "with --dtype float16, try --dtype float32 or bfloat16",
            )
    if token_out is not None and not np.isfinite(token_out).all():
        raise StoreError(f"token-level states in the window from row {start} are inf or NaN after casting",
                         "re-run with --store-dtype float32 --overwrite")



"""What the probing tasks share: the input checks (corpus, sites, baseline file), the sentence-level jobs
and how their features are loaded, and where and how many side by side the jobs run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import store
from ..errors import InputError
from ..options import on_command_line, spoken_value
from ..safe_files import loads_json
from ..selection import LayerSpec, parse_layer_specs
from ..store import FeatureFile
from . import evaluation as ev
from .config import ProbeConfig
from .tasks.pairs import pooled_block

ALL_SITES = "all"  # --site all: every site the features file stores
TOKENS_POOLING = "tokens"  # the pooling column of attn rows: the probe pools the token states itself


def check_corpus(features: FeatureFile, notes: list[str]) -> None:
    """Warn (not fail) when the corpus file changed since extraction: the stored labels may be outdated."""
    from ..extraction import combined_sha256, file_sha256

    corpus_path, recorded = features.attrs.get(store.schema.CORPUS_PATH), features.attrs.get(store.schema.CORPUS_SHA256)
    if not corpus_path or not recorded:
        return
    # Several word input files were extracted together: their digest is over all of them (word_corpus.py).
    try:
        if not Path(corpus_path).is_file():  # OSError: a recorded path no file can have (too long, say)
            return
        more = loads_json(features.attrs.get(store.schema.OPTIONS) or "{}").get("more_corpora") or []
        current = combined_sha256([file_sha256(Path(path)) for path in [corpus_path, *more]])
    except (OSError, ValueError, TypeError, AttributeError):  # unreadable files or a foreign options record
        return
    if current != recorded:
        notes.append(
            f"warning: {corpus_path} changed since {features.path.name} was extracted; "
            "the stored labels may not match it (re-extract with --overwrite to refresh)"
        )


def check_outputs(features: FeatureFile, config: ProbeConfig) -> None:
    """Before any probe runs: ``-o PREFIX`` names none of the files the run reads (the features file, the
    corpus it was extracted from, read for its digest, the ``--labels`` and ``--baseline`` files)."""
    if config.output is None:
        return
    from ..safe_files import refuse_inputs
    from .results import check_prefix, results_paths, side_path

    csv_path, json_path = results_paths(features.path, "", config.output)
    check_prefix(config.output, csv_path)
    outputs = [csv_path, json_path, side_path(csv_path, "predictions"), side_path(csv_path, "curve")]
    refuse_inputs(outputs, [*read_files(features), config.labels, config.baseline])


def read_files(features: FeatureFile) -> list[Path]:
    """The user's files a run on ``features`` reads, which no output may replace: the features file, and the
    corpus it was extracted from when that is still there (read for its digest)."""
    corpus = features.attrs.get(store.schema.CORPUS_PATH)
    return [features.path, *([Path(str(corpus))] if corpus else [])]


def note_derived(features: FeatureFile, label: str | None, notes: list[str]) -> None:
    """Say what a derived file's features are (``featx erase``'s erased ones), and warn where its eraser was
    fitted on every labelled row, this probe's test rows included, while it probes the erased label itself:
    the score after the erasure is then not a held-out one (``featx erase``'s own table is)."""
    record = store.derived_record(features.attrs)
    if record is None:
        return
    erased, fit_rows = record.get("label"), record.get("fit_rows")
    rows = "the train split" if fit_rows == "train split" else str(fit_rows)
    what = f"features erased of label '{erased}' ({record.get('method')}, its eraser fitted on {rows})"
    if record.get("kind") != "erasure" or not isinstance(erased, str):
        notes.append(f"{features.path.name} holds {record.get('kind')} features made from another features file")
    elif fit_rows == "all labelled rows" and label == erased:
        notes.append(
            f"warning: {features.path.name} holds {what}: the eraser saw this probe's test rows and their labels, "
            "so these scores after the erasure are not held-out ones; featx erase's before/after table fits an "
            "eraser on each fold's training rows"
        )
    else:
        notes.append(f"{features.path.name} holds {what}")


def note_prompted(features: FeatureFile, label: str | None, notes: list[str]) -> None:
    """Warn, as ``featx extract`` did, when the file's ``--template`` (its root attribute, else its recorded
    options') writes the probed label column into every prompt (``extraction.prompted_label_note``): its score
    would read as a finding."""
    from ..extraction import prompted_label_note

    try:
        options = loads_json(features.attrs.get(store.schema.OPTIONS) or "{}")
        template = features.attrs.get(store.schema.TEMPLATE) or options.get("template")
    except (ValueError, TypeError, AttributeError):  # a foreign options record: nothing to say
        return
    text_col = str(features.attrs.get(store.schema.TEXT_COL) or "text")
    note = prompted_label_note(template, text_col, label) if isinstance(template, str) and label else None
    if note is not None:
        notes.append(f"warning: {note}")


def stored_sites(features: FeatureFile, sites: list[str]) -> list[str]:
    """The sites a probe reads: those named, or every stored one for ``all`` (``--site all``)."""
    return list(features.sites) if ALL_SITES in sites else sites


def site_plan(
    features: FeatureFile, config: ProbeConfig, specs: list[LayerSpec], poolings: list[str], notes: list[str]
) -> dict[str, tuple[list[LayerSpec], list[str]]]:
    """Per requested site: its layer specs (resolved against the layers it has) and poolings."""
    plan = {}
    for site in stored_sites(features, config.site_list()):
        if site not in features.sites:
            raise InputError(
                f"site '{site}' is not stored in {features.path}; stored sites: {', '.join(features.sites)}",
                f"re-extract with featx extract --site {site} (plus the sites you need) --overwrite"
                if on_command_line()  # from Python: the call, not 'featx extract sites foo --overwrite'
                else f"re-extract with featx.extract(..., sites={site!r}, overwrite=True), plus the sites you need",
            )
        if site == "hidden":
            plan[site] = (specs, poolings)
            continue
        try:
            site_specs = parse_layer_specs(config.layers, features.site_layers(site), config=config)
        except InputError as err:
            raise InputError(f"site '{site}' (layers {features.site_layers(site)}): {err.message}", err.hint) from None
        stored = features.site_poolings(site)
        plan[site] = (site_specs, [pooling for pooling in poolings if pooling in stored])
        if len(plan[site][1]) < len(poolings):
            notes.append(
                f"site '{site}' has no {', '.join(p for p in poolings if p not in stored)} pooling; "
                "those rows are probed for hidden only"
            )
    return plan


@dataclass
class FeatureJob:
    """One sentence-level probing job: the classifiers fitted on one source, site, layer spec and pooling."""

    features: str  # "main" or "baseline"
    path: str
    spec: LayerSpec
    pooling: str
    classifiers: list[str]
    site: str = "hidden"

    def columns(self, classifier: str, label: str, task: str, evaluation: str) -> dict:
        """The identity columns of this job's results row for ``classifier`` (the results CSV's first ones)."""
        return {
            "features": self.features,
            "site": self.site,
            "label": label,
            "task": task,
            "layer_spec": self.spec.name,
            "kind": self.spec.kind,
            "layer": self.spec.layers[0] if self.spec.kind == "single" else None,
            "layers": ",".join(map(str, self.spec.layers)),
            "pooling": self.pooling,
            "classifier": classifier,
            "evaluation": evaluation,
        }


def load_job_features(job: FeatureJob, kept: np.ndarray, allow_partial: bool) -> Any:
    """The features of ``job`` for the ``kept`` rows: one matrix (single or concatenated layers), one matrix
    per layer (stack), or the token states in batches (``tokens`` pooling, the attention probe)."""
    with FeatureFile(job.path, allow_partial=allow_partial) as features:
        if job.pooling == TOKENS_POOLING:
            offsets = features.token_offsets
            starts, lengths = offsets[:-1][kept], np.diff(offsets)[kept]
            states = np.concatenate([features.token_states(layer, site=job.site) for layer in job.spec.layers], axis=1)
            return ev.TokenBatches(states, starts, lengths)
        blocks = [pooled_block(features, job.pooling, layer, job.site)[kept] for layer in job.spec.layers]
    if job.spec.kind == "stack":
        return blocks
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)


def job_workers(requested: int | None, n_jobs: int) -> int:
    """Worker processes for ``n_jobs`` jobs: ``--jobs`` (None or negative: one per core), at most one per job."""
    import joblib

    wanted = joblib.cpu_count() if requested is None or int(requested) < 0 else int(requested)
    return max(1, min(wanted, n_jobs))


class DeviceFreeJob:
    """A job (the first item of its arguments) that never uses the solver's device: CPU work, such as the
    lexical baseline. When a run's jobs take turns on a GPU, these run meanwhile in a process of their own."""

    def prepare(self) -> None:
        """What the job's arguments need done once in the run's process before they travel to a worker (the
        lexical baseline's n-gram counts, shared by its folds); ``run_jobs`` calls it while the workers start."""


def _device_free(job: tuple[Any, ...]) -> bool:
    return bool(job) and isinstance(job[0], DeviceFreeJob)


def _prepare(jobs: list[tuple[Any, ...]]) -> None:
    for job in jobs:
        if _device_free(job):
            job[0].prepare()


# How many jobs per worker joblib hands out at once (its ``pre_dispatch``), the rest as results come back.
AHEAD = 2


def _in_workers(
    function: Callable[..., Any],
    arguments: list[tuple[Any, ...]],
    workers: int,
    jobs: list[tuple[Any, ...]],
    done: Callable[[], None] | None = None,
) -> list[Any]:
    """``function(*args)`` for each of ``arguments`` (those of ``jobs``, perhaps wrapped) in ``workers`` processes
    (joblib's loky pool), outputs in the jobs' order. The ``DeviceFreeJob`` ones are prepared in a thread of
    this process (``DeviceFreeJob.prepare``: the lexical baseline's n-gram counts, 2 s on 10,000 texts) while
    the first ``AHEAD`` jobs per worker that need no preparing go out: the workers start, import the probing code
    (about 1.3 s each) and run those meanwhile; the prepared jobs go out next, then the rest in order."""
    from joblib import Parallel, delayed

    ready = [index for index, job in enumerate(jobs) if not _device_free(job)][: AHEAD * workers]
    first = set(ready)
    order = ready + [index for index in range(len(jobs)) if index not in first]
    prepared = _Background(_prepare, jobs)

    def queue():
        for index in order:
            if _device_free(jobs[index]):
                prepared.wait()  # its error, if any, ends the run here
            yield delayed(function)(*arguments[index])

    outputs: list[Any] = [None] * len(jobs)
    parallel = Parallel(n_jobs=workers, pre_dispatch=f"{AHEAD} * n_jobs", return_as="generator")
    for index, output in zip(order, parallel(queue()), strict=True):
        outputs[index] = output
        if done is not None:
            done()
    return outputs


class _Background:
    """``work(*args)`` in a daemon thread: a Ctrl-C of the run never waits for it (as a pool's thread would be
    waited for at exit). ``wait`` returns once it is done, or raises its error."""

    def __init__(self, work: Callable[..., Any], *args: Any):
        import threading

        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work, args), name="featx-prepare", daemon=True)
        self._thread.start()

    def _run(self, work: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            work(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            self._error = error

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


def run_jobs(
    function: Callable[..., Any],
    jobs: list[tuple[Any, ...]],
    workers: int,
    device: str | None = None,
    done: Callable[[], None] | None = None,
) -> list[Any]:
    """``function(*job)`` for every job, in order: side by side in ``workers`` processes when more than one.
    With ``device``, each job solves its logistic probes there (``devices.solver_device``); when its jobs take
    turns there (one worker), the ``DeviceFreeJob`` ones run meanwhile in one process of their own. Each
    ``DeviceFreeJob`` is prepared once in this process before it goes out (``DeviceFreeJob.prepare``).
    ``done`` (a progress bar's step) is called as each job's output comes back (at the end, beside a device)."""
    if workers > 1:
        if device is not None:
            return _in_workers(_on_device, [(device, function, job) for job in jobs], workers, jobs, done)
        return _in_workers(function, jobs, workers, jobs, done)
    _prepare(jobs)
    if device is not None and any(_device_free(job) for job in jobs):
        outputs = _beside_device(function, jobs, device)
        if done is not None:
            for _ in outputs:
                done()
        return outputs
    if device is not None:
        function, jobs = _on_device, [(device, function, job) for job in jobs]
    outputs = []
    for job in jobs:
        outputs.append(function(*job))
        if done is not None:
            done()
    return outputs


def _beside_device(function: Callable[..., Any], jobs: list[tuple[Any, ...]], device: str) -> list[Any]:
    """The device-free jobs in a process of their own (spawned: a fresh interpreter, never a fork of one holding a
    CUDA context) while the others take turns on ``device`` here; outputs in the jobs' order."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as executor:
        futures = {index: executor.submit(function, *job) for index, job in enumerate(jobs) if _device_free(job)}
        here = iter(run_jobs(function, [job for index, job in enumerate(jobs) if index not in futures], 1, device))
        return [futures[index].result() if index in futures else next(here) for index in range(len(jobs))]


def _on_device(device: str, function: Callable[..., Any], job: tuple[Any, ...]) -> Any:
    from .solvers.devices import solver_device

    with solver_device(device):
        return function(*job)


# One BLAS/torch thread per worker: probes are small matrix products, where extra threads mostly spin
# (badly so on a shared machine); the parallelism comes from running jobs side by side.
JOB_THREADS = 1


def solver_plan(config: ProbeConfig, n_jobs: int, notes: list[str], solves: bool) -> tuple[str | None, int]:
    """Where this run solves its logistic probes (None: numpy on the CPU; only resolved when it ``solves``
    any) and how many worker processes run its ``n_jobs`` jobs. On a GPU the jobs take turns unless
    ``--jobs`` is given: each worker would hold its own CUDA context, all contending for one GPU."""
    from .solvers.devices import resolve_device

    device = resolve_device(config.device) if solves else None
    workers = job_workers(config.jobs, n_jobs)
    if device is not None and device.startswith("cuda") and config.jobs is None and workers > 1:
        notes.append(f"logreg probes are solved on {device}: one job at a time (--jobs N runs N side by side)")
        workers = 1
    return device, workers


def open_probed(path: str | Path, config: ProbeConfig) -> FeatureFile:
    """The features file a probe reads, an unfinished one's rows written so far with ``--allow-partial``; refused
    without it, the store's hint (run the extraction again) joined by that option, which only the probe has."""
    from ..errors import IncompleteError

    try:
        return FeatureFile(Path(path), allow_partial=bool(config.allow_partial))
    except IncompleteError as err:
        given = spoken_value(config, "allow_partial", True)
        raise IncompleteError(err.message, f"{err.hint}, or pass {given} to probe the rows written so far") from None


def open_complete(path: str | Path) -> FeatureFile:
    """A complete features file (erasure, neuron ranking, the sweep and ``featx labels add`` refuse a partial one:
    the derived outputs must be whole)."""
    from ..errors import IncompleteError

    try:
        return FeatureFile(Path(path))
    except IncompleteError as err:
        raise IncompleteError(
            err.message, "finish the extraction first: run the same featx extract command again"
        ) from None

"""What an engine's worker processes do around a study's tasks: use their share of the cores, and import the
probing code once, when they start.

- Threads: ``workers`` processes side by side on ``cores`` cores each run ``cores // workers`` BLAS, OpenMP
  and torch threads (two workers on two cores: one thread each, never two apiece fighting over the cores).
  The probe's own fits already run one thread each (``featx.probing.inputs.JOB_THREADS``); this bounds the
  rest of a probe (loading, the tables, the intervals) and, on Ray, gives an extraction the cores it asked for
  (Ray starts its workers with ``OMP_NUM_THREADS=1``).
- Start-up: a worker imports ``featx.probing`` (pandas, scikit-learn, SciPy) as it starts, while the driver is
  still busy (the up-to-date checks, the extractions), not inside its first probe.

The thread counts change nothing in the results: a probe's fits run one thread each whatever the worker's
share, and an extraction on Ray gets the threads the same extraction gets in the driver's process.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import sys
import threading
from typing import Any

from ..extraction import remembered_digests
from .cells import EXTRACT
from .tasks import execute

_LIFETIME = contextlib.ExitStack()  # what a pool worker holds until it exits
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
WARM_MODULES = ("featx.study.tasks", "featx.probing", "featx.probing.tasks.classification")


def share_of_cores(workers: int, cores: int | None = None) -> int:
    """Threads per worker: ``cores // workers``, at least one (``cores``: this machine's by default)."""
    return max(1, (cores or os.cpu_count() or 1) // max(1, workers))


def limit_threads(threads: int, torch_too: bool = False) -> None:
    """This process's BLAS/OpenMP pools, and torch's (when imported or ``torch_too``), to ``threads`` threads;
    the environment too, for a library loaded later."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)  # called, not entered: the limits stay
    if torch_too or "torch" in sys.modules:
        import torch

        torch.set_num_threads(threads)


def start_worker(threads: int) -> int:
    """A worker's start (the local engine's pool initializer; a Ray warm-up task): its share of threads and the
    probing code imported. Its process id (what a warm-up waits for)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    for module in WARM_MODULES:
        importlib.import_module(module)
    limit_threads(threads)
    return os.getpid()


def start_pool_worker(threads: int) -> None:
    """The local engine's pool initializer: ``start_worker``, and an exit when the driver's process ends (a
    ``kill -9`` of the run would else leave its idle workers waiting for tasks forever; a probe cut short
    this way stays pending, redone by the next run). Ctrl-C, which a terminal sends to every process of the
    run, is ignored while the worker waits for a task (the driver stops the pool; an idle worker would else
    die printing a traceback) and interrupts the task it runs (``pool_execute``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _LIFETIME.enter_context(remembered_digests())  # the pool lives one run: each corpus hashed once per worker
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_after, args=(parent,), name="featx-driver-watch", daemon=True).start()
    start_worker(threads)


def pool_execute(task: dict[str, Any]) -> dict[str, Any]:
    """``execute(task)`` in a pool worker, Ctrl-C interrupting it (its cell stays pending, the driver stops)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return execute(task)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _exit_after(parent: Any) -> None:
    parent.join()
    os._exit(1)


def worker_died(key: str, reason: str, engine: str = "") -> dict[str, Any]:
    """The outcome of a cell whose worker process died under it (killed, out of memory, a lost node): failed,
    while its state stays "running" (pending for the next run); the run goes on."""
    worker = f"{engine} worker" if engine else "worker"
    return {"key": key, "status": "failed", "seconds": None, "error": f"its {worker} died ({reason})"}


def run_task(task: dict[str, Any], threads: int) -> dict[str, Any]:
    """``execute(task)`` with ``threads`` threads (what a Ray task runs): an extraction gets torch's threads set
    too, since Ray's worker started with one."""
    limit_threads(threads, torch_too=task["kind"] == EXTRACT)
    return execute(task)

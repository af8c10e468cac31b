"""Engines: what runs a study's tasks. The runner hands an engine one stage at a time (every extraction, then
every probe); the engine calls ``featx.study.tasks.execute`` on each task's ``as_dict()`` wherever it likes
and gives back the outcomes in the tasks' order. ``execute`` records each cell's state itself, so an engine
holds no state of its own, and every engine yields the same files and the same results table.

``Engine`` is the protocol (``prepare(workers)``, ``run(tasks, workers, on_outcome)``, ``close()``);
``LocalEngine`` is the default: extractions one at a time here (``workers`` is 1 for them: one model in memory,
on the one device), probes side by side in ``workers`` spawned processes (``concurrent.futures``; a fresh
interpreter each, never a fork of one holding torch threads or a CUDA context), started by ``prepare`` before
the extractions and handed the probes longest first (``schedule.py``), each with its share of the cores
(``workers.py``). A Ray engine is one more implementation of the same two lines: submit
``execute(task.as_dict())`` as a remote task (a GPU for extractions where the cluster has one, CPUs for
probes), then collect the outcomes in order; register it in ``ENGINES``.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from ..errors import InputError
from .cells import Task
from .schedule import longest_first
from .tasks import execute
from .workers import pool_execute, share_of_cores, start_pool_worker, worker_died

Outcome = dict[str, Any]  # what ``execute`` returns: key, status, seconds, error, detail...
OnOutcome = Callable[[Task, Outcome], None]


class Engine(Protocol):
    """Runs one stage of a study's tasks."""

    name: str

    def prepare(self, workers: int) -> None:
        """Called once before the first stage, when any cell is to run: start what the stages will use (worker
        processes, a cluster), so that it starts while the driver works rather than inside a stage."""
        ...

    def run(self, tasks: Sequence[Task], workers: int, on_outcome: OnOutcome) -> list[Outcome]:
        """Call ``execute(task.as_dict())`` for every task, at most ``workers`` at a time, calling
        ``on_outcome(task, outcome)`` as each one ends (in the order they end); return the outcomes in the
        order of ``tasks``. An interrupt (Ctrl-C, SIGTERM) stops the stage: raise it after stopping the
        workers."""
        ...

    def close(self) -> None:
        """Release what the runs held (a local cluster the engine started); called once after the last stage."""
        ...


class LocalEngine:
    """This machine: in this process for one worker, else ``workers`` spawned processes, started by ``prepare``
    (each with its share of the cores, the probing code imported) and kept until ``close``."""

    name = "local"

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._workers = 0

    def prepare(self, workers: int) -> None:
        if workers > 1:
            self._start(workers)

    def run(self, tasks: Sequence[Task], workers: int, on_outcome: OnOutcome) -> list[Outcome]:
        if workers <= 1 or len(tasks) <= 1:
            outcomes = []
            for task in tasks:
                outcome = execute(task.as_dict())
                on_outcome(task, outcome)
                outcomes.append(outcome)
            return outcomes
        return self._in_processes(tasks, workers, on_outcome)

    def close(self) -> None:
        """Stop the worker processes (after their running tasks)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool, self._workers = None, 0

    def _start(self, workers: int) -> ProcessPoolExecutor:
        """The pool of ``workers`` spawned processes (a fresh interpreter each, never a fork of one holding torch
        threads or a CUDA context), every one started now: one warm-up call each, not waited for."""
        if self._pool is not None and self._workers == workers:
            return self._pool
        self.close()
        threads = share_of_cores(workers)
        context = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(
            workers, mp_context=context, initializer=start_pool_worker, initargs=(threads,)
        )
        self._workers = workers
        for _ in range(workers):  # a pool spawns a process per call while none is idle, up to its size
            self._pool.submit(os.getpid)
        return self._pool

    def _submit(self, workers: int, task: Task) -> Future:
        """``execute(task)`` in the pool; a pool broken by a worker that died (its running cells failed) is
        replaced, so that the cells after them still run."""
        try:
            return self._start(workers).submit(pool_execute, task.as_dict())
        except BrokenProcessPool:
            self.close()
            return self._start(workers).submit(pool_execute, task.as_dict())

    def _in_processes(self, tasks: Sequence[Task], workers: int, on_outcome: OnOutcome) -> list[Outcome]:
        self._start(workers)
        results: dict[int, Outcome] = {}
        queue = longest_first(tasks)  # submitted one at a time as workers free up, so the order holds
        running: dict[Future, int] = {}
        try:
            while queue or running:
                while queue and len(running) < workers:
                    index = queue.pop(0)
                    running[self._submit(workers, tasks[index])] = index
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = running.pop(future)
                    results[index] = _outcome(future, tasks[index])
                    on_outcome(tasks[index], results[index])
        except BaseException:
            for future in running:
                future.cancel()
            raise
        return [results[index] for index in range(len(tasks))]


def _outcome(future: Future, task: Task) -> Outcome:
    """A worker's outcome; a worker that died (killed, out of memory) fails its cell, whose state stays
    "running" (pending for the next run)."""
    try:
        return future.result()
    except Exception as err:  # noqa: BLE001 - BrokenProcessPool and its kin: the cell failed, the run goes on
        return worker_died(task.key, str(err))


def _ray(address: str | None = None) -> Engine:
    from .ray_engine import RayEngine  # Ray itself is imported only when a stage runs

    return RayEngine(address)


def _local(address: str | None = None) -> Engine:
    return LocalEngine()


# name -> factory(address): the study file's ``engine``, ``--engine`` and the runner all read this one table
ENGINES: dict[str, Callable[..., Engine]] = {"local": _local, "ray": _ray}


def engine_named(name: str, address: str | None = None) -> Engine:
    """The engine a study's ``engine`` (or ``--engine``) names; ``address``: the Ray engine's cluster."""
    if name not in ENGINES:
        raise InputError(f"engine '{name}' is not known", f"choose one of: {', '.join(ENGINES)}")
    return ENGINES[name](address)

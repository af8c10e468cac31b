"""The Ray engine: a study's tasks as Ray tasks, on a running cluster (``address``) or a local one.

The same plan as the local engine, the same ``execute(task.as_dict())`` per task (``workers.run_task``: with
its threads set), so the same files and the same results table: only where the calls run differs. Extractions
(one at a time) ask for a GPU where the cluster has one and every CPU of the largest node that can run them,
with as many torch threads; probes their share of the CPUs (``probe_share``: ``cores // workers`` on one
machine), with as many threads; at most ``workers`` tasks are in flight at a time
(``--jobs``), the longest probes first. ``prepare`` connects before the first stage and warms one worker per
job (the probing code imported). Every node must see
the study's output folder and its corpora at the same paths (a shared file system), and have featx installed
with the same version as the driver (``featx[ray]``).

Ray is optional (``pip install 'featx[ray]'``); it is imported only when a study names this engine. What Ray
ships between its processes is its own business (it pickles the task's JSON-able arguments and outcomes
between processes it started); featx itself never unpickles a file.

A local cluster is started on the loopback address (127.0.0.1), a new one even where ``RAY_ADDRESS`` or an
earlier ``ray start`` on this machine names another (Ray's ``address="local"``), with as many CPUs as this machine
has and no dashboard, its idle workers kept for the run (the warmed probe workers serve the probe stage), and stopped
when the run ends (``close``, which the runner calls beside writing the tables); a running cluster is only
connected to, never stopped.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from typing import Any

from ..checks import parse_whole
from ..errors import InputError
from ..options import spoken_value
from .cells import EXTRACT, Task
from .schedule import longest_first
from .workers import run_task, start_worker, worker_died

Outcome = dict[str, Any]

_LOCAL = ("", "local")
_CONNECT_SECONDS = 5.0
_MAX_PORT = 65535  # socket.create_connection raises OverflowError (no OSError) for a larger port
# A local cluster's raylet keeps its idle workers for the run: by default it ends one idle for a second while
# more workers than CPUs exist, so the probe workers warmed by ``prepare`` died during the extractions (a third
# worker is started for the queued extraction) and the probe stage started and imported fresh ones.
_LOCAL_SYSTEM = {"idle_worker_killing_time_threshold_ms": 3_600_000}


def _local() -> str:
    """The local engine as the caller chooses it: ``--engine local``, ``engine='local'``."""
    return spoken_value(None, "engine", "local", "--engine")


def ray_module() -> Any:
    """``ray``, or a clear error naming the extra to install."""
    try:
        import ray
    except ImportError as error:
        raise InputError(
            "the Ray engine needs Ray, which is not installed", f"pip install 'featx[ray]' (or use {_local()})"
        ) from error
    return ray


def check_address(address: str | None) -> None:
    """Refuse, before any work, a cluster address that does not answer (``HOST:PORT`` or ``ray://HOST:PORT``);
    ``None``/``"local"`` (a local cluster) and ``"auto"`` (the cluster this machine's ``ray start`` runs) pass
    here and are checked when connecting."""
    if address is None or address in _LOCAL or address == "auto":
        return
    text = address.removeprefix("ray://")
    host, _, spelled = text.rpartition(":")
    port = parse_whole(spelled)
    if not host or port is None or port > _MAX_PORT:
        raise InputError(
            f"Ray address '{address}' is not HOST:PORT",
            "give the head node's address as printed by `ray start --head` (e.g. 127.0.0.1:6379), or 'auto'",
        )
    try:
        with socket.create_connection((host, port), timeout=_CONNECT_SECONDS):
            pass
    except OSError as error:
        raise InputError(
            f"Ray address '{address}' does not answer ({error.strerror or error})",
            f"start the cluster first (`ray start --head --port PORT` on the head node), or use {_local()}",
        ) from error


class RayEngine:
    """Runs a stage's tasks as Ray tasks; ``address`` None or "local" starts a local cluster for the stage."""

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        check_address(address)
        self.address = None if address in _LOCAL else address
        self._ray: Any = None
        self._started = False
        self._warming: list[Any] = []  # the warm-up tasks' references, kept until the run ends

    def prepare(self, workers: int) -> None:
        """Connect (or start the local cluster) now, and start a warm-up task for each of ``workers`` probe
        workers (its share of threads, the probing code imported; not waited for), so that the probe stage finds
        them started."""
        ray = self._connected()
        share = probe_share(ray, max(1, workers))
        warm = ray.remote(start_worker).options(num_cpus=share, max_retries=0)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self._warming = [warm.remote(share) for _ in range(max(1, min(workers, cpus // share)))]

    def run(self, tasks: Sequence[Task], workers: int, on_outcome: Any) -> list[Outcome]:
        if not tasks:
            return []
        return self._run(self._connected(), tasks, max(1, workers), on_outcome)

    def close(self) -> None:
        """Stop the local cluster this engine started (a running cluster is left running)."""
        if self._ray is not None and self._started:
            self._ray.shutdown()
        self._ray, self._started, self._warming = None, False, []

    def _connected(self) -> Any:
        """``ray``, connected (a local cluster started) at the first call."""
        if self._ray is None:
            self._ray = ray_module()
            self._started = self._connect(self._ray)
        return self._ray

    def _connect(self, ray: Any) -> bool:
        """Connect (or start a local cluster); True when this engine started it (and so stops it)."""
        if ray.is_initialized():
            return False
        quiet = {"log_to_driver": False, "logging_level": logging.ERROR, "include_dashboard": False}
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            if self.address is None:  # "local": a new cluster, not RAY_ADDRESS's or the last `ray start`'s
                cpus = os.cpu_count() or 1
                local = {"address": "local", "num_cpus": cpus, "_node_ip_address": "127.0.0.1"}
                ray.init(**local, _system_config=_LOCAL_SYSTEM, **quiet)
            else:
                ray.init(address=self.address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as error:
            where = self.address or "a local cluster"
            raise InputError(
                f"could not connect to Ray ({where}): {error}",
                "check the cluster with `ray status`; a cluster with token authentication (Ray's default where "
                "~/.ray/auth_token exists) needs RAY_AUTH_MODE=token and its token here, set before featx starts",
            ) from error
        return True

    def _run(self, ray: Any, tasks: Sequence[Task], workers: int, on_outcome: Any) -> list[Outcome]:
        remote = ray.remote(run_task)
        gpus = float(ray.cluster_resources().get("GPU", 0))
        share = probe_share(ray, workers)
        queue = longest_first(tasks)
        running: dict[Any, int] = {}
        results: dict[int, Outcome] = {}
        try:
            while queue or running:
                while queue and len(running) < workers:
                    index = queue.pop(0)
                    wants, threads = _resources(ray, tasks[index], gpus >= 1, share)
                    running[remote.options(**wants).remote(tasks[index].as_dict(), threads)] = index
                finished, _ = ray.wait(list(running), num_returns=1)
                for reference in finished:
                    index = running.pop(reference)
                    results[index] = _outcome(ray, reference, tasks[index])
                    on_outcome(tasks[index], results[index])
        except BaseException:
            for reference in running:
                ray.cancel(reference, force=True)
            raise
        return [results[index] for index in range(len(tasks))]


def _outcome(ray: Any, reference: Any, task: Task) -> Outcome:
    """A task's outcome; a Ray worker or node that died (killed, out of memory, a lost node) fails its cell, whose
    state stays "running" (pending for the next run), and the run goes on, as with the local engine."""
    try:
        return ray.get(reference)
    except ray.exceptions.RayError as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return worker_died(task.key, reason, "Ray")


def probe_share(ray: Any, workers: int) -> int:
    """A probe's CPUs and threads with ``workers`` probes in flight: the cluster's CPUs shared between them, no
    more than its smallest node with CPUs has, so that any node fits one (``cores // workers`` on one machine,
    as the local engine's workers; two probes on two CPUs: one each, never two apiece fighting over them)."""
    cpus = [int(node.get("Resources", {}).get("CPU", 0)) for node in ray.nodes() if node.get("Alive")]
    cpus = [count for count in cpus if count > 0]
    return max(1, min(min(cpus, default=1), sum(cpus) // max(1, workers)))


def _resources(ray: Any, task: Task, gpu: bool, share: int) -> tuple[dict[str, Any], int]:
    """What a task asks of the cluster, and its threads: a probe ``share`` CPUs (as many threads); an extraction
    (one at a time) a GPU where the cluster has one and every CPU of the largest node that fits it, with as
    many threads, as the local engine's extraction has this machine's cores."""
    if task.kind != EXTRACT:
        return {"num_cpus": share, "max_retries": 0}, share
    nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
    fits = [node for node in nodes if node.get("GPU", 0) >= 1] if gpu else nodes
    cpus = max(1, int(max((node.get("CPU", 1) for node in fits), default=1)))
    wants = {"num_cpus": cpus, "max_retries": 0, **({"num_gpus": 1} if gpu else {})}
    return wants, cpus

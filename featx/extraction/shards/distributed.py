"""Extraction under ``torchrun`` (or ``accelerate launch``: anything that sets ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT``): every process extracts shard ``RANK`` of ``WORLD_SIZE`` on GPU
``LOCAL_RANK``; when all are done, rank 0 merges.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from ...errors import FeatxError, InputError, Interrupted, StoreError
from ...safe_files import loads_json
from ..checks import output_path
from ..config import ExtractConfig
from ..summary import ExtractSummary, summary_of
from .merge import merge

# How long finished ranks wait for the slowest one. A crashed rank never makes the others wait this
# long: torchrun stops every worker as soon as one fails.
DEFAULT_WAIT = timedelta(days=7)


@dataclass(frozen=True)
class LaunchEnv:
    """What a torch.distributed launcher tells each process about its place in the job."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int

    @classmethod
    def detect(cls, environ=None) -> LaunchEnv | None:
        """The launch environment, or None when not started by torchrun (or accelerate launch)."""
        environ = os.environ if environ is None else environ
        if not all(key in environ for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
            return None
        try:
            rank, world = int(environ["RANK"]), int(environ["WORLD_SIZE"])
            local_rank = int(environ.get("LOCAL_RANK", rank))
            local_world = int(environ.get("LOCAL_WORLD_SIZE", world))
        except ValueError:
            raise InputError(
                "RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE must be integers",
                "launch featx with torchrun, which sets them",
            ) from None
        if world < 1 or not 0 <= rank < world:
            raise InputError(f"RANK={rank} is out of range for WORLD_SIZE={world}")
        return cls(rank, world, local_rank, max(1, local_world))

    def device(self, requested: str) -> str:
        """One GPU per process: ``auto``/``cuda`` become ``cuda:LOCAL_RANK``; anything else is kept."""
        import torch

        requested = (requested or "auto").lower()
        if requested == "cuda" or (requested == "auto" and torch.cuda.is_available()):
            return f"cuda:{self.local_rank}"
        return requested

    def cpu_threads(self, environ=None) -> int:
        """Threads per process when the processes of one machine share its CPU cores."""
        environ = os.environ if environ is None else environ
        if environ.get("FEATX_NUM_THREADS"):
            return max(1, int(environ["FEATX_NUM_THREADS"]))
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        return max(1, cores // self.local_world_size)


def wait_timeout(environ=None) -> timedelta:
    environ = os.environ if environ is None else environ
    seconds = environ.get("FEATX_DIST_TIMEOUT")
    return timedelta(seconds=float(seconds)) if seconds else DEFAULT_WAIT


def extract_distributed(
    config: ExtractConfig, launch: LaunchEnv, extract_one: Callable[[ExtractConfig], ExtractSummary]
) -> ExtractSummary:
    """Extract shard ``RANK`` of ``WORLD_SIZE``; after all shards are done, rank 0 merges them.

    The process group (gloo, on CPU: it only carries a few status messages, so it
    works the same whatever the device) is created only here, and its timeout is
    long because fast shards wait for the slowest. A relaunch skips finished
    shards and resumes partial ones, since each shard is an ordinary resumable
    extraction; a finished merge makes every rank return at once.
    """
    started = time.perf_counter()
    device = _set_up_device(config, launch)
    shard_config = replace(
        config,
        shards=launch.world_size,
        shard_index=launch.rank,
        device=device,
        progress=config.progress and launch.rank == 0,
    )
    if launch.world_size == 1:
        return extract_one(replace(shard_config, shards=None, shard_index=None))
    summary, own_error, statuses = _extract_in_group(shard_config, launch, extract_one)
    failed = [item for item in statuses if item["error"]]
    if failed:
        if own_error is not None:
            raise own_error
        if launch.rank == 0:
            shown = "; ".join(f"rank {item['rank']}: {item['error']}" for item in failed)
            raise StoreError(
                f"{len(failed)} shard(s) failed, nothing merged ({shown})",
                "fix the problem and relaunch the same command: finished shards are kept",
            )
    assert summary is not None  # this rank's shard did not fail (own_error is None)
    if failed or launch.rank != 0:
        return summary
    return _merge_on_rank0(config, summary, statuses, started)


def _set_up_device(config: ExtractConfig, launch: LaunchEnv) -> str:
    """This rank's device (its own GPU under torchrun), made current; CPU ranks share the cores."""
    import torch

    device = launch.device(config.device)
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.set_device(torch.device(device))
    if device == "cpu" or (device == "auto" and not torch.cuda.is_available()):
        torch.set_num_threads(launch.cpu_threads())
    return device


def _extract_in_group(
    shard_config: ExtractConfig, launch: LaunchEnv, extract_one: Callable[[ExtractConfig], ExtractSummary]
) -> tuple[ExtractSummary | None, FeatxError | None, list[dict]]:
    """Extract this rank's shard, then wait for every rank: this shard's summary (None when it failed), its
    error, and every rank's status (``rank``, ``host``, ``error``, ``path``)."""
    import torch.distributed as dist

    owns_group = not dist.is_initialized()
    if owns_group:
        dist.init_process_group("gloo", timeout=wait_timeout())
        group = None
    else:  # the caller's own process group, maybe NCCL: the status messages need a CPU one
        group = dist.new_group(backend="gloo", timeout=wait_timeout())
    own_error = None
    try:
        summary: ExtractSummary | None = None
        status: dict = {"rank": launch.rank, "host": socket.gethostname(), "error": None}
        try:
            summary = extract_one(shard_config)
            status["path"] = str(Path(summary.output).resolve())
        except Interrupted:
            raise  # Ctrl-C or torchrun stopping the job: the other ranks are going away too
        except FeatxError as error:
            status["error"], own_error = error.message, error
        # The barrier: every shard is done (or failed).
        statuses = _all_gather_json(status, launch.world_size, group)
    finally:
        if owns_group:
            dist.destroy_process_group()
        elif group is not None:
            dist.destroy_process_group(group)
    return summary, own_error, statuses


def _all_gather_json(item: dict, world_size: int, group=None) -> list[dict]:
    """Every rank's ``item``, exchanged as JSON bytes (``all_gather_object`` would unpickle)."""
    import torch
    import torch.distributed as dist

    data = torch.tensor(list(json.dumps(item).encode()), dtype=torch.uint8)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world_size)]
    dist.all_gather(sizes, torch.tensor([len(data)], dtype=torch.int64), group=group)
    longest = int(max(size.item() for size in sizes))
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[: len(data)] = data
    gathered = [torch.zeros(longest, dtype=torch.uint8) for _ in range(world_size)]
    dist.all_gather(gathered, padded, group=group)
    return [
        loads_json(bytes(buffer[: int(size.item())].tolist())) for buffer, size in zip(gathered, sizes, strict=False)
    ]


def _merge_on_rank0(config: ExtractConfig, summary: ExtractSummary, statuses, started: float) -> ExtractSummary:
    output = output_path(config)
    if Path(summary.output).resolve() == output.resolve():
        return summary  # the merged file was already up to date on every rank
    missing = [item for item in statuses if not Path(item["path"]).exists()]
    if missing:
        hosts = ", ".join(sorted({item["host"] for item in missing}))
        summary.notes.append(
            f"not merged: {len(missing)} shard file(s) were written on {hosts} and are not visible here; "
            f"copy them beside {output} and run: featx merge {output}"
        )
        return summary
    merged = merge(output, overwrite=config.overwrite, progress=config.progress)
    # Rank 0's whole wall time, so tokens/s is the throughput of the job.
    result = summary_of(merged.output, "written", time.perf_counter() - started, summary.skipped_empty)
    result.notes.append(merged.line())
    return result

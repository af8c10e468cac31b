"""Splitting one extraction into shards: row assignment, shard files, the manifest, torchrun.

A sharded extraction of ``OUT.h5`` writes one ordinary features file per shard
beside it, ``OUT.shard-03-of-08.h5`` (resumable on its own, like any extraction),
plus a manifest ``OUT.shards.json`` naming every shard and what they must share
(model, options and corpus). ``featx merge OUT.h5`` (``featx.merge``) checks the
shards against the manifest and copies them into ``OUT.h5`` in corpus order.

Under ``torchrun`` (or ``accelerate launch``: anything that sets ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``) every process extracts shard
``RANK`` of ``WORLD_SIZE`` on GPU ``LOCAL_RANK``; when all are done, rank 0 merges.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import h5py
import numpy as np

from .corpus import Corpus, LabelColumn
from .errors import FeatxError, InputError, Interrupted, StoreError

# Bump when the assignment changes: shards made by different rules must never be merged.
ASSIGNMENT = "round-robin-by-char-length-v1"
MANIFEST_FORMAT = "featx-shards"
ROW_INDEX = "rows/index"  # in a shard file: the corpus row of each of its rows, ascending
SHARD_ATTRS = ("shard_index", "shard_count", "shard_assignment", "corpus_n_rows", "base_fingerprint")
# How long finished ranks wait for the slowest one. A crashed rank never makes the others wait this
# long: torchrun stops every worker as soon as one fails.
DEFAULT_WAIT = timedelta(days=7)


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` of ``count`` (0-based)."""

    index: int
    count: int

    @classmethod
    def from_options(cls, shards: int | None, shard_index: int | None) -> "ShardSpec | None":
        """The shard chosen by ``--shards``/``--shard-index``; None when the run is not sharded."""
        if shards is None and shard_index is None:
            return None
        if shards is None or shard_index is None:
            raise InputError("--shards and --shard-index go together",
                             "give both, e.g. --shards 4 --shard-index 0, or neither under torchrun")
        if shards < 1:
            raise InputError(f"--shards {shards} must be at least 1")
        if not 0 <= shard_index < shards:
            raise InputError(f"--shard-index {shard_index} is out of range for --shards {shards}",
                             f"shard indices run from 0 to {shards - 1}")
        return cls(int(shard_index), int(shards))

    @property
    def label(self) -> str:
        width = max(2, len(str(self.count)))
        return f"shard-{self.index:0{width}d}-of-{self.count:0{width}d}"

    def path(self, output: Path) -> Path:
        """``OUT.h5`` -> ``OUT.shard-00-of-04.h5`` beside it."""
        return output.with_name(f"{output.stem}.{self.label}{output.suffix}")

    def fingerprint(self, base_fingerprint: str) -> str:
        """The shard file's fingerprint: the run's, plus which rows this shard holds."""
        return json.dumps({"run": base_fingerprint, "shard_index": self.index, "shard_count": self.count,
                           "assignment": ASSIGNMENT}, sort_keys=True)


def assign_rows(texts: list[str], count: int, index: int) -> np.ndarray:
    """Corpus rows of shard ``index`` of ``count``, ascending.

    Rows are sorted by text length (characters, longest first; ties keep corpus order)
    and dealt round-robin, so every shard gets the same mix of long and short texts
    and the shards take about equal time. Character length stands in for token count:
    it needs no tokenizer, so the assignment is decided before tokenisation and is
    the same whatever the model.
    """
    lengths = np.fromiter((len(text) for text in texts), dtype=np.int64, count=len(texts))
    order = np.argsort(-lengths, kind="stable")
    return np.sort(order[index::count])


def select_rows(corpus: Corpus, shard: ShardSpec) -> tuple[Corpus, np.ndarray]:
    """The part of ``corpus`` that ``shard`` extracts, and its corpus row indices.

    Label codes and names stay those of the whole corpus, so shards agree on them;
    ``sha256`` stays the whole file's, which is what shards are checked against.
    """
    if shard.count > len(corpus):
        raise InputError(f"{shard.count} shards for a corpus of {len(corpus)} rows would leave shards empty",
                         f"use at most {len(corpus)} shards (processes)")
    rows = assign_rows(corpus.texts, shard.count, shard.index)

    def pick(values):
        return [values[row] for row in rows]

    labels = {name: LabelColumn(name=name, codes=column.codes[rows], names=list(column.names))
              for name, column in corpus.labels.items()}
    subset = replace(corpus, texts=pick(corpus.texts), ids=pick(corpus.ids), labels=labels,
                     split=pick(corpus.split) if corpus.split is not None else None)
    return subset, rows


def annotate_shard(file: h5py.File, shard: ShardSpec, rows: np.ndarray, base_fingerprint: str,
                   corpus_rows: int) -> None:
    """Record in a shard file which corpus rows it holds and which shard it is.

    Done right after the file is created, and checked again on resume (a crash between
    creating the file and annotating it is repaired here).
    """
    if ROW_INDEX in file:
        if not np.array_equal(file[ROW_INDEX][()], rows):
            raise StoreError(f"{file.filename} holds other corpus rows than shard {shard.index} of {shard.count}",
                             "pass --overwrite to start this shard over")
    else:
        file.create_dataset(ROW_INDEX, data=rows.astype(np.int64))
    file.attrs.update({
        "shard_index": shard.index, "shard_count": shard.count, "shard_assignment": ASSIGNMENT,
        "corpus_n_rows": int(corpus_rows), "base_fingerprint": base_fingerprint,
    })
    file.flush()


# -- the manifest ----------------------------------------------------------------------------------

def manifest_path(output: Path) -> Path:
    return output.with_name(f"{output.stem}.shards.json")


def make_manifest(output: Path, count: int, corpus: Corpus, corpus_rows: int, model_sha256: str,
                  base_fingerprint: str) -> dict:
    return {
        "format": MANIFEST_FORMAT, "version": 1, "output": output.name, "shard_count": count,
        "shards": [ShardSpec(index, count).path(output).name for index in range(count)],
        "assignment": ASSIGNMENT, "corpus_sha256": corpus.sha256, "corpus_n_rows": int(corpus_rows),
        "model_sha256": model_sha256, "fingerprint": base_fingerprint,
    }


def read_manifest(output: Path) -> dict | None:
    path = manifest_path(output)
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise StoreError(f"the shard manifest {path} cannot be read ({err})",
                         "re-run the sharded featx extract with --overwrite to rewrite it") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise StoreError(f"{path} is not a featx shard manifest")
    return manifest


def write_manifest(output: Path, manifest: dict, overwrite: bool) -> None:
    """Write the manifest, or check that the one there describes the same sharded run.

    Every shard writes the same bytes, so concurrent shards may race harmlessly.
    """
    path = manifest_path(output)
    existing = read_manifest(output) if path.exists() else None
    if existing == manifest:
        return
    if existing is not None and not overwrite:
        what = ("a different number of shards" if existing.get("shard_count") != manifest["shard_count"]
                else "a different corpus, model or options")
        raise StoreError(
            f"{path} describes a sharded extraction of {output.name} with {what}",
            "run the shards with the original options, or pass --overwrite to start a new sharded run",
        )
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, path)


# -- torchrun / accelerate ------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchEnv:
    """What a torch.distributed launcher tells each process about its place in the job."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int

    @classmethod
    def detect(cls, environ=None) -> "LaunchEnv | None":
        """The launch environment, or None when not started by torchrun (or accelerate launch)."""
        environ = os.environ if environ is None else environ
        if not all(key in environ for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
            return None
        try:
            rank, world = int(environ["RANK"]), int(environ["WORLD_SIZE"])
            local_rank = int(environ.get("LOCAL_RANK", rank))
            local_world = int(environ.get("LOCAL_WORLD_SIZE", world))
        except ValueError:
            raise InputError("RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE must be integers",
                             "launch featx with torchrun, which sets them") from None
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


def extract_distributed(config, launch: LaunchEnv):
    """Extract shard ``RANK`` of ``WORLD_SIZE``; after all shards are done, rank 0 merges them.

    The process group (gloo, on CPU: it only carries a few status messages, so it
    works the same whatever the device) is created only here, and its timeout is
    long because fast shards wait for the slowest. A relaunch skips finished
    shards and resumes partial ones, since each shard is an ordinary resumable
    extraction; a finished merge makes every rank return at once.
    """
    import torch
    import torch.distributed as dist

    from .extractor import extract

    started = time.perf_counter()
    device = launch.device(config.device)
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.set_device(torch.device(device))
    if device == "cpu" or (device == "auto" and not torch.cuda.is_available()):
        torch.set_num_threads(launch.cpu_threads())
    shard_config = replace(config, shards=launch.world_size, shard_index=launch.rank, device=device,
                           progress=config.progress and launch.rank == 0)
    if launch.world_size == 1:
        return extract(replace(shard_config, shards=None, shard_index=None))

    owns_group = not dist.is_initialized()
    if owns_group:
        dist.init_process_group("gloo", timeout=wait_timeout())
        group = None
    else:  # the caller's own process group, maybe NCCL: the status messages need a CPU one
        group = dist.new_group(backend="gloo", timeout=wait_timeout())
    own_error = None
    try:
        summary, status = None, {"rank": launch.rank, "host": socket.gethostname(), "error": None}
        try:
            summary = extract(shard_config)
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

    failed = [item for item in statuses if item["error"]]
    if failed:
        if own_error is not None:
            raise own_error
        if launch.rank == 0:
            shown = "; ".join(f"rank {item['rank']}: {item['error']}" for item in failed)
            raise StoreError(f"{len(failed)} shard(s) failed, nothing merged ({shown})",
                             "fix the problem and relaunch the same command: finished shards are kept")
        return summary
    if launch.rank != 0:
        return summary
    return _merge_on_rank0(config, summary, statuses, started)


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
    return [json.loads(bytes(buffer[: int(size.item())].tolist())) for buffer, size in zip(gathered, sizes)]


def _merge_on_rank0(config, summary, statuses, started):
    from .extract_config import output_path, summary_of
    from .merge import merge

    output = output_path(config)
    if Path(summary.output).resolve() == output.resolve():
        return summary  # the merged file was already up to date on every rank
    missing = [item for item in statuses if not Path(item["path"]).exists()]
    if missing:
        hosts = ", ".join(sorted({item["host"] for item in missing}))
        summary.notes.append(
            f"not merged: {len(missing)} shard file(s) were written on {hosts} and are not visible here; "
            f"copy them beside {output} and run: featx merge {output}")
        return summary
    merged = merge(output, overwrite=config.overwrite, progress=config.progress)
    # Rank 0's whole wall time, so tokens/s is the throughput of the job.
    result = summary_of(merged.output, "written", time.perf_counter() - started, summary.skipped_empty)
    result.notes.append(merged.line())
    return result

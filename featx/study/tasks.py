"""A study's unit of work, ``Task``: one plain function call, named by its dotted path, with JSON-able
arguments, so that any engine can run it anywhere featx is installed and the study's folder is seen (a worker
process, a Ray task). ``execute`` is the one call an engine makes per task: it runs the function and records
the cell's state beside the outputs (``records.py``), so a task's state is written by whoever ran it, the
moment it finished.

The two kinds of cell: ``extract_cell`` (one model over one corpus; ``featx.extract``'s own up-to-date check
and resume from commits) and ``probe_cell`` (one label of one features file; ``featx.probe``).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FeatxError
from .records import record_state

EXTRACT, PROBE = "extract", "probe"


@dataclass(frozen=True)
class Task:
    """One cell's work: ``function`` (``"featx.study.tasks:probe_cell"``) called with ``args`` (JSON-able), in
    study ``output``; done when its state says so with this ``fingerprint`` and every one of ``outputs`` is a
    file. ``after``: the keys of the tasks it needs done first (a probe: its extraction)."""

    key: str  # "extract/minilm/sst2", "probe/minilm/sst2/label"
    kind: str  # EXTRACT or PROBE
    function: str
    args: dict[str, Any] = field(hash=False)
    output: str = ""  # the study's folder, where the states live
    outputs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    fingerprint: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The task as JSON-able data (what an engine ships to a worker)."""
        return {
            "key": self.key,
            "kind": self.kind,
            "function": self.function,
            "args": self.args,
            "output": self.output,
            "outputs": list(self.outputs),
            "after": list(self.after),
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        return cls(**{**data, "outputs": tuple(data["outputs"]), "after": tuple(data["after"])})


def fingerprint(function: str, args: dict[str, Any], *depends: str) -> str:
    """What makes a cell's outputs what they are: its function, arguments and the fingerprints it builds on."""
    text = json.dumps([function, args, list(depends)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def call(function: str, args: dict[str, Any]) -> dict[str, Any]:
    """``module:name`` called with ``args`` as keywords."""
    module, name = function.split(":")
    return getattr(importlib.import_module(module), name)(**args)


def execute(task: dict[str, Any] | Task) -> dict[str, Any]:
    """Run one task and record its state (running, then done or failed, with its times and error): the outcome
    ``{"key", "status", "seconds", "error", "detail"}``. A featx error or any other failure of the cell is
    recorded and returned, never raised: the other cells go on. An interrupt stops the run (the state stays
    "running": the next run redoes the cell, and an extraction resumes from its commits)."""
    task = task if isinstance(task, Task) else Task.from_dict(task)
    started = time.time()
    record_state(task, "running", started=started)
    try:
        detail = call(task.function, task.args)
    except FeatxError as err:
        error = err.message + (f" (hint: {err.hint})" if err.hint else "")
        return record_state(task, "failed", started=started, error=error)
    except Exception as err:  # noqa: BLE001 - any failure of one cell is that cell's, recorded with its error
        frames = traceback.extract_tb(err.__traceback__)
        place = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        return record_state(task, "failed", started=started, error=f"{type(err).__name__}: {err}{place}")
    return record_state(task, "done", started=started, detail=detail)


def extract_cell(options: dict[str, Any]) -> dict[str, Any]:
    """One extraction: reused when the file there was made by this very request ("up-to-date"), resumed from
    its commits when a run was killed, else written."""
    from ..extraction import ExtractConfig, extract, quick_up_to_date

    config = ExtractConfig(**options)
    Path(config.output or "").parent.mkdir(parents=True, exist_ok=True)
    summary = quick_up_to_date(config) or extract(config)
    return {"status": summary.status, "rows": summary.rows, "seconds": round(summary.seconds, 3)}


def probe_cell(options: dict[str, Any]) -> dict[str, Any]:
    """One probe of one label of a cell's features file, its results written under the cell's folder."""
    from ..probing import ProbeConfig, probe

    result = probe(ProbeConfig(**options))
    return {"rows": len(result.table), "results": str(result.csv_path), "seconds": result.meta["seconds"]}

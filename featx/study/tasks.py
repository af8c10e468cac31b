"""What a study's tasks (``cells.Task``) call: ``execute`` is the one call an engine makes per task: it runs the
task's function and records the cell's state beside the outputs (``records.py``), so a task's state is written
by whoever ran it, the moment it finished.

The two kinds of cell: ``extract_cell`` (one model over one corpus; ``featx.extract``'s own up-to-date check
and resume from commits) and ``probe_cell`` (one label of one features file; ``featx.probe``).
"""

from __future__ import annotations

import importlib
import signal
import time
import traceback
from pathlib import Path
from typing import Any

from ..errors import FeatxError, Interrupted, Terminated
from .cells import Task
from .records import cell_folders, record_state


def call(function: str, args: dict[str, Any]) -> dict[str, Any]:
    """``module:name`` called with ``args`` as keywords."""
    module, name = function.split(":")
    return getattr(importlib.import_module(module), name)(**args)


def execute(task: dict[str, Any] | Task) -> dict[str, Any]:
    """Run one task and record its state (running, then done or failed, with its times and error): the outcome
    ``{"key", "status", "seconds", "error", "detail"}``. A featx error or any other failure of the cell is
    recorded and returned, never raised: the other cells go on. An interrupt stops the run (the state stays
    "running": the next run redoes the cell, and an extraction resumes from its commits); ``featx.extract``'s
    ``Interrupted`` (a featx error saying which rows it kept) is raised again as the interrupt it was, never
    recorded as the cell's failure while the run goes on."""
    task = task if isinstance(task, Task) else Task.from_dict(task)
    started = time.time()
    record_state(task, "running", started=started)
    try:
        cell_folders(task)  # never through a link planted at a cell's folder since the run checked them
        detail = call(task.function, task.args)
    except Interrupted as err:
        raise _interrupt(err.exit_code - 128) from None
    except FeatxError as err:
        error = err.message + (f" (hint: {err.hint})" if err.hint else "")
        return record_state(task, "failed", started=started, error=error)
    except Exception as err:  # noqa: BLE001 - any failure of one cell is that cell's, recorded with its error
        frames = traceback.extract_tb(err.__traceback__)
        place = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        return record_state(task, "failed", started=started, error=f"{type(err).__name__}: {err}{place}")
    return record_state(task, "done", started=started, detail=detail)


def _interrupt(signum: int) -> KeyboardInterrupt:
    """The interrupt of signal ``signum``: Ctrl-C's ``KeyboardInterrupt``, else a ``Terminated``."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(signum, signal.Signals(signum).name)


def extract_cell(options: dict[str, Any]) -> dict[str, Any]:
    """One extraction: reused when the file there was made by this very request ("up-to-date"), resumed from
    its commits when a run was killed, else written; a finished or unfinished file of other options (the cell's
    own, from an earlier run of a changed study, which cannot pass ``--overwrite``) is replaced, as
    ``--overwrite`` replaces only a features file (and still resumes an unfinished one of this very request)."""
    from ..extraction import ExtractConfig, extract, quick_up_to_date
    from ..store import partial_path

    config = ExtractConfig(**options)
    output = Path(str(config.output))
    output.parent.mkdir(parents=True, exist_ok=True)
    summary = quick_up_to_date(config)
    if summary is None:
        earlier = output.is_file() or partial_path(output).is_file()
        summary = extract(config.replace(overwrite=True) if earlier else config)
    return {"status": summary.status, "rows": summary.rows, "seconds": round(summary.seconds, 3)}


def probe_cell(options: dict[str, Any]) -> dict[str, Any]:
    """One probe of one label of a cell's features file, its results written under the cell's folder."""
    from ..probing import ProbeConfig, probe

    result = probe(ProbeConfig(**options))
    return {"rows": len(result.table), "results": str(result.csv_path), "seconds": result.meta["seconds"]}

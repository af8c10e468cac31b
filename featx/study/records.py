"""Each cell's state, one small JSON file per cell under ``OUTPUT/.study/``, written atomically (a fresh
temporary file renamed into place: ``featx.safe_files``), read back without following links and within a size
bound; never pickle.

A state holds the cell's ``key``, ``status`` (running, done or failed), ``fingerprint``, times (``started``,
``finished`` as Unix seconds, ``seconds``), ``error``, the ``detail`` its function returned and, for an
extraction, the ``corpus_sha256`` its fingerprint took (what keeps a failed cell failed once its corpus file is
gone: ``plan.gone_corpus``). A cell is done
only when its state says done with the task's fingerprint and every output file is there: a state from a
killed run ("running"), from other options (another fingerprint) or whose outputs were removed is pending.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..safe_files import NotARegularFile, atomic_write_text, loads_json, read_small_text, real_folder

if TYPE_CHECKING:
    from .cells import Task

STATE_DIR = ".study"
MAX_STATE_BYTES = 1 << 20
DONE, FAILED, RUNNING, PENDING = "done", "failed", "running", "pending"


def state_folder(output: str | Path) -> Path:
    """``OUTPUT/.study``, made when missing; a link at OUTPUT or there is refused (states are never written
    through one)."""
    return real_folder(Path(output) / STATE_DIR, Path(output).parent)


def cell_folders(task: Task, make: bool = True) -> None:
    """The folders of ``task``'s outputs under the study's OUTPUT, made when missing (``make``) and never through
    a symbolic link: a link planted at OUTPUT, at a model's or a cell's folder is refused (a ``StoreError``)."""
    below = Path(task.output).parent
    for folder in dict.fromkeys(Path(path).parent for path in task.outputs):
        real_folder(folder, below, make=make)


def state_path(output: str | Path, key: str) -> Path:
    """The state file of cell ``key`` (named by its digest: a label may hold any character)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return Path(output) / STATE_DIR / f"{key.split('/')[0]}-{digest}.json"


def read_state(output: str | Path, key: str) -> dict[str, Any] | None:
    """The recorded state of cell ``key``, or None (none yet, or not a state featx wrote)."""
    try:
        state = loads_json(read_small_text(state_path(output, key), MAX_STATE_BYTES))
    except (FileNotFoundError, NotARegularFile, ValueError, OSError):
        return None
    return state if isinstance(state, dict) and state.get("key") == key else None


def record_state(task: Task, status: str, started: float, **fields: Any) -> dict[str, Any]:
    """Write the state of ``task``'s cell (atomically) and return its outcome."""
    now = time.time()
    state = {
        "key": task.key,
        "kind": task.kind,
        "status": status,
        "fingerprint": task.fingerprint,
        "started": started,
        "finished": now if status != RUNNING else None,
        "seconds": round(now - started, 3) if status != RUNNING else None,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "error": fields.get("error"),
        "detail": fields.get("detail"),
        "corpus_sha256": task.corpus_sha256 or None,
    }
    state_folder(task.output)
    atomic_write_text(state_path(task.output, task.key), json.dumps(state, indent=1, default=str))
    return state


def outputs_complete(task: Task) -> bool:
    """Every output of ``task`` is a regular file (never a link)."""
    return all(Path(path).is_file() and not Path(path).is_symlink() for path in task.outputs)


def cell_status(task: Task, state: dict[str, Any] | None = None) -> str:
    """done, failed, pending (never run, killed while running, other options, or outputs missing)."""
    state = read_state(task.output, task.key) if state is None else state
    if state is None or state.get("fingerprint") != task.fingerprint:
        return PENDING
    if state.get("status") == DONE:
        return DONE if outputs_complete(task) else PENDING
    return FAILED if state.get("status") == FAILED else PENDING


def still_running(state: dict[str, Any]) -> bool:
    """A "running" state whose process is alive on this machine and is not this one (else a killed or
    interrupted run left it)."""
    if state.get("status") != RUNNING or state.get("host") != socket.gethostname():
        return False
    try:
        pid = int(state.get("pid") or 0)
        if pid <= 0 or pid == os.getpid():
            return False
        os.kill(pid, 0)
    except (OSError, ValueError, OverflowError):
        return False
    return True

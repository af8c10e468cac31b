"""Remembering the last features and results file written in a directory (``.featx/last.json``).

This is what lets ``featx probe --layer all`` and ``featx plot`` run with no path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

STATE_DIR = ".featx"
STATE_FILE = "last.json"


def _state_path(directory: Path | None = None) -> Path:
    return Path(directory or Path.cwd()) / STATE_DIR / STATE_FILE


def read_state(directory: Path | None = None) -> dict:
    path = _state_path(directory)
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def remember(kind: str, path: Path, directory: Path | None = None) -> None:
    """Record ``path`` as the last ``kind`` ("features" or "results") written from this directory."""
    state_path = _state_path(directory)
    try:
        state_path.parent.mkdir(exist_ok=True)
        state = read_state(directory)
        state[kind] = str(Path(path).resolve())
        tmp = state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, state_path)
    except OSError:
        pass  # a read-only working directory must not fail the run; the path is printed anyway


def last(kind: str, directory: Path | None = None) -> Path | None:
    value = read_state(directory).get(kind)
    return Path(value) if value else None

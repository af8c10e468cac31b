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


# What each remembered kind is called in messages, and how to make one.
_REMEMBERED = {
    "features": ("features", "extraction", "give the path (featx probe FEATURES.h5) or run featx extract here first"),
    "results": ("results", "probing run", "give the path (e.g. RESULTS.probe.csv) or run featx probe here first"),
}


def given_or_last(path, kind: str, directory: Path | None = None) -> tuple[Path, str | None]:
    """``path`` if given, else the last ``kind`` remembered in this directory, with a note saying so.

    The one place where "no path given" falls back to the remembered file (``featx probe``, ``plot``, ``explain``).
    """
    if path is not None:
        return Path(path), None
    from .errors import InputError

    noun, run, hint = _REMEMBERED[kind]
    remembered = last(kind, directory)
    if remembered is None:
        raise InputError(f"no {noun} file given, and no {run} is remembered in this directory", hint)
    return remembered, f"using the last {run} in this directory: {remembered}"

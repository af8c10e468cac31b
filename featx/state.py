"""Remembering the last features and results file written in a directory (``.featx/last.json``).

This is what lets ``featx probe --layer all`` and ``featx plot`` run with no path.
"""

from __future__ import annotations

import json
from pathlib import Path

from .safe_files import NotARegularFile, atomic_write_text, loads_json, read_small_text

STATE_DIR = ".featx"
STATE_FILE = "last.json"
MAX_STATE_BYTES = 64 << 10  # a few paths; anything larger is not featx's
KINDS = ("features", "results")


def _state_path(directory: Path | None = None) -> Path:
    return Path(directory or Path.cwd()) / STATE_DIR / STATE_FILE


def check_state(directory: Path | None = None) -> tuple[dict, str | None]:
    """The remembered paths, and why ``.featx/last.json`` was not usable (None if it was, or is absent).

    Only a regular file (never through a link, never a device or FIFO) of at most ``MAX_STATE_BYTES``
    holding a JSON object of path strings counts.
    """
    path = _state_path(directory)
    try:
        state = loads_json(read_small_text(path, MAX_STATE_BYTES))
    except FileNotFoundError:
        return {}, None
    except NotARegularFile as err:
        return {}, str(err)
    except OSError as err:
        return {}, f"{path} cannot be read ({err.strerror or err})"
    except ValueError:
        return {}, f"{path} is not valid JSON"
    if not isinstance(state, dict):
        return {}, f"{path} does not hold a JSON object"
    kept = {
        kind: value
        for kind, value in state.items()
        if kind in KINDS and isinstance(value, str) and value and "\0" not in value
    }
    return kept, None if len(kept) == len(state) else f"{path} holds entries featx does not know"


def read_state(directory: Path | None = None) -> dict:
    return check_state(directory)[0]


def remember(kind: str, path: Path, directory: Path | None = None) -> None:
    """Record ``path`` as the last ``kind`` ("features" or "results") written from this directory."""
    state_path = _state_path(directory)
    try:
        state_path.parent.mkdir(exist_ok=True)
        if state_path.parent.is_symlink() or not state_path.parent.is_dir():
            return  # a planted link at .featx: write nothing through it
        state = read_state(directory)
        state[kind] = str(Path(path).resolve())
        atomic_write_text(state_path, json.dumps(state, indent=2))  # a fresh temporary file, renamed into place
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
    state, problem = check_state(directory)
    remembered = Path(state[kind]) if kind in state else None
    if remembered is None:
        why = f" ({problem}; ignored)" if problem else ""
        raise InputError(f"no {noun} file given, and no {run} is remembered in this directory{why}", hint)
    return remembered, f"using the last {run} in this directory: {remembered}"

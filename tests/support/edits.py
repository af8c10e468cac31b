"""Erasers files written by hand in ``featx erase``'s format, for the edit tests (``tests/extraction/edits``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_erasers(folder: Path, model_sha256: str, layers: dict[int, tuple], pooling: str = "mean") -> Path:
    """An ``.erasers.npz`` and its ``.erase.json`` as ``featx erase`` writes them: ``layers`` maps a layer to its
    ``(mean, left, right)``."""
    from featx.probing.analyses.erasure import Eraser, save_erasers

    path = folder / "x.erasers.npz"
    erasers = {f"{pooling}/{layer}": Eraser("leace", *arrays) for layer, arrays in layers.items()}
    save_erasers(erasers, path)
    meta = {"model": "tiny", "model_sha256": model_sha256}
    (folder / "x.erase.json").write_text(json.dumps({"meta": meta}), encoding="utf-8")
    return path


def zero_rank(d: int) -> tuple:
    return np.zeros(d), np.zeros((d, 0)), np.zeros((0, d))

"""Fixtures of the edit tests (``featx/extraction/edits``): a bundle of the tiny BERT's topic at layer 1, and
erasers files written by hand in ``featx erase``'s format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def topic_bundle(split_features, tmp_path_factory) -> Path:
    """A logreg probe of the 3-class 'topic' at layer 1, mean pooling, on the tiny BERT (``split_features``)."""
    import featx

    output = tmp_path_factory.mktemp("edit-bundle") / "topic.featx"
    featx.fit(split_features, label="topic", layer="1", pooling="mean", output=output, folds=3)
    return output


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

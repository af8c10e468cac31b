"""Fixtures of the edit tests (``featx/extraction/edits``): a bundle of the tiny BERT's topic at layer 1."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def topic_bundle(split_features, tmp_path_factory) -> Path:
    """A logreg probe of the 3-class 'topic' at layer 1, mean pooling, on the tiny BERT (``split_features``)."""
    import featx

    output = tmp_path_factory.mktemp("edit-bundle") / "topic.featx"
    featx.fit(split_features, label="topic", layer="1", pooling="mean", output=output, folds=3)
    return output

"""Fixtures of the deploy tests: a probe fitted once per session on the root conftest's ``split_features``."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def fitted(split_features, tmp_path_factory):
    """A logreg probe of 'label' fitted with layer and pooling auto, and its bundle."""
    import featx

    output = tmp_path_factory.mktemp("bundle") / "model.featx"
    return featx.fit(split_features, label="label", output=output, folds=3)

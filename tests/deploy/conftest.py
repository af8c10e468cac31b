"""Fixtures of the deploy tests: a split features file of the tiny model, built once per session."""

from __future__ import annotations

import pytest
from support.deploy_data import make_split_features


@pytest.fixture(scope="session")
def split_features(tiny_model, tmp_path_factory):
    return make_split_features(tmp_path_factory.mktemp("deploy"), tiny_model)


@pytest.fixture(scope="session")
def fitted(split_features, tmp_path_factory):
    """A logreg probe of 'label' fitted with layer and pooling auto, and its bundle."""
    import featx

    output = tmp_path_factory.mktemp("bundle") / "model.featx"
    return featx.fit(split_features, label="label", output=output, folds=3)

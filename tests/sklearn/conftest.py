"""Fixtures of the scikit-learn tests: the deploy tests' split features file and a bundle fitted on it."""

from __future__ import annotations

import pytest
from support.deploy_data import make_split_features


@pytest.fixture(scope="module")
def split_features(tiny_model, tmp_path_factory):
    return make_split_features(tmp_path_factory.mktemp("sk-deploy"), tiny_model)


@pytest.fixture(scope="module")
def bundle(split_features, tmp_path_factory):
    import featx

    return featx.fit(split_features, label="label", layer="1", pooling="mean", folds=2,
                     output=tmp_path_factory.mktemp("sk-bundle") / "m.featx").path  # fmt: skip

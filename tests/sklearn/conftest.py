"""Fixtures of the scikit-learn tests: a bundle fitted on the root conftest's ``split_features`` (the deploy
tests' file, shared with them)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bundle(split_features, tmp_path_factory):
    import featx

    return featx.fit(split_features, label="label", layer="1", pooling="mean", folds=2,
                     output=tmp_path_factory.mktemp("sk-bundle") / "m.featx").path  # fmt: skip

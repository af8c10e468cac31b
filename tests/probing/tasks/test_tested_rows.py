"""The tested rows' digest (``rows_sha256``): the tested rows' texts and labels, nothing else."""

from types import SimpleNamespace

import numpy as np

from featx.probing.tasks.tested_rows import rows_sha256, text_keys

PLAN = SimpleNamespace(folds=[(np.array([0, 1]), np.array([2, 3]))])  # rows 2 and 3 are tested


def digest(texts, labels, pairs=None):
    keys = text_keys(texts, pairs, np.arange(len(texts)))
    return rows_sha256(keys.__getitem__, labels, PLAN)


def test_the_digest_covers_the_tested_rows_texts_and_labels_only():
    texts, labels = ["a", "b", "c", "d"], ["x", "y", "x", "y"]
    same = digest(texts, labels)
    assert digest(["other", "b", "c", "d"], ["y", "y", "x", "y"]) == same  # a training row changed
    assert digest(["a", "b", "c", "e"], labels) != same
    assert digest(texts, ["x", "y", "x", "x"]) != same
    assert digest(texts, labels, pairs=["", "", "bc", ""]) != digest(["a", "b", "cb", "d"], labels, ["", "", "c", ""])

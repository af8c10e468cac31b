"""``--baseline``: the checks of the second features file before anything is probed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from featx.errors import InputError
from featx.probing.baseline_checks import check_baseline
from featx.selection import parse_layer_specs


@pytest.mark.parametrize(
    ("stored", "error", "hint"),
    [
        (dict(layers=[0, 1]), r"does not store layer\(s\) \[2\]", "--layer 0,1, or extract the baseline"),
        (dict(poolings=["cls"]), r"does not store pooling\(s\) mean", "--pooling cls, or extract the baseline"),
        (dict(layers=[5]), r"does not store layer\(s\) \[0, 1, 2\]", "hint: extract the baseline with the same"),
    ],
)
def test_a_baseline_without_the_probed_layers_or_poolings_says_what_to_probe(stored, error, hint):
    """A --baseline file (a random-init or a smaller model) lacking a probed layer or pooling: the refusal names
    what both files store, or how to extract the baseline, where it gave no hint."""

    def file(**given):
        fields = dict(n_rows=4, attrs={}, ids=list("abcd"), layers=[0, 1, 2], poolings=["mean", "cls"])
        return SimpleNamespace(path="b.h5", **{**fields, **given})

    with pytest.raises(InputError, match=error) as refused:
        check_baseline(file(), file(**stored), parse_layer_specs("all", [0, 1, 2]), ["mean", "cls"], False)
    assert hint in str(refused.value)

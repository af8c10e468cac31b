"""featx.probe and featx.fit take a features file path: texts, a DataFrame or an array given instead is one
clear InputError naming what they take and where in-memory texts go, before anything is read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import featx
from featx.errors import InputError

GIVEN = {
    "a list of texts": (["a text", "another"], "list"),
    "a DataFrame": (pd.DataFrame({"text": ["a text"], "label": ["pos"]}), "DataFrame"),
    "an array": (np.zeros((2, 3)), "ndarray"),
}


@pytest.mark.parametrize("case", sorted(GIVEN))
@pytest.mark.parametrize("command", ["probe", "fit"])
def test_in_memory_input_is_one_clear_error(command, case):
    value, kind = GIVEN[case]
    with pytest.raises(InputError) as raised:
        getattr(featx, command)(value, label="label")
    error = raised.value
    assert str(error).startswith(f"featx.{command} takes a features file path (the .h5 file featx extract writes), ")
    assert str(error).split("\n")[0].endswith(f"not a {kind}")
    assert "featx.extract(corpus, output='feats.h5')" in error.hint and "featx.embed(texts)" in error.hint


def test_the_keyword_form_is_checked_too():
    with pytest.raises(InputError, match=r"^featx.probe takes a features file path .*, not a list"):
        featx.probe(features=["a text"], label="label")

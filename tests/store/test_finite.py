"""``finite_rows``: the exponent-bit test agrees with ``np.isfinite`` row by row, whatever the layout."""

import numpy as np
import pytest

from featx.store import finite, finite_rows


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_finite_rows_matches_isfinite(dtype, monkeypatch):
    monkeypatch.setattr(finite, "_CHUNK_BYTES", 1000)  # several chunks for the 300 rows
    values = np.random.default_rng(0).standard_normal((300, 7, 50)).astype(dtype)
    values[17, 3, 2], values[200, 0, 0], values[5, 6, 49], values[299, 0, 0] = np.inf, np.nan, -np.inf, np.nan
    values[40] = np.finfo(dtype).max  # the largest finite value is finite
    expected = np.isfinite(values).reshape(300, -1).all(axis=1)
    assert np.flatnonzero(~expected).tolist() == [5, 17, 200, 299]
    assert np.array_equal(finite_rows(values), expected)
    assert np.array_equal(finite_rows(values[::2]), expected[::2])  # not contiguous: np.isfinite
    assert np.array_equal(finite_rows(values[:, :, 0]), np.isfinite(values[:, :, 0]).all(axis=1))


def test_finite_rows_edge_shapes():
    assert finite_rows(np.zeros((0, 3, 4), np.float16)).shape == (0,)
    assert finite_rows(np.zeros((3, 0), np.float32)).tolist() == [True, True, True]
    assert finite_rows(np.array([[1, 2], [3, 4]])).tolist() == [True, True]  # integers are always finite
    assert finite_rows(np.array([np.nan, 1.0], np.float16)).tolist() == [False, True]

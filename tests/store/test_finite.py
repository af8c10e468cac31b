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


def test_the_chunked_scan_names_what_the_whole_read_names(tmp_path, monkeypatch):
    """``scan_layer`` reads a bounded block at a time, and its error is ``check_finite``'s on the whole layer: the
    first bad row (in a later block than the first) and every affected row counted, across blocks."""
    import h5py

    from featx.errors import StoreError

    values = np.random.default_rng(0).standard_normal((300, 3, 8)).astype(np.float16)
    values[130, 1, 2], values[131, 1, 0], values[290, 1, 7], values[5, 0, 0] = np.inf, np.nan, np.nan, np.nan
    with h5py.File(tmp_path / "f.h5", "w") as file:
        dataset = file.create_dataset("x", data=values, chunks=(16, 1, 8))
        monkeypatch.setattr(finite, "_SCAN_BYTES", 40 * 8 * 2)  # 40 rows asked: 32 read, whole chunks
        with pytest.raises(StoreError) as whole:
            finite.check_finite(values[:, 1], tmp_path, "layer 1")
        with pytest.raises(StoreError) as scanned:
            finite.scan_layer(dataset, 1, 300, tmp_path, "layer 1", "row")
        assert str(scanned.value) == str(whole.value)
        assert "(inf) in layer 1: first at row 130 (3 rows affected)" in str(scanned.value)
        finite.scan_layer(dataset, 2, 300, tmp_path, "layer 2", "row")  # a clean layer passes
        finite.scan_layer(dataset, 1, 130, tmp_path, "layer 1", "row")  # and so do the rows before the first bad one


def test_require_finite_checks_only_the_reads_named(tmp_path):
    """``FeatureFile.require_finite``: each read named (pooled, tokens, a site's) checked, with the error its read
    raises; a bad matrix not named is not read."""
    import h5py
    from support.store_files import write_store_file

    import featx
    from featx.errors import StoreError
    from featx.store import FeatureRead

    path, _ = write_store_file(tmp_path)
    with h5py.File(path, "r+") as file:
        file["pooled/mean"][3, 1, 0] = np.nan  # layer 2 (layers 0, 2)
        file["tokens/states"][7, 0, 1] = np.inf
        file["sites/ffn/pooled/cls"][9, 0, 0] = np.nan
    named = (
        (
            FeatureRead("pooled", 2, "mean"),
            lambda f: f.features("mean", 2),
            "'mean' features of layer 2: first at row 3",
        ),
        (FeatureRead("tokens", 0), lambda f: f.token_states(0), "token states of layer 0: first at token 7"),
        (FeatureRead("pooled", 2, "cls", "ffn"), lambda f: f.features("cls", 2, site="ffn"), "'ffn': first at row 9"),
    )
    with featx.open(path) as features:
        features.require_finite([FeatureRead("pooled", 0, "mean"), FeatureRead("pooled", 2, "cls")])
        for read, whole_read, said in named:
            with pytest.raises(StoreError, match=said) as scanned:
                features.require_finite([FeatureRead("pooled", 0, "cls"), read])
            with pytest.raises(StoreError) as whole:
                whole_read(features)
            assert str(scanned.value) == str(whole.value)

"""Property-based tests: the corpus readers round-trip arbitrary text, poolings equal a numpy reference."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from featx.extraction.forward.pooling import cls_pool, last_pool, max_pool, mean_pool
from featx.extraction.inputs.corpus import read_corpus
from featx.io import NUMBER, blank_text

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Any Unicode text but surrogates (not encodable) and NUL (not representable in HDF5 strings);
# quotes, commas, tabs, \r, \n, \u2028, emoji, right-to-left and control characters included.
characters = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
tricky = st.sampled_from(['"', ",", "\t", "\n", "\r", "\r\n", "\u2028", "\x85", "\ufeff", "\u202e", "\U0001f600", " "])
texts = st.lists(st.one_of(characters, tricky), min_size=1, max_size=30).map("".join)
labels = st.one_of(st.sampled_from(["pos", "neg", " pos ", "nan", "", "NA", "3", "10", "a/b"]), texts)


def _valid(rows) -> bool:
    """Rows the reader keeps as they are: no blank text (whitespace, control and format characters only: refused
    as empty) and not every text a number (a wrong --text-col)."""
    return not any(blank_text(text) for text, _ in rows) and not all(NUMBER.match(text) for text, _ in rows)


@pytest.mark.slow
@FAST
@given(
    rows=st.lists(st.tuples(texts, labels), min_size=1, max_size=15),
    fmt=st.sampled_from(["csv", "tsv", "jsonl"]),
    bom=st.booleans(),
    crlf=st.booleans(),
)
def test_reader_round_trips_arbitrary_text(tmp_path_factory, rows, fmt, bom, crlf):
    assume(_valid(rows))
    path = tmp_path_factory.mktemp("prop") / f"corpus.{fmt}"
    encoding = "utf-8-sig" if bom else "utf-8"
    with open(path, "w", newline="", encoding=encoding) as handle:
        if fmt == "jsonl":
            for text, label in rows:
                handle.write(
                    json.dumps({"text": text, "label": label}, ensure_ascii=False) + ("\r\n" if crlf else "\n")
                )
        else:
            # Python's writer quotes a field holding "\r" only if "\r" is in its line terminator; a bare
            # "\r" outside quotes is an (old Mac) line break to every reader, so quote all with "\n".
            writer = csv.writer(
                handle,
                delimiter="\t" if fmt == "tsv" else ",",
                lineterminator="\r\n" if crlf else "\n",
                quoting=csv.QUOTE_MINIMAL if crlf else csv.QUOTE_ALL,
            )
            writer.writerow(["text", "label"])
            writer.writerows(rows)
    corpus = read_corpus(path)
    assert corpus.texts == [text for text, _ in rows]
    column = corpus.labels["label"]
    for (_, label), code in zip(rows, column.codes, strict=False):
        value = label.strip()
        if not value:  # only the empty cell is missing by default ('nan', 'NA' are classes)
            assert code == -1
        else:
            assert column.names[code] == value


def _reference(states: np.ndarray, mask: np.ndarray, name: str) -> np.ndarray:
    """Row by row over real tokens only, in float64."""
    out = []
    for row, keep in zip(states, mask.astype(bool), strict=False):
        real = row[..., keep, :].astype(np.float64)
        out.append(
            {"cls": row[..., 0, :], "last": real[..., -1, :], "mean": real.mean(axis=-2), "max": real.max(axis=-2)}[
                name
            ]
        )
    return np.stack(out)


@st.composite
def batches(draw, right_padded: bool):
    batch = draw(st.integers(1, 5))
    tokens = draw(st.integers(1, 9))
    layers = draw(st.integers(0, 3))  # 0: no layer axis
    hidden = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    garbage = draw(st.sampled_from([0.0, 1e4, -1e4, float("nan"), float("inf"), float("-inf")]))
    rng = np.random.default_rng(seed)
    if right_padded:
        lengths = rng.integers(1, tokens + 1, size=batch)
        mask = np.arange(tokens)[None, :] < lengths[:, None]
    else:  # any mask with at least one real token per row
        mask = rng.random((batch, tokens)) < 0.5
        mask[np.arange(batch), rng.integers(0, tokens, size=batch)] = True
    shape = (batch, *([layers] if layers else []), tokens, hidden)
    states = rng.standard_normal(shape).astype(np.float32)
    expanded = mask.reshape(batch, *([1] if layers else []), tokens, 1)
    states = np.where(expanded, states, np.float32(garbage))  # padding must never leak into a result
    return states, mask


@FAST
@given(data=batches(right_padded=True), name=st.sampled_from(["cls", "mean", "max", "last"]))
def test_poolings_equal_numpy_reference_with_right_padding(data, name):
    states, mask = data
    function = {"cls": cls_pool, "mean": mean_pool, "max": max_pool, "last": last_pool}[name]
    pooled = function(torch.from_numpy(states), torch.from_numpy(mask.astype(np.int64))).numpy()
    expected = _reference(states, mask, name)
    assert pooled.shape == expected.shape and np.isfinite(pooled).all()
    np.testing.assert_allclose(pooled, expected, rtol=1e-5, atol=1e-6)


@FAST
@given(data=batches(right_padded=False), name=st.sampled_from(["mean", "max"]))
def test_mean_and_max_honour_any_mask(data, name):
    states, mask = data
    function = mean_pool if name == "mean" else max_pool
    pooled = function(torch.from_numpy(states), torch.from_numpy(mask)).numpy()
    np.testing.assert_allclose(pooled, _reference(states, mask, name), rtol=1e-5, atol=1e-6)


@FAST
@given(data=batches(right_padded=True), dtype=st.sampled_from([torch.float16, torch.bfloat16]))
def test_mean_in_half_precision_stays_close(data, dtype):
    states, mask = data
    states = np.where(np.isfinite(states), states, np.float32(0))  # only padding holds inf/NaN garbage
    pooled = mean_pool(torch.from_numpy(states).to(dtype), torch.from_numpy(mask)).float().numpy()
    expected = _reference(states.astype(np.float32), mask, "mean")
    tolerance = 1e-2 if dtype == torch.float16 else 4e-2
    np.testing.assert_allclose(pooled, expected, rtol=tolerance, atol=tolerance)

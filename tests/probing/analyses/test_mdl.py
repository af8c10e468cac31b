"""MDL online code: block schedule, planted signal compresses, noise does not, and featx probe --mdl."""

from __future__ import annotations

import numpy as np
import pytest

from featx.probing.analyses.mdl import (
    FRACTIONS,
    block_ends,
    held_out_splits,
    online_codelength,
    online_codelengths,
    transmission_order,
)
from featx.report import format_probe


def planted(n=300, d=8, strength=2.0, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    noise = rng.standard_normal((n, d)).astype(np.float32)
    signal = noise.copy()
    signal[np.arange(n), y] += strength * 2
    return y, noise, signal


def test_block_schedule_is_the_standard_one():
    assert FRACTIONS == (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
    assert block_ends(10_000) == [10, 20, 40, 80, 160, 320, 625, 1250, 2500, 5000, 10_000]
    ends = block_ends(50)
    assert ends[0] == 1 and ends[-1] == 50 and all(a < b for a, b in zip(ends, ends[1:], strict=False))


def test_planted_signal_compresses_and_noise_does_not():
    y, noise, signal = planted()
    noisy = online_codelength(noise, y, 3, seed=0)
    # the control task (Hewitt & Liang; a sentence label's: the labels permuted) sent beside the real labels, in the
    # same blocks: the real labels compress, the control's do not
    clear, control = online_codelengths(signal, [y, np.random.default_rng(7).permutation(y)], 3, seed=0)
    assert noisy.uniform_bits == pytest.approx(300 * np.log2(3))
    assert 0.85 < noisy.compression < 1.1
    assert clear.compression > 2.0 and clear.bits < noisy.bits
    assert 0.85 < control.compression < 1.1 and control.uniform_bits == clear.uniform_bits
    assert clear.block_ends == control.block_ends
    # the first block costs exactly its uniform code: a one-row corpus is just log2 K bits
    assert online_codelength(signal[:1], y[:1], 3).bits == pytest.approx(np.log2(3))


def test_codelength_is_deterministic_for_a_seed_and_uses_only_given_rows():
    y, _, signal = planted(n=120)
    rows = np.arange(0, 120, 2)
    first = online_codelength(signal, y, 3, rows, seed=1)
    assert first.bits == online_codelength(signal, y, 3, rows, seed=1).bits
    assert first.n_rows == 60
    other = signal.copy()
    other[1::2] = 0  # rows outside ``rows`` never matter
    assert online_codelength(other, y, 3, rows, seed=1).bits == pytest.approx(first.bits)
    # sent beside a control task's labels, the real labels' code is bit for bit the one they get alone
    real, control = online_codelengths(signal, [y, np.random.default_rng(2).permutation(y)], 3, rows, seed=1)
    assert real.bits == first.bits and control.bits != first.bits and control.n_rows == 60


@pytest.mark.slow
def test_probe_mdl_ranks_the_planted_layer_best(tiny_model, tmp_path):
    from support.planted import make_features, plant

    from featx.probing import probe

    path = make_features(tmp_path, tiny_model, n_rows=120)
    plant(path, {1: 2.0})
    result = probe(path, mdl=True, folds=3, jobs=1, control=False, output=tmp_path / "run")
    rows = result.table[result.table.kind == "single"].set_index("layer")
    assert rows.mdl_compression.idxmax() == 1 and rows.mdl_bits.idxmin() == 1
    assert rows.loc[1, "mdl_compression"] > 1.2
    assert 0.8 < rows.loc[0, "mdl_compression"] < 1.1 and 0.8 < rows.loc[2, "mdl_compression"] < 1.1
    assert "MDL bits" in format_probe(result)
    from featx.probing import load_results

    table, meta = load_results(tmp_path / "run.csv")
    assert meta["mdl"] and table.mdl_bits.notna().sum() == 3


def _sentences(n_sentences=200, seed=3):
    rng = np.random.default_rng(seed)
    return np.repeat(np.arange(n_sentences), rng.integers(1, 12, n_sentences))


def test_groups_are_sent_whole_and_blocks_end_between_sentences():
    groups = _sentences()
    rows = np.flatnonzero(groups % 5 != 0)  # a training part: some sentences left out entirely
    order, ends = transmission_order(rows, 4, groups=groups)
    assert sorted(order) == list(rows) and ends[-1] == len(rows)
    sent = groups[order]
    assert (np.diff(sent) != 0).sum() == len(np.unique(sent)) - 1  # each sentence's rows are contiguous
    for end in ends[:-1]:
        assert sent[end - 1] != sent[end]  # no block boundary inside a sentence
    within = order[sent == sent[0]]
    assert list(within) == sorted(within)  # a sentence keeps its word order
    again, _ = transmission_order(rows, 4, groups=groups)
    assert np.array_equal(order, again) and not np.array_equal(order, transmission_order(rows, 5, groups=groups)[0])
    # the block schedule counts sentences: the first block holds max(1, 0.1%) of them
    first = np.unique(sent[: ends[0]])
    assert len(first) == 1


@pytest.mark.parametrize("n_sentences", [30, 400])  # 3 folds below SMALL_ROWS rows, one holdout above
def test_holdouts_that_choose_c_never_split_a_sentence(n_sentences):
    groups = _sentences(n_sentences)
    y = np.random.default_rng(0).integers(0, 3, len(groups))
    splits = held_out_splits(y, 0, groups)
    assert splits and len(splits) == (3 if len(groups) < 500 else 1)
    for fit, val in splits:
        assert not set(groups[fit]) & set(groups[val]) and len(fit) + len(val) == len(groups)


def test_grouped_code_of_planted_words_compresses_and_of_noise_does_not():
    groups = _sentences(300)
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, len(groups))
    noise = rng.standard_normal((len(y), 8)).astype(np.float32)
    signal = noise.copy()
    signal[np.arange(len(y)), y] += 4.0
    # beside a word-type control task (each of 40 types one random label), sent sentence by sentence in the same blocks
    control_labels = rng.integers(0, 3, 40)[rng.integers(0, 40, len(y))]
    clear, control = online_codelengths(signal, [y, control_labels], 3, seed=0, groups=groups)
    noisy = online_codelength(noise, y, 3, seed=0, groups=groups)
    assert clear.compression > 2.0 and 0.85 < noisy.compression < 1.1
    assert control.compression < 1.1 and control.block_ends == clear.block_ends
    assert clear.uniform_bits == pytest.approx(len(y) * np.log2(3))

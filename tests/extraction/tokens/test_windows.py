"""``--long window``: long texts run as overlapping windows, stitched token by token, pooled over the whole text."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.tiny import SENTENCES, build_tiny_bert, write_csv
from transformers import AutoModel, AutoTokenizer

import featx
from featx.errors import InputError
from featx.extraction import ExtractConfig, extract
from featx.extraction.tokens.long_windows import split_row, window_starts

LONG = " ".join(["the cat loved the film and the dog saw new books today"] * 4)  # ~50 tokens
MAX_POSITIONS = 16


@pytest.fixture(scope="module")
def short_bert(tmp_path_factory):
    """A tiny BERT whose maximum is 16 tokens."""
    return build_tiny_bert(tmp_path_factory.mktemp("short-bert"), max_positions=MAX_POSITIONS)


@pytest.fixture
def long_corpus(tmp_path):
    rows = SENTENCES[:4] + [(LONG, "pos", "past", "train"), (LONG + " blue", "neg", "past", "test")]
    return write_csv(tmp_path / "long.csv", rows)


def run(corpus, model, output, **options):
    return extract(
        ExtractConfig(corpus=corpus, output=output, model=str(model), progress=False, store_dtype="float32", **options)
    )


@pytest.mark.parametrize("n_content,budget,stride", [(10, 4, 1), (11, 4, 2), (30, 7, 3), (8, 7, 0), (5, 7, 2)])
def test_each_token_comes_from_its_most_central_window(n_content, budget, stride):
    ids = np.arange(100, 100 + n_content)
    row = split_row(np.r_[1, ids, 2], 1, 1, budget, stride)
    starts = window_starts(n_content, budget, stride)
    assert row.input_ids.shape == (len(starts), 2 + min(budget, n_content))
    assert (row.input_ids[:, 0] == 1).all() and (row.input_ids[:, -1] == 2).all()
    stitched = row.input_ids[row.owner, row.position]
    np.testing.assert_array_equal(stitched, np.r_[1, ids, 2])  # every token exactly once, in order
    assert (np.diff(row.owner) >= 0).all()
    assert starts[-1] + min(budget, n_content) == n_content and starts[0] == 0
    for j in range(n_content):  # brute force: no window holds token j farther from its edges
        margins = [min(j - s, s + budget - 1 - j) for s in starts if s <= j < s + budget]
        chosen = starts[row.owner[j + 1]]
        assert min(j - chosen, chosen + budget - 1 - j) == max(margins)


def test_windowed_text_pools_over_the_stitched_token_states(short_bert, long_corpus, tmp_path):
    summary = run(long_corpus, short_bert, tmp_path / "w.h5", long="window", stride=4, tokens=True)
    assert summary.windowed_rows == 2 and summary.truncated_rows == 0
    assert "2 windowed" in summary.line()
    tokenizer = AutoTokenizer.from_pretrained(str(short_bert))
    model = AutoModel.from_pretrained(str(short_bert), dtype=torch.float32, attn_implementation="eager").eval()
    with featx.open(summary.output) as features:
        assert features.attrs["long_inputs"] == "window" and features.attrs["stride"] == 4
        for row in (4, 5):
            ids = tokenizer(LONG + (" blue" if row == 5 else ""))["input_ids"]
            assert features.n_kept[row] == len(ids) > MAX_POSITIONS
            windows = split_row(np.asarray(ids), 1, 1, MAX_POSITIONS - 2, 4)
            with torch.no_grad():
                hidden = model(input_ids=torch.from_numpy(windows.input_ids), output_hidden_states=True).hidden_states
            for layer in features.layers:
                expected = hidden[layer][windows.owner, windows.position].numpy()  # (tokens, hidden)
                tokens = features.token_states(layer)[features.token_offsets[row] : features.token_offsets[row + 1]]
                np.testing.assert_allclose(tokens, expected, atol=1e-5, rtol=1e-5)
                np.testing.assert_allclose(features.features("mean", layer)[row], expected.mean(0), atol=1e-5)
                np.testing.assert_allclose(features.features("max", layer)[row], expected.max(0), atol=1e-5)
                np.testing.assert_allclose(features.features("cls", layer)[row], hidden[layer][0, 0], atol=1e-5)
                np.testing.assert_allclose(features.features("last", layer)[row], hidden[layer][-1, -1], atol=1e-5)


def test_short_rows_are_as_with_truncation_and_passes_do_not_matter(short_bert, long_corpus, tmp_path):
    truncated = run(long_corpus, short_bert, tmp_path / "t.h5")
    windowed = run(long_corpus, short_bert, tmp_path / "w.h5", long="window", stride=4)
    one_window_a_pass = run(long_corpus, short_bert, tmp_path / "p.h5", long="window", stride=4, max_tokens=16)
    with featx.open(truncated.output) as t, featx.open(windowed.output) as w, featx.open(one_window_a_pass.output) as p:
        assert t.truncated[4:].all() and t.fingerprint != w.fingerprint
        for layer in t.layers:
            for pooling in t.poolings:
                np.testing.assert_allclose(w.features(pooling, layer)[:4], t.features(pooling, layer)[:4], atol=1e-5)
                np.testing.assert_allclose(p.features(pooling, layer), w.features(pooling, layer), atol=1e-5)


def test_window_options_are_checked_before_the_model_runs(short_bert, long_corpus, tmp_path):
    with pytest.raises(InputError, match="--long 'slide'"):
        ExtractConfig(corpus=long_corpus, long="slide")
    with pytest.raises(InputError, match="--stride applies to --long window only"):
        ExtractConfig(corpus=long_corpus, stride=4)
    with pytest.raises(InputError, match="--stride 14 must be smaller than the 14 text tokens"):
        run(long_corpus, short_bert, tmp_path / "x.h5", long="window", stride=14)
    with pytest.raises(InputError, match="a window of 3 tokens leaves 1 token for text besides 2 special tokens"):
        run(long_corpus, short_bert, tmp_path / "x.h5", long="window", max_length=3)  # said: no room for text


def test_dry_run_estimate_counts_windowed_rows(short_bert, long_corpus, tmp_path):
    from featx.extraction.dryrun.estimation import estimate

    config = ExtractConfig(
        corpus=long_corpus, output=tmp_path / "e.h5", model=str(short_bert), long="window", stride=4, progress=False
    )
    result = estimate(config)
    assert result.windowed_rows == 2 and result.truncated_rows == 0
    assert result.seconds is not None and result.seconds > 0
    assert "2 run in overlapping windows" in result.format()
    only_long = write_csv(tmp_path / "only-long.csv", [(LONG, "pos", "past", "train")])
    assert estimate(config, corpus=only_long).seconds > 0


def test_windowed_rows_record_sites_too(short_bert, long_corpus, tmp_path):
    """Hooked sites are stitched like hidden: short rows as with truncation, long rows pooled over every token."""
    truncated = run(long_corpus, short_bert, tmp_path / "t.h5", sites="ffn", poolings="mean")
    windowed = run(long_corpus, short_bert, tmp_path / "w.h5", sites="ffn", poolings="mean", long="window")
    with featx.open(truncated.output) as t, featx.open(windowed.output) as w:
        for layer in w.site_layers("ffn"):
            np.testing.assert_allclose(
                w.features("mean", layer, site="ffn")[:4], t.features("mean", layer, site="ffn")[:4], atol=1e-5
            )
            assert not np.allclose(w.features("mean", layer, site="ffn")[4], t.features("mean", layer, site="ffn")[4])


def test_windowed_rows_commit_by_time_and_resume_to_the_same_file(short_bert, long_corpus, tmp_path, monkeypatch):
    """Long rows run as steps of their own after a commit block's batches: a commit after every step, a kill in the
    middle and a resume give the file of one uninterrupted run."""
    from featx.errors import Interrupted
    from featx.store import FeatureWriter

    options = dict(long="window", stride=2, tokens=True, commit_seconds=1e-9, batch_size=2)
    # The same command uninterrupted: another --batch-size would change the matrix shapes, and on some CPUs
    # (AVX-512 oneDNN kernels) that moves fp32 results by one unit in the last place.
    whole = run(long_corpus, short_bert, tmp_path / "whole.h5", **options)
    original, calls = FeatureWriter.commit_batches, {"n": 0}

    def kill_on_third(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FeatureWriter, "commit_batches", kill_on_third)
    with pytest.raises(Interrupted):
        run(long_corpus, short_bert, tmp_path / "resumed.h5", **options)
    monkeypatch.setattr(FeatureWriter, "commit_batches", original)
    resumed = run(long_corpus, short_bert, tmp_path / "resumed.h5", **options)
    assert resumed.status == "resumed" and resumed.windowed_rows == whole.windowed_rows == 2
    with featx.open(whole.output) as a, featx.open(resumed.output) as b:
        for pooling in a.poolings:
            for layer in a.layers:
                np.testing.assert_array_equal(a.features(pooling, layer), b.features(pooling, layer))
        np.testing.assert_array_equal(a.token_states(2), b.token_states(2))

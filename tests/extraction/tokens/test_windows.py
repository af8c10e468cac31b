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
from featx.extraction.tokens.long_windows import (
    GROUP_PASSES,
    WindowGroup,
    split_row,
    window_counts,
    window_groups,
    window_passes,
    window_starts,
    window_tokens,
)

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
    # the tokens the row puts through the model (extract's summary and progress rate): its windows', overlapping
    assert window_tokens(np.asarray([n_content + 2]), budget + 2, budget, stride)[0] == row.input_ids.size
    assert WindowGroup([row], [None]).n_tokens == row.input_ids.size
    for j in range(n_content):  # brute force: no window holds token j farther from its edges
        margins = [min(j - s, s + budget - 1 - j) for s in starts if s <= j < s + budget]
        chosen = starts[row.owner[j + 1]]
        assert min(j - chosen, chosen + budget - 1 - j) == max(margins)


def test_windowed_text_pools_over_the_stitched_token_states(short_bert, long_corpus, tmp_path):
    summary = run(long_corpus, short_bert, tmp_path / "w.h5", long="window", stride=4, tokens=True)
    assert summary.windowed_rows == 2 and summary.truncated_rows == 0
    run_tokens = 0  # the windows' tokens of the long rows: the summary counted their stored tokens
    assert "2 windowed" in summary.line()
    tokenizer = AutoTokenizer.from_pretrained(str(short_bert))
    model = AutoModel.from_pretrained(str(short_bert), dtype=torch.float32, attn_implementation="eager").eval()
    with featx.open(summary.output) as features:
        assert features.attrs["long_inputs"] == "window" and features.attrs["stride"] == 4
        for row in (4, 5):
            ids = tokenizer(LONG + (" blue" if row == 5 else ""))["input_ids"]
            assert features.n_kept[row] == len(ids) > MAX_POSITIONS
            windows = split_row(np.asarray(ids), 1, 1, MAX_POSITIONS - 2, 4)
            run_tokens += windows.input_ids.size - len(ids)
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
        assert summary.tokens == int(features.n_kept.sum()) + run_tokens > int(features.n_kept.sum())


# One family of the zoo per way a window differs (each run costs suite time; the whole zoo matched within 1e-6 when
# checked by script): the special layouts below, featx's native encoders (RoBERTa, MPNet's relative positions),
# ModernBERT's local attention, and an encoder-decoder's encoder (BART).
WINDOW_FAMILIES = ["gpt2", "t5-encoder", "llama", "roberta", "mpnet", "modernbert", "bart-encoder"]


@pytest.mark.parametrize("name", WINDOW_FAMILIES)
def test_windows_of_each_layout_equal_each_windows_plain_forward(name, family_models, long_corpus, tmp_path):
    """Windows keep the tokenizer's own specials: a leading and a trailing one (BERT's ``[CLS]`` and ``[SEP]``, above,
    RoBERTa's ``<s>`` and ``</s>``), none (GPT-2), a trailing ``</s>`` alone (T5), a leading BOS alone (Llama). Each
    long row's poolings equal those of the stitched states of a plain transformers forward of each window (fp32,
    1e-4 of the activations' scale); the long rows run in passes together, beside short neighbours."""
    from support.families import BY_NAME, reference_model

    from featx.extraction.tokens.tokenize import special_layout

    family = BY_NAME[name]
    folder = family_models(family)
    summary = run(long_corpus, folder, tmp_path / "w.h5", long="window", max_length=MAX_POSITIONS, stride=3)
    tokenizer, model = AutoTokenizer.from_pretrained(str(folder)), reference_model(family, folder)
    lead, trail = special_layout(tokenizer)
    parts = family.template.split()
    assert (lead, trail) == (parts.index("$A"), len(parts) - 1 - parts.index("$A"))
    worst = 0.0
    with featx.open(summary.output) as features, torch.no_grad():
        long_rows = np.flatnonzero(features.n_kept > MAX_POSITIONS)
        assert {4, 5} <= set(long_rows) and summary.windowed_rows == len(long_rows)
        for row in long_rows:
            ids = np.asarray(tokenizer(features.texts[row])["input_ids"])
            windows = split_row(ids, lead, trail, MAX_POSITIONS - lead - trail, 3)
            assert windows.input_ids.shape[1] == MAX_POSITIONS
            assert (windows.input_ids[:, MAX_POSITIONS - trail :] == ids[len(ids) - trail :]).all()  # T5's </s>
            np.testing.assert_array_equal(windows.input_ids[windows.owner, windows.position], ids)  # each token once
            hidden = model(input_ids=torch.from_numpy(windows.input_ids), output_hidden_states=True).hidden_states
            for layer in features.layers:
                states = hidden[layer][windows.owner, windows.position].double().numpy()
                scale = np.abs(states).max()
                for pooling, expected in (("mean", states.mean(0)), ("max", states.max(0)), ("last", states[-1])):
                    difference = np.abs(features.features(pooling, layer)[row] - expected).max()
                    worst = max(worst, difference)
                    assert difference <= 1e-4 * scale, pooling
    print(family.name, f"windows {worst:.1e}")


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
    tokenizer = AutoTokenizer.from_pretrained(str(short_bert))  # the windows' tokens, as extract's summary counts
    lengths = [len(tokenizer(text)["input_ids"]) for text, *_ in SENTENCES[:4] + [(LONG,), (LONG + " blue",)]]
    assert result.tokens == window_tokens(np.asarray(lengths), MAX_POSITIONS, MAX_POSITIONS - 2, 4).sum()
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


@pytest.mark.parametrize(
    "counts,per_pass", [([4, 4, 4, 5, 5, 5], 3), ([8, 8, 8], 4), ([9] * 20, 4), ([40, 3, 2, 1, 7], 4), ([1], 1)]
)
def test_long_rows_share_passes_in_steps_of_whole_rows(counts, per_pass):
    counts = np.asarray(counts)
    groups = window_groups(counts, per_pass)
    np.testing.assert_array_equal(np.sort(np.concatenate(groups)), np.arange(len(counts)))  # each row once
    cap = per_pass * GROUP_PASSES
    for group in groups:  # at most GROUP_PASSES passes, unless one row alone needs more
        assert counts[group].sum() <= cap or len(group) == 1
    assert [int(counts[group[0]]) for group in groups] == sorted((int(counts[g[0]]) for g in groups), reverse=True)
    if len(counts) == 3:  # rows that fill whole passes by themselves run as before: one step each
        assert [len(group) for group in groups] == [1, 1, 1]


def test_each_pass_gives_each_row_its_own_stitched_tokens():
    rows = [split_row(np.r_[1, np.arange(100, 100 + n), 2], 1, 1, 7, 2) for n in (30, 8, 19)]
    taken: list[list[np.ndarray]] = [[] for _ in rows]
    windows = np.concatenate([row.input_ids for row in rows])
    done = []
    for step in window_passes(rows, 3):
        assert step.last - step.first <= 3
        for index, window, at in step.takes:
            taken[index].append(windows[step.first : step.last][window, at])
        done += step.done
    assert done == [0, 1, 2]  # each row done once, in order, as its last window goes through
    for row, pieces in zip(rows, taken, strict=True):
        np.testing.assert_array_equal(np.concatenate(pieces), row.input_ids[row.owner, row.position])


STEPS = dict(long="window", stride=2, tokens=True, commit_seconds=1e-9, batch_size=3)  # 3 windows a pass


def long_rows(n):
    """``n`` long rows (4 or 5 windows of 16 tokens with --stride 2; with ``STEPS``, 7 rows run in steps of 2, 3
    and 2 rows, whose passes hold windows of two rows)."""
    extra = ["", " blue", " the cat", " blue cat saw the film", " the dog saw the film and the cat loved", " new"]
    return [(LONG + text, "pos" if i % 2 else "neg", "past", "train") for i, text in enumerate([*extra, " blue blue"])][
        :n
    ]


@pytest.fixture(scope="module")
def steps_run(short_bert, tmp_path_factory):
    """Two short rows and 7 long ones run uninterrupted with ``STEPS``, by ``short_bert`` with a tokenizer that
    pads on the left (featx pads rows itself, on the right): ``(corpus, model, summary)``."""
    import json
    import shutil

    folder = tmp_path_factory.mktemp("steps")
    model = shutil.copytree(short_bert, folder / "left-bert")
    config = json.loads((model / "tokenizer_config.json").read_text())
    (model / "tokenizer_config.json").write_text(json.dumps({**config, "padding_side": "left"}))
    corpus = write_csv(folder / "long.csv", SENTENCES[:2] + long_rows(7))
    return corpus, model, run(corpus, model, folder / "whole.h5", **STEPS)


def test_a_long_row_has_the_same_features_alone_and_among_others(short_bert, steps_run, tmp_path):
    """A long row whose windows share passes with its neighbours' has the features of the row extracted alone,
    whatever the tokenizer's padding side."""
    _, _, among = steps_run
    alone = run(write_csv(tmp_path / "alone.csv", long_rows(2)[1:]), short_bert, tmp_path / "alone.h5", **STEPS)
    with featx.open(among.output) as among_file, featx.open(alone.output) as alone_file:
        counts = window_counts(among_file.n_kept[2:], 1, 1, MAX_POSITIONS - 2, 2)
        step = list(next(group for group in window_groups(counts, 3) if 1 in group))  # row 3 is long row 1
        bounds = np.cumsum(np.r_[0, counts[step]])[step.index(1) :][:2]  # its first window, the next row's first
        assert (bounds % 3 != 0).any()  # a pass of 3 windows holds some of its windows and a neighbour's
        assert among_file.n_kept[3] == alone_file.n_kept[0] > MAX_POSITIONS
        first, last = among_file.token_offsets[3], among_file.token_offsets[4]
        for layer in among_file.layers:
            for pooling in among_file.poolings:
                np.testing.assert_allclose(
                    among_file.features(pooling, layer)[3], alone_file.features(pooling, layer)[0], atol=1e-6, rtol=0
                )
            np.testing.assert_allclose(
                among_file.token_states(layer)[first:last], alone_file.token_states(layer), atol=1e-6, rtol=0
            )


def test_a_kill_inside_a_step_of_long_rows_resumes_to_the_same_file(steps_run, tmp_path, monkeypatch):
    """A kill in the middle of the third step of long rows, in a pass holding windows of two rows, leaves only
    whole steps committed (the short rows' batch and the first step, committed by time once the next had run), and
    the resumed file, which reads the first step's rows back, is the uninterrupted one."""
    import h5py

    from featx.errors import Interrupted
    from featx.extraction.forward import runner
    from featx.store import partial_path

    corpus, model, whole = steps_run
    real, steps = runner.window_passes, []

    def killed_in_third_step(rows, per_pass):
        steps.append(len(rows))
        for number, step in enumerate(real(rows, per_pass)):
            if len(steps) == 3 and number == 1:
                assert len(rows) > 1 and len(step.takes) > 1  # a pass holding windows of two rows
                raise KeyboardInterrupt
            yield step

    monkeypatch.setattr(runner, "window_passes", killed_in_third_step)
    output = tmp_path / "resumed.h5"
    with pytest.raises(Interrupted):
        run(corpus, model, output, **STEPS)
    with h5py.File(partial_path(output), "r") as partial:  # [commit block start, batches committed inside it]
        assert partial["progress/window"][()].tolist() == [0, 2]
    monkeypatch.undo()
    resumed = run(corpus, model, output, **STEPS)
    assert resumed.status == "resumed"
    with featx.open(whole.output) as a, featx.open(resumed.output) as b:
        for pooling in a.poolings:
            for layer in a.layers:
                np.testing.assert_array_equal(a.features(pooling, layer), b.features(pooling, layer))
        np.testing.assert_array_equal(a.token_states(2), b.token_states(2))

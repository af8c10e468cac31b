"""featx extract --dry-run: the estimate matches the real extraction, writes nothing, warns on disk."""

from __future__ import annotations

import re
from collections import namedtuple

import pytest
from click.testing import CliRunner
from support.tiny import SENTENCES, WORDS, write_csv

import featx
from featx.cli import main
from featx.extraction.dryrun import estimation


@pytest.mark.parametrize("tokens", [False, True])
def test_dry_run_size_matches_the_real_file(tiny_model, tmp_path, tokens):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES * 30)
    output = tmp_path / "c.h5"
    guess = featx.estimate(corpus, model=str(tiny_model), output=output, tokens=tokens, calibrate=False)
    assert not output.exists() and guess.seconds is None
    summary = featx.extract(corpus, model=str(tiny_model), output=output, tokens=tokens, progress=False)
    assert guess.rows == summary.rows == 360 and guess.tokens == summary.tokens
    assert guess.truncated_rows == summary.truncated_rows
    assert guess.file_bytes == pytest.approx(summary.file_bytes, rel=0.05)
    assert (guess.token_bytes > guess.pooled_bytes) == tokens


def test_cli_dry_run_prints_the_estimate_and_a_calibrated_time(tiny_model, tmp_path):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    result = CliRunner().invoke(main, ["extract", str(corpus), "--model", str(tiny_model), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "rows 12," in result.output and "output size" in result.output and "peak memory" in result.output
    assert "expected time" in result.output and "calibrated on" in result.output
    assert "3 layers x 32 dims" in result.output  # the tiny model: embeddings + 2 blocks, 32 wide
    assert not (tmp_path / "c.features.h5").exists()
    one = CliRunner().invoke(main, ["extract", str(corpus), "--model", str(tiny_model), "--layers", "1", "--dry-run"])
    assert ": 1 layer x 32 dims" in one.output, one.output


def test_warns_when_the_output_would_not_fit_on_disk(tiny_model, tmp_path, monkeypatch):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(estimation.shutil, "disk_usage", lambda path: Usage(10_000, 9_000, 1_000))
    guess = featx.estimate(corpus, model=str(tiny_model), tokens=True, calibrate=False)
    assert any("token-level storage needs" in warning for warning in guess.warnings)
    assert "warning:" in guess.format()


def test_dry_run_counts_extra_sites(tiny_model, tmp_path):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES * 10)
    output = tmp_path / "s.h5"
    guess = featx.estimate(corpus, model=str(tiny_model), output=output, sites="hidden,ffn", calibrate=False)
    summary = featx.extract(corpus, model=str(tiny_model), output=output, sites="hidden,ffn", progress=False)
    assert guess.file_bytes == pytest.approx(summary.file_bytes, rel=0.05)
    hidden_only = featx.estimate(corpus, model=str(tiny_model), output=output, calibrate=False)
    assert guess.pooled_bytes > hidden_only.pooled_bytes


def test_dry_run_counts_both_sides_of_separate_pairs_as_the_run_does(tiny_model, tmp_path):
    """Separate mode encodes each side on its own: the tokens and truncated rows are both sides', as the
    run's summary counts them (side b alone is long here)."""
    rows = [(text, f"{text} " + " ".join(WORDS[: 4 + index]), "pos") for index, (text, *_) in enumerate(SENTENCES)]
    corpus = write_csv(tmp_path / "pairs.csv", rows, header=("first", "second", "label"))
    options = dict(model=str(tiny_model), text_col="first", text_pair_col="second", pair_mode="separate", max_length=12)
    output = tmp_path / "pairs.h5"
    guess = featx.estimate(corpus, output=output, calibrate=False, **options)
    summary = featx.extract(corpus, output=output, progress=False, **options)
    assert summary.truncated_rows > 0
    assert guess.tokens == summary.tokens and guess.truncated_rows == summary.truncated_rows


def test_a_shards_dry_run_estimates_that_shards_rows(tiny_model, tmp_path):
    """``--shards 3 --shard-index 1 --dry-run`` estimates what that shard's run extracts, not the whole corpus."""
    corpus = write_csv(tmp_path / "c.csv", SENTENCES * 5)
    output = tmp_path / "c.h5"
    options = dict(model=str(tiny_model), output=output, shards=3, shard_index=1)
    guess = featx.estimate(corpus, calibrate=False, **options)
    summary = featx.extract(corpus, progress=False, **options)
    whole = featx.estimate(corpus, model=str(tiny_model), output=output, calibrate=False)
    assert guess.rows == summary.rows < whole.rows and guess.tokens == summary.tokens


def test_dry_run_counts_the_word_vectors_whole_chunks(tiny_model, tmp_path, monkeypatch):
    """Word vectors are stored in whole chunks, like the pooled rows: the estimate rounds the words up too (it
    counted the words alone, 12% under the real file on 150 sentences of GUM with MiniLM)."""
    from support.report_runs import treebank

    import featx.store.hdf5

    corpus = treebank(tmp_path / "toy-train.conllu", 40, 0, "s")
    n_words = sum(1 for line in corpus.read_text().splitlines() if line and not line.startswith("#"))
    monkeypatch.setattr(featx.store.hdf5, "CHUNK_BYTES", 32 * 4 * (n_words - 1))  # 2 chunks: about 2x the words
    options = dict(model=str(tiny_model), output=tmp_path / "w.h5", store_dtype="float32")
    guess = featx.estimate(corpus, calibrate=False, **options)
    summary = featx.extract(corpus, progress=False, **options)
    assert summary.words == n_words
    assert guess.file_bytes == pytest.approx(summary.file_bytes, rel=0.05)


def test_long_window_estimate_plans_the_runs_windows_and_times_them_at_full_length(tiny_model, tmp_path, monkeypatch):
    """``--long window``: the estimate counts the windows and forward passes the run makes (at most ``--batch-size``
    windows a pass, several texts' windows sharing one, a step's last pass part-full), and its calibration times
    real windows of the model's length as the run runs them, not the short rows' batches alone."""
    import torch

    from featx.extraction.forward import runner

    text = " ".join(WORDS[:40])
    rows = [*SENTENCES[:3]] + [
        (" ".join([text] * (1 + n % 3)) + f" {WORDS[n]}", "pos", "past", "train") for n in range(5)
    ]
    corpus = write_csv(tmp_path / "long.csv", rows)
    options = dict(model=str(tiny_model), long="window", max_length=16, stride=2, batch_size=3, poolings="mean")
    real, passes = runner.window_passes, []

    def recorded(group_rows, per_pass):
        for step in real(group_rows, per_pass):
            passes.append(step.last - step.first)
            yield step

    monkeypatch.setattr(runner, "window_passes", recorded)
    featx.extract(corpus, output=tmp_path / "long.h5", progress=False, **options)
    ran, passes[:] = list(passes), []
    planned = featx.estimate(corpus, output=tmp_path / "e.h5", calibrate=False, **options)
    assert not passes and planned.windowed_rows == 5 and max(ran) == 3 and min(ran) < 3
    assert (planned.windows, planned.window_passes) == (sum(ran), len(ran))
    assert f"5 run in overlapping windows: {sum(ran)} windows in {len(ran)} forward passes" in planned.format()

    widths, forward = [], runner.Runner._forward

    def measured(self, input_ids: torch.Tensor, *args, **kwargs):
        widths.append(input_ids.shape[1])
        return forward(self, input_ids, *args, **kwargs)

    monkeypatch.setattr(runner.Runner, "_forward", measured)
    timed = featx.estimate(corpus, output=tmp_path / "e.h5", **options)
    window_widths = widths[len(widths) - len(passes) :]  # the window passes come after the short rows' batches
    assert passes and window_widths == [16] * len(passes) and max(widths[: -len(passes)]) < 16
    timed_windows = int(re.search(r"windows calibrated on (\d+) of (\d+)", timed.calibration).group(1))
    assert f"of {sum(ran)}:" in timed.calibration and sum(passes) > timed_windows >= 3  # and a warm-up
    assert timed.seconds > 0


def test_estimates_sharing_loaded_models_load_each_model_once(tiny_model, tmp_path, monkeypatch):
    """``LoadedModels`` (a study's dry run): the same load kept for the next estimate, whatever its corpus or
    poolings; another model (random weights), or the same prepared otherwise (a Runner keeps hooked modules
    unfused: other sites), loaded again; a model that fails to load fails again untried."""
    from featx.errors import ModelError
    from featx.extraction import ExtractConfig, LoadedModels
    from featx.extraction.model import loading

    loads: list[str] = []
    load = loading.load_configured
    monkeypatch.setattr(loading, "load_configured", lambda config: loads.append(config.model) or load(config))
    corpus, other = write_csv(tmp_path / "c.csv", SENTENCES), write_csv(tmp_path / "o.csv", SENTENCES * 2)
    models = LoadedModels()
    config = ExtractConfig(corpus=str(corpus), model=str(tiny_model))
    first, seconds = models.load(config)
    kept, none = models.load(config.replace(corpus=str(other), poolings="cls"))
    assert kept is first and seconds > 0 and none is None and len(loads) == 1
    alone = featx.estimate(other, model=str(tiny_model), calibrate=False)
    shared = featx.estimate(other, model=str(tiny_model), calibrate=False, models=models)
    assert (shared.rows, shared.tokens, shared.file_bytes) == (alone.rows, alone.tokens, alone.file_bytes)
    assert len(loads) == 2 and models.load(config.replace(random_init=True))[0] is not first and len(loads) == 3
    assert models.load(config.replace(sites="hidden,ffn"))[1] is not None and len(loads) == 4
    (tmp_path / "empty").mkdir()
    for _ in range(2):
        with pytest.raises(ModelError, match="no config.json"):
            models.load(config.replace(model=str(tmp_path / "empty")))
    assert len(loads) == 5

"""``ExtractConfig``: every option validated once, on creation, before anything is read or loaded; never mutated."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

import featx
from featx.cli import main
from featx.errors import InputError
from featx.extraction import ExtractConfig, make_config
from featx.options import command_line

BAD = [
    ({"batch_size": 0}, r"--batch-size 0 must be a whole number of at least 1"),
    ({"batch_size": -3}, r"--batch-size -3"),
    ({"max_tokens": 0}, r"--max-tokens 0 must be"),
    ({"commit_rows": -1}, r"--commit-rows -1 must be"),
    ({"max_length": 1}, r"--max-length 1 must be a whole number of at least 2"),
    ({"store_dtype": "int8"}, r"--store-dtype 'int8' is not understood"),
    ({"dtype": "float64"}, r"--dtype 'float64' is not understood"),
    ({"encoding": "klingon"}, r"unknown encoding 'klingon'"),
    ({"text_col": " "}, r"--text-col is empty"),
    ({"output": "out.csv"}, r"should end in .h5"),
    ({"output": "out/.h5"}, r"output out/\.h5 has no name before its \.h5"),
    ({"shards": 2}, r"--shards and --shard-index go together"),
    ({"shards": 2, "shard_index": 2}, r"--shard-index 2 is out of range"),
    ({"init_seed": 3}, r"^--init-seed 3 seeds the random weights of --random-init, and this run keeps the model's own"),
    (
        {"intervene_seed": 2},
        r"^--intervene-seed 2 seeds the directions of --intervene random:RANK@L, and this run has no",
    ),
]


def test_the_seeds_are_taken_where_their_randomness_is():
    assert ExtractConfig(corpus="corpus.csv", random_init=True, init_seed=3).init_seed == 3
    assert ExtractConfig(corpus="corpus.csv", intervene="random:2@1", intervene_seed=2).intervene_seed == 2


@pytest.mark.parametrize("options, message", BAD, ids=[next(iter(options)) for options, _ in BAD])
def test_bad_options_are_refused_on_creation(options, message):
    with pytest.raises(InputError, match=message), command_line():  # worded for the command line
        ExtractConfig(corpus="corpus.csv", **options)


# One violation each, as a Python caller reads it (the keyword it gave, the value as Python spells it) and as the
# command line prints it (the flag): the builders' own wording, a hand-written check's, a flag left in a check's text.
PHRASED = [
    (
        {"batch_size": 0},
        "batch_size=0 must be a whole number of at least 1",
        ["--batch-size", "0"],
        "--batch-size 0 must",
    ),
    (
        {"max_length": 1},
        "max_length=1 must be a whole number of at least 2",
        ["--max-length", "1"],
        "--max-length 1 must",
    ),
    (
        {"store_dtype": "int8"},
        "store_dtype='int8' is not understood",
        ["--store-dtype", "int8"],
        "--store-dtype 'int8'",
    ),
    ({"dtype": "f64"}, "dtype='f64' is not understood", ["--dtype", "f64"], "--dtype 'f64' is not understood"),
    (
        {"stride": 4},
        "stride applies to long='window' only",
        ["--stride", "4"],
        "--stride applies to --long window only",
    ),
    (
        {"init_seed": 3},
        "init_seed=3 seeds the random weights of random_init=True,",
        ["--init-seed", "3"],
        "--init-seed 3 seeds the random weights of --random-init,",
    ),
    # the pairs, pool_at and template checks phrase each option with its value for the caller
    (
        {"text_pair_col": "b", "pair_mode": "both"},
        "pair_mode='both' is not understood",
        ["--text-pair-col", "b", "--pair-mode", "both"],
        "--pair-mode 'both' is not understood",
    ),
    (
        {"text_pair_col": "b", "pair_mode": "separate", "tokens": True},
        "tokens=True is stored for pair_mode='cross' only\n  hint: use pair_mode='cross'",
        ["--text-pair-col", "b", "--pair-mode", "separate", "--tokens"],
        "--tokens is stored for --pair-mode cross only\n  hint: use --pair-mode cross",
    ),
    (
        {"poolings": "at"},
        "pooling 'at' needs pool_at\n  hint: add pool_at='last' (or 'marker:TEXT', 'index:N')",
        ["--pooling", "at"],
        "pooling 'at' needs --pool-at\n  hint: add --pool-at last, marker:TEXT or index:N",
    ),
    ({"pool_at": "x"}, "pool_at='x' is not understood", ["--pool-at", "x"], "--pool-at 'x' is not understood"),
    (
        {"skip_missing_marker": True},
        "skip_missing_marker=True applies to pool_at='marker:TEXT' only",
        ["--skip-missing-marker"],
        "--skip-missing-marker applies to --pool-at marker:TEXT only",
    ),
    (
        {"pool_at": "last", "long": "window"},
        "pool_at does not combine with long='window'",
        ["--pool-at", "last", "--long", "window"],
        "--pool-at does not combine with --long window",
    ),
    (
        {"template": "{x}"},
        "template has no {text} field",
        ["--template", "{x}"],
        "--template has no {text} field",
    ),
    (
        {"template": "{text}", "contrast": "yes"},
        "contrast='yes' needs at least two",
        ["--template", "{text}", "--contrast", "yes"],
        "--contrast 'yes' needs at least two",
    ),
]


@pytest.mark.parametrize("options, python, flags, cli", PHRASED, ids=[next(iter(case[0])) for case in PHRASED])
def test_a_violation_names_what_the_caller_gave(tmp_path, options, python, flags, cli):
    """featx.embed and featx.extract name the keyword (``batch_size=0``), featx extract the flag (``--batch-size 0``),
    from the one constraints table; neither wording leaks into the other."""
    for call in (lambda: featx.embed(["a text"], **options), lambda: featx.extract("c.csv", **options)):
        with pytest.raises(InputError) as error:
            call()
        if str(error.value).startswith(("unknown embed option", "featx.embed takes")):  # featx.extract's only
            continue
        assert str(error.value).startswith(python) and "--" not in str(error.value), str(error.value)
    corpus = tmp_path / "c.csv"
    corpus.write_text("text\nhello\n")
    result = CliRunner().invoke(main, ["extract", str(corpus), "--dry-run", *flags])
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {cli}"), result.output


def test_an_error_found_after_the_config_names_the_keyword_from_python(tmp_path):
    """A column the corpus lacks is found while reading it, after the config was made: its hint names
    ``text_col='sentence'`` from Python, ``--text-col sentence`` on the command line."""
    corpus = tmp_path / "c.csv"
    corpus.write_text("sentence,label\nhello,1\n")
    with pytest.raises(InputError, match="has no text column 'text'") as error:
        featx.extract(corpus, output=tmp_path / "c.h5")
    assert error.value.hint == "pass the right one with text_col='NAME' (text_col='sentence'?)"
    result = CliRunner().invoke(main, ["extract", str(corpus), "-o", str(tmp_path / "c.h5")])
    assert result.exit_code == 2 and "hint: pass the right one with --text-col NAME (--text-col sentence?)" in (
        result.output
    ), result.output


def test_a_size_option_hint_names_its_own_minimum():
    with pytest.raises(InputError) as error:
        ExtractConfig(corpus="corpus.csv", max_length=1)
    assert "a size of at least 2" in error.value.hint  # not "a positive size": 1 is positive
    with pytest.raises(InputError) as error:
        ExtractConfig(corpus="corpus.csv", batch_size=0)
    assert "a positive size" in error.value.hint


def test_config_is_frozen_and_normalised_once():
    config = ExtractConfig(corpus="corpus.csv", store_dtype="FP32")
    assert config.store_dtype == "float32"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.store_dtype = "float16"
    changed = make_config(config, batch_size=8)
    assert changed.batch_size == 8 and config.batch_size is None and changed.store_dtype == "float32"
    with pytest.raises(InputError, match="--batch-size 0"):
        make_config(config, batch_size=0)


def test_unknown_option_names_the_known_ones():
    with pytest.raises(InputError, match="unknown extraction option.*: batchsize") as raised:
        make_config("corpus.csv", batchsize=8)
    assert "see featx.extraction.ExtractConfig for the options: " in raised.value.hint  # an importable name


@pytest.mark.parametrize("flag, value", [("--batch-size", "0"), ("--max-tokens", "-5"), ("--commit-rows", "0")])
def test_cli_refuses_non_positive_sizes_before_loading_anything(tmp_path, monkeypatch, flag, value):
    from featx.extraction.model import loading as modeling

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(modeling, "load_model", no_load)
    corpus = tmp_path / "c.csv"
    corpus.write_text("text\nhello\n")
    result = CliRunner().invoke(main, ["extract", str(corpus), flag, value, "-q"])
    assert result.exit_code == 2, result.output
    assert (
        result.output.startswith(f"featx: error: {flag} {value} must be a whole number")
        and "Traceback" not in result.output
    )

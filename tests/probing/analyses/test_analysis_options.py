"""The options of ``featx erase``, ``featx neurons``, ``featx explain`` and ``featx probe --sweep`` (and
``ProbeConfig``): frozen, checked when made, before any file is opened; each bad value is one ``InputError``
with a hint.

Add a case by adding a line to ``REFUSED`` (config class, options, message pattern, hint pattern).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from click.testing import CliRunner

from featx.cli import main
from featx.errors import InputError
from featx.probing import ProbeConfig
from featx.probing.analyses.erase import EraseConfig
from featx.probing.analyses.explain import ExplainConfig
from featx.probing.analyses.neurons import NeuronConfig
from featx.probing.analyses.sweep import SweepConfig

MISSING = "no-such-file.h5"  # never opened: the options are refused first

REFUSED = [
    (EraseConfig, {"method": "pca"}, r"^--method pca is not available: choose from leace, inlp$", r"--method leace"),
    (EraseConfig, {"iterations": 0}, r"^--iterations 0 must be a positive number$", r"give --iterations"),
    (EraseConfig, {"iterations": 2.5}, r"^--iterations 2.5 must be a positive number$", r"give --iterations"),
    (EraseConfig, {"folds": 1}, r"^--folds 1 is too small$", r"at least 2 folds"),
    (EraseConfig, {"folds": "3"}, r"^--folds 3 must be a whole number of at least 2$", r"^use at least 2 folds"),
    (EraseConfig, {"seed": -1}, r"^--seed -1 must be a whole number of at least 0$", r"give --seed"),
    (EraseConfig, {"n_bootstrap": 0}, r"^--n-bootstrap 0 must be a whole number", r"give --n-bootstrap"),
    (EraseConfig, {"jobs": 0}, r"^--jobs 0 runs nothing$", r"-1 for one job per core"),
    (NeuronConfig, {"top": 0}, r"^--top 0 must be a positive number$", r"give --top a number of neurons"),
    (NeuronConfig, {"top": -3}, r"^--top -3 must be a positive number$", r"give --top"),
    (NeuronConfig, {"fraction": 0}, r"^--fraction 0 is outside \(0, 1\]$", r"e\.g\. --fraction 0\.05 for 5%"),
    (NeuronConfig, {"fraction": 1.5}, r"^--fraction 1\.5 is outside \(0, 1\]$", r"--fraction 0\.05"),
    (NeuronConfig, {"fraction": "half"}, r"^--fraction half is outside \(0, 1\]$", r"--fraction 0\.05"),
    (NeuronConfig, {"top": 3, "fraction": 0.1}, r"^give --top or --fraction, not both$", r"--top N lists"),
    (NeuronConfig, {"folds": 0}, r"^--folds 0 is too small$", r"at least 2 folds"),
    (NeuronConfig, {"jobs": 0}, r"^--jobs 0 runs nothing$", r"positive number"),
    (NeuronConfig, {"draws": 0}, r"^--draws 0 must be a whole number of at least 1$", r"give --draws a whole number"),
    (NeuronConfig, {"draws": -2}, r"^--draws -2 must be a whole number of at least 1$", r"e\.g\. 10 \(the default\)"),
    (NeuronConfig, {"draws": 2.5}, r"^--draws 2\.5 must be a whole number of at least 1$", r"give --draws"),
    (NeuronConfig, {"draws": True}, r"^--draws True must be a whole number of at least 1$", r"give --draws"),
    (SweepConfig, {"features": None}, r"needs the features file", r"featx probe FEATURES\.h5 --sweep"),
    (SweepConfig, {"folds": 1}, r"^--folds 1 is too small$", r"at least 2 folds"),
    (SweepConfig, {"seed": -2}, r"^--seed -2 must be a whole number of at least 0$", r"give --seed"),
    (SweepConfig, {"n_bootstrap": -1}, r"^--n-bootstrap -1 must be", r"give --n-bootstrap"),
    (ProbeConfig, {"n_bootstrap": 10**6}, r"^--n-bootstrap 1000000 is too large: at most 100000$", r"from 1 to"),
    (ProbeConfig, {"classifiers": "logreg,tree"}, r"^classifier 'tree' is not available$", r"^choose from logreg, svm"),
    (ProbeConfig, {"sites": " , "}, r"^--site ' , ' is empty: it takes one value or a comma list$", r"give --site at"),
    (ProbeConfig, {"join": "name"}, r"^--join 'name' is not understood$", r"^use --join id or --join row$"),
    (ProbeConfig, {"join": "row"}, r"^--join applies to --labels only$", r"add --labels FILE"),
    (ProbeConfig, {"curve_layers": "2,4"}, r"^--curve-layers applies to --train-sizes only$", r"add --train-sizes"),
    (ProbeConfig, {"folds": 2.5}, r"^--folds 2\.5 must be a whole number of at least 2$", r"^use at least 2 folds"),
    (ProbeConfig, {"bins": 1}, r"^--bins 1 must be a whole number of at least 2$", r"give --bins"),
    (ProbeConfig, {"task": "ranking"}, r"^--task ranking is not known$", r"classification, regression or auto"),
    # the grids have no flag: named by their key, as a study file's [probe] table sets them
    (ProbeConfig, {"cs": ()}, r"^cs must hold positive numbers \(got \(\)\)$", r"^e\.g\. cs = \[0\.1, 1, 10\]$"),
    (ProbeConfig, {"alphas": (1.0, -1.0)}, r"^alphas must hold positive numbers", r"^e\.g\. alphas = \[0\.1"),
    (ExplainConfig, {"buckets": 0}, r"^--buckets 0 must be a whole number of at least 1$", r"give --buckets"),
    (ExplainConfig, {"limit": -1}, r"^--limit -1 must be a whole number of at least 1$", r"give --limit"),
    (ExplainConfig, {"limit": 2.5}, r"^--limit 2\.5 must be a whole number of at least 1$", r"give --limit"),
]


@pytest.mark.parametrize(
    "config, options, message, hint",
    REFUSED,
    ids=[f"{case[0].__name__}-{'-'.join(case[1])}" for case in REFUSED],
)
def test_a_bad_option_is_one_error_with_a_hint(config, options, message, hint):
    with pytest.raises(InputError) as error:
        config(**{dataclasses.fields(config)[0].name: MISSING, **options})  # features, or results
    assert re.search(message, error.value.message), error.value.message
    assert re.search(hint, error.value.hint or ""), error.value.hint  # every refusal says what to do


@pytest.mark.parametrize("config", [EraseConfig, NeuronConfig, SweepConfig, ProbeConfig])
def test_the_configs_are_frozen_and_copies_are_checked_again(config):
    made = config(features=MISSING)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seed = 3
    assert made.replace(seed=3).seed == 3 and made.seed == 0
    with pytest.raises(InputError, match="--folds 1 is too small"):
        made.replace(folds=1)


def test_probe_config_normalises_classifiers_and_sites_once():
    config = ProbeConfig(
        classifiers="LogReg, svm,logreg", sites=["hidden", "ffn", "hidden"], join=" ROW ", labels="x.csv"
    )
    assert config.classifiers == ("logreg", "svm") and config.classifier_list() == ["logreg", "svm"]
    assert config.sites == ("hidden", "ffn") and config.site_list() == ["hidden", "ffn"]
    assert config.join == "row"


def test_neuron_config_accepts_the_edges():
    assert NeuronConfig(features=MISSING, fraction=1).fraction == 1
    assert NeuronConfig(features=MISSING, top=1).top == 1
    assert NeuronConfig(features=MISSING, draws=1).draws == 1 and NeuronConfig(features=MISSING).draws == 10
    assert type(NeuronConfig(features=MISSING, draws=np.int64(3)).draws) is int  # numpy's int64 as Python's int
    assert type(NeuronConfig(features=MISSING, folds=np.int64(3)).folds) is int


@pytest.mark.parametrize(
    "command, args, message",
    [
        ("erase", ["--iterations", "-2"], "--iterations -2 must be a positive number"),
        ("erase", ["--folds", "1"], "--folds 1 is too small"),
        ("neurons", ["--fraction", "2"], "--fraction 2 is outside (0, 1]"),
        ("neurons", ["--jobs", "0"], "--jobs 0 runs nothing"),
        ("neurons", ["--draws", "0"], "--draws 0 must be a whole number of at least 1"),
        ("neurons", ["--draws", "-1"], "--draws -1 must be a whole number of at least 1"),
        ("probe", ["--sweep", "--seed", "-1"], "--seed -1 must be a whole number of at least 0"),
        ("probe", ["--sweep", "--n-bootstrap", "0"], "--n-bootstrap 0 must be a whole number of at least 1"),
        ("probe", ["--n-bootstrap", "-5"], "--n-bootstrap -5 must be a whole number of at least 1"),
        ("erase", ["--n-bootstrap", "100001"], "--n-bootstrap 100001 is too large: at most 100000"),
    ],
)
def test_the_cli_refuses_bad_options_before_opening_the_file(tmp_path, command, args, message):
    missing = tmp_path / MISSING  # never opened: the options are refused first
    result = CliRunner().invoke(main, [command, str(missing), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "hint:" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("config", [EraseConfig, NeuronConfig, SweepConfig])
def test_an_unknown_keyword_is_refused_by_name(config):
    with pytest.raises(InputError) as error:
        config.build(MISSING, layer="3")
    assert error.value.message == f"unknown option(s) of {config.__name__}: layer"
    assert "layers" in error.value.hint


# One refusal each, as the Python functions' caller reads it (the keyword with its value; a command line quoted as a
# Python call) and as the command line prints it (the flags): (function, options, python, cli arguments, cli).
# A config made directly (REFUSED above) names the flags, as the command line does.
PHRASED = [
    (
        "erase",
        {"method": "pca"},
        "method='pca' is not available: choose from leace, inlp\n"
        "  hint: method='leace' (closed form) or method='inlp' (iterative nullspace projection)",
        None,  # the command line's --method is a choice: click refuses pca first
        None,
    ),
    (
        "erase",
        {"iterations": 0},
        "iterations=0 must be a positive number\n  hint: give iterations a whole number of rounds, e.g. 50",
        ["--iterations", "0"],
        "--iterations 0 must be a positive number\n  hint: give --iterations a whole number of rounds, e.g. 50",
    ),
    (
        "erase",
        {"n_bootstrap": 0},
        "n_bootstrap=0 must be a whole number of at least 1\n  hint: give n_bootstrap a value of at least 1",
        ["--n-bootstrap", "0"],
        "--n-bootstrap 0 must be a whole number of at least 1\n  hint: give --n-bootstrap a value of at least 1",
    ),
    (
        "neurons",
        {"top": 3, "fraction": 0.1},
        "give top or fraction, not both\n"
        "  hint: top=N lists N neurons per ranking; fraction=F lists that share of the layer's width",
        ["--top", "3", "--fraction", "0.1"],
        "give --top or --fraction, not both\n"
        "  hint: --top N lists N neurons per ranking; --fraction F lists that share of the layer's width",
    ),
    (
        "neurons",
        {"fraction": 1.5},
        "fraction=1.5 is outside (0, 1]\n  hint: e.g. fraction=0.05 for 5%",
        ["--fraction", "1.5"],
        "--fraction 1.5 is outside (0, 1]\n  hint: e.g. --fraction 0.05 for 5%",
    ),
    (
        "sweep",
        {"folds": 1, "group": "doc"},
        "folds=1 is too small\n  hint: use at least 2 folds (default 5)",
        ["--sweep", "--folds", "1", "--group", "doc"],
        "--folds 1 is too small\n  hint: use at least 2 folds (default 5)",
    ),
    (  # featx probe's -o and --layer, shared by the sweep's config: the rules of every path and list option
        "sweep",
        {"output": ""},
        "output='' is empty: give a path, or leave it out\n  hint: an empty path would read as '.', the current folder",
        ["--sweep", "-o", ""],
        "-o/--output is empty: give a path, or leave it out\n  hint: an empty path would read as '.', the current",
    ),
    (
        "sweep",
        {"layers": " "},
        "layers=' ' is empty: it takes one value or a comma list\n"
        "  hint: give layers at least one value, or leave it out for its default (all)",
        ["--sweep", "--layer", " "],
        "--layer ' ' is empty: it takes one value or a comma list\n  hint: give --layer at least one value",
    ),
    (
        "sweep",
        {"join": "x", "labels": "l.csv"},
        "join='x' is not understood\n  hint: use join='id' or join='row'",
        ["--sweep", "--join", "x", "--labels", "l.csv"],
        "--join 'x' is not understood\n  hint: use --join id or --join row",
    ),
]


@pytest.mark.parametrize("function, options, python, args, cli", PHRASED, ids=[f"{c[0]}-{c[1]}" for c in PHRASED])
def test_a_refusal_names_what_the_caller_gave(tmp_path, function, options, python, args, cli):
    """featx.probing.erase, neurons and sweep name the keywords (method='pca'), featx erase, neurons and probe
    --sweep the flags (--method pca): checked when the options are made, before the file is opened."""
    import featx.probing

    missing = str(tmp_path / MISSING)
    with pytest.raises(InputError) as error:
        getattr(featx.probing, function)(missing, **options)
    assert str(error.value) == python and "--" not in str(error.value), str(error.value)
    if args is None:
        return
    command = "probe" if function == "sweep" else function
    result = CliRunner().invoke(main, [command, missing, *args])
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {cli}"), result.output


@pytest.mark.parametrize(
    ("function", "layers", "what", "why", "cli_why"),
    [
        ("erase", "cat(0,1)", "cat(...)", "erase works on one layer at a time", None),
        ("neurons", "stack", "stack", "neurons ranks one layer's units at a time", None),
        ("sweep", "cat(0,1)", "cat(...)", "featx.probing.sweep probes single layers only", "--sweep probes single"),
    ],
)
def test_a_combined_layer_is_refused_with_the_reason_of_the_command_refusing_it(
    tiny_features, function, layers, what, why, cli_why
):
    """erase, neurons and the sweep take single layers: the refusal of ``cat()`` and ``stack`` (one check,
    ``parse_layer_specs(single_only=...)``) says why for each of them (not "extraction stores layers
    separately") and what to give instead, on the command line and from Python, each in its words."""
    import featx.probing

    with pytest.raises(InputError) as caught:
        getattr(featx.probing, function)(tiny_features, label="label", layers=layers)
    assert str(caught.value) == (
        f"{what} is a probe option; {why}\n  hint: give layers='all', a list or a slice, without cat or stack"
    )
    command = ["probe", str(tiny_features), "--sweep"] if function == "sweep" else [function, str(tiny_features)]
    result = CliRunner().invoke(main, [*command, "--label", "label", "--layer", layers])
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {what} is a probe option; "), (
        result.output
    )
    assert (cli_why or why) in result.output and "hint: give --layer all, a list or a slice" in result.output

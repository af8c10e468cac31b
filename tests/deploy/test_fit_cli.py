"""featx fit on the command line: its summary, and each bad option as one clear error before any fitting."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error

from featx.cli import main


def test_fit_prints_the_choice_and_the_scores(split_features, tmp_path):
    output = tmp_path / "m.featx"
    args = ["--label", "topic", "--pooling", "mean", "-o", str(output), "--quiet", "--n-bootstrap", "1"]
    result = CliRunner().invoke(main, ["fit", str(split_features), *args])
    assert result.exit_code == 0, result.output
    assert "chosen: layer" in result.output and "pooling mean, logreg (C " in result.output
    assert "cross-validated accuracy (training rows): 0." in result.output
    assert "test accuracy: " in result.output and "[95% CI " in result.output and "majority class: " in result.output
    # --n-bootstrap 1 reaches the test intervals (one resample: low == high), and the manifest records it
    selection = json.loads((output / "manifest.json").read_text())["selection"]
    assert selection["n_bootstrap"] == 1 and selection["test"]["low"] == selection["test"]["high"]
    assert selection["test"]["lexical_low"] == selection["test"]["lexical_high"]


BAD = {
    "an unknown metric": (["--metric", "auc"], r"--metric 'auc' is not understood"),
    "a regression metric for classes": (["--metric", "r2"], r"--metric r2 does not apply to a classification label"),
    "ridge for classes": (["--classifier", "ridge"], r"ridge is a regression head"),
    "an unknown head": (["--classifier", "forest"], r"--classifier 'forest' is not understood"),
    "a missing label": (["--label", "nope"], r"nope"),
    "a layer out of range": (["--layer", "9"], r"layer 9 is out of range"),
    "a pooling not stored": (["--pooling", "max"], r"pooling 'max' is not available"),
    "too few folds": (["--folds", "1"], r"--folds 1 is too small"),
    "no jobs": (["--jobs", "0"], r"--jobs 0 runs nothing.*hint: use a positive number, or -1"),
    "no resamples": (["--n-bootstrap", "0"], r"--n-bootstrap 0 must be a whole number of at least 1"),
    "stack of numbers": (["--label", "score", "--layer", "stack"], r"stack combines linear probes of a class label"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_fit_options_are_one_clear_error(split_features, tmp_path, case):
    extra, pattern = BAD[case]
    output = tmp_path / "m.featx"
    result = CliRunner().invoke(main, ["fit", str(split_features), "-o", str(output), "--quiet", *extra])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)
    assert not output.exists()


def test_an_existing_bundle_is_kept_without_overwrite(split_features, tmp_path):
    output = tmp_path / "m.featx"
    output.mkdir()
    result = CliRunner().invoke(main, ["fit", str(split_features), "-o", str(output), "--layer", "1", "--quiet"])
    assert result.exit_code == 2
    assert_one_clear_error(result.output, r"m\.featx already exists")
    assert "hint: pass --overwrite to replace it, or choose another -o path" in result.output
    import featx

    with pytest.raises(featx.FeatxError) as error:  # from Python: the keyword, and no flag
        featx.fit(split_features, output=output, layer="1")
    assert error.value.hint == "pass overwrite=True to replace it, or choose another output path"


def test_erased_features_are_refused_before_fitting(split_features, tmp_path):
    """featx erase's output holds features no text gives: a bundle fitted on it would predict from the original
    features. fit refuses it in one line, naming the file to fit on instead; nothing is written."""
    result = CliRunner().invoke(
        main, ["erase", str(split_features), "--label", "topic", "--amnesic", "none", "-o", str(tmp_path / "e.h5")]
    )
    assert result.exit_code == 0, result.output
    output = tmp_path / "m.featx"
    result = CliRunner().invoke(main, ["fit", str(tmp_path / "e.h5"), "--label", "label", "-o", str(output), "-q"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, r"e\.h5 holds erasure features made from another features file.*hint: fit on")
    assert not output.exists()


def test_a_correlation_metric_says_the_training_mean_has_none(split_features, tmp_path):
    """A constant prediction has no correlation: the summary says so rather than printing nan."""
    args = ["fit", str(split_features), "--label", "score", "--metric", "spearman", "--pooling", "mean", "-q"]
    result = CliRunner().invoke(main, [*args, "--layer", "1", "-o", str(tmp_path / "s.featx")])
    assert result.exit_code == 0, result.output
    assert "; training mean: no spearman (a constant prediction)" in result.output and "nan" not in result.output


def test_the_help_names_every_metric_fit_accepts_and_the_default_bundle():
    from featx.deploy.config import CLASS_METRICS, VALUE_METRICS

    shown = " ".join(CliRunner().invoke(main, ["fit", "--help"]).output.split())
    assert all(metric in shown for metric in CLASS_METRICS + VALUE_METRICS)
    assert "Bundle folder to write (default: FEATURES less .features.h5, + .featx, beside it)." in shown


# One refusal each, as featx.fit's Python caller reads it (keywords; a command line as a Python call) and as
# featx fit prints it (flags): (options, python, flags, cli, file).
PHRASED = [
    ({"metric": "auc"}, "metric='auc' is not understood", ["--metric", "auc"], "--metric 'auc' is not", "split"),
    (
        {"label": "label", "classifier": "ridge"},
        "ridge is a regression head, and 'label' is fitted as classes\n"
        "  hint: use classifier='logreg', or task='regression' for a numeric label",
        ["--label", "label", "--classifier", "ridge"],
        "ridge is a regression head, and 'label' is fitted as classes\n"
        "  hint: use --classifier logreg, or --task regression for a numeric label",
        "split",
    ),
    (
        {"label": "head"},
        "'head' is the dependency arcs of a word input, fitted as a head selector with arcs=True\n"
        "  hint: add arcs=True: featx.fit(features, label='head', arcs=True)",
        ["--label", "head"],
        "'head' is the dependency arcs of a word input, fitted as a head selector with --arcs\n"
        "  hint: add --arcs: featx fit FEATURES --label head --arcs",
        "words",
    ),
    (
        {"label": "head", "arcs": True, "metric": "macro_f1"},
        "metric='macro_f1': a head selector is chosen on its attachment score (UAS)\n"
        "  hint: leave metric out with label='head', arcs=True",
        ["--label", "head", "--arcs", "--metric", "macro_f1"],
        "--metric macro_f1: a head selector is chosen on its attachment score (UAS)\n"
        "  hint: leave --metric out with --label head --arcs",
        "words",
    ),
    (  # featx.fit's keyword is layer (featx.probe's layers), each named by its own command
        {"label": "label", "layer": "cat()"},
        "layer='cat()' concatenates no layers\n  hint: name them, e.g. cat(-4:) or cat(2,3)",
        ["--label", "label", "--layer", "cat()"],
        "--layer 'cat()' concatenates no layers\n  hint: name them, e.g. cat(-4:) or cat(2,3)",
        "split",
    ),
]


@pytest.mark.parametrize("options, python, flags, cli, file", PHRASED, ids=[str(case[0]) for case in PHRASED])
def test_a_refusal_names_what_the_caller_gave(
    split_features, word_features, tmp_path, options, python, flags, cli, file
):
    """featx.fit names the keywords (folds=1), featx fit the flags (--folds 1); a hint quoting a whole command line
    stays one on the command line and is a Python call from Python; neither wording leaks into the other."""
    import featx

    features, output = str(split_features if file == "split" else word_features[0]), tmp_path / "m.featx"
    with pytest.raises(featx.FeatxError) as error:
        featx.fit(features, output=output, **options)
    assert str(error.value).startswith(python) and "--" not in str(error.value), str(error.value)
    result = CliRunner().invoke(main, ["fit", features, "-o", str(output), "-q", *flags])
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {cli}"), result.output
    assert not output.exists()


def test_a_missing_label_is_hinted_with_what_fit_can_use(split_features, tmp_path):
    """fit has no --labels: the hint offers what works for it (store the columns with featx labels add, or
    featx.probing.add_labels from Python), and names featx probe's one-run join only as featx probe's."""
    import featx

    output = tmp_path / "m.featx"
    result = CliRunner().invoke(main, ["fit", str(split_features), "-o", str(output), "-q", "--label", "nope"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(
        result.output, rf"no label column 'nope'.*hint: .*featx labels add {re.escape(str(split_features))} FILE"
    )
    assert "featx fit" not in result.output and "(featx probe joins" in result.output, result.output
    with pytest.raises(featx.FeatxError) as error:
        featx.fit(split_features, output=output, label="nope")
    assert "featx.probing.add_labels(" in error.value.hint and "--" not in str(error.value), str(error.value)
    assert not output.exists()

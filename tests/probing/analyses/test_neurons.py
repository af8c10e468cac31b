"""Neuron ranking: planted neurons come first, retraining on them recovers the accuracy, ``featx neurons``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from support.planted_columns import A_NEURONS, C_NEURONS

from featx.cli import main
from featx.errors import InputError
from featx.probing.analyses.neurons import neurons, order, rank_neurons
from featx.report import format_neurons, save_neurons_figure
from featx.report.text.format import p_value


def test_both_rankings_put_the_planted_neurons_first():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    X = rng.standard_normal((600, 40)).astype(np.float32)
    X[:, [7, 21, 33]] += 1.5 * (2 * y[:, None] - 1)
    scores = rank_neurons(X, y, np.arange(600), seed=0)
    for name in ("probe", "anova"):
        assert set(order(scores[name])[:3]) == {7, 21, 33}, name
    assert scores["weights"].shape == (2, 40)


@pytest.mark.slow
def test_planted_neurons_rank_first_and_recover_the_accuracy(planted_file, tmp_path):
    result = neurons(planted_file, label="a", layers="1", folds=3, output=tmp_path / "a", jobs=1)
    ranking = result.ranking
    assert set(ranking[ranking.probe_rank <= 3].neuron) == set(A_NEURONS)
    assert set(ranking[ranking.anova_rank <= 3].neuron) == set(A_NEURONS)
    selection = result.selection
    top = selection[(selection.selection == "top") & (selection.ranking == "probe") & (selection.k == 3)]
    full = selection[selection.selection == "all"]
    bottom = selection[(selection.selection == "bottom") & (selection.ranking == "probe") & (selection.k == 3)]
    assert len(top) == 1 and top.accuracy.iloc[0] >= full.accuracy.iloc[0] - 0.03 and top.accuracy.iloc[0] > 0.95
    assert bottom.accuracy.iloc[0] < 0.7  # the same number of bottom-ranked neurons carries nothing
    assert {"top", "bottom", "random", "all"} == set(selection.selection)
    # the default number of random draws (the other neuron tests ask for 2): recorded, and each random row's mean
    assert result.meta["random_draws"] == 10 and set(selection[selection.selection == "random"].draws) == {10}
    assert all(path.exists() for path in result.paths) and [p.suffix for p in result.paths][-1] == ".json"
    assert save_neurons_figure(result) == result.paths[-2:]  # the report's figure, in both formats
    assert [path.suffix for path in result.paths[-2:]] == [".png", ".svg"] and all(
        p.exists() for p in result.paths[-2:]
    )
    text = format_neurons(result)
    assert "overlap of the two rankings" in text and "selection at layer 1" in text
    # The majority class of each training part, scored on its test part, stands beside every probe.
    import pandas as pd

    import featx

    with featx.open(planted_file) as features:
        counts = np.unique(np.asarray(features.labels("a")), return_counts=True)[1]
    share = counts.max() / counts.sum()
    majority = selection.majority.iloc[0]
    assert selection.majority.nunique() == 1 and majority <= share + 1e-9 and majority > share - 0.1
    assert f"majority class: {majority:.3f}" in text
    assert list(pd.read_csv(tmp_path / "a.csv").majority.unique()) == [majority]


@pytest.mark.slow
def test_per_class_top_neurons_of_a_multiclass_label(planted_file, tmp_path):
    result = neurons(planted_file, label="c", layers="2", top=3, folds=3, output=tmp_path / "c", jobs=1, draws=2)
    per_class = result.per_class.set_index("class")
    assert len(per_class) == 3
    for name, neuron in zip(result.meta["classes"], C_NEURONS, strict=False):
        assert per_class.loc[name, "neurons"][0] == neuron
    assert "top neurons per class" in format_neurons(result)
    payload = json.loads((tmp_path / "c.json").read_text())
    assert payload["meta"]["listed"] == 3 and len(payload["per_class"]) == 3
    # the library result carries the notes the CLI prints (as other results do), and the CLI prints them from there
    assert result.notes == payload["meta"]["notes"] == []
    result.notes.append("a note of this test")
    assert format_neurons(result).splitlines()[-4:-2] == ["", "note: a note of this test"]  # then what it wrote


@pytest.mark.slow
def test_cli_all_layers_gives_a_curve_per_layer(planted_split_file, tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "neurons",
            str(planted_split_file),
            "--label",
            "a",
            "--layer",
            "all",
            "--fraction",
            "0.1",
            "-o",
            str(tmp_path / "n"),
            "--jobs",
            "1",
            "--draws",
            "3",
            "--n-bootstrap",
            "300",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "across layers" in result.output and "best layer" in result.output
    import pandas as pd

    selection = pd.read_csv(tmp_path / "n.csv")
    assert sorted(selection.layer.unique()) == [0, 1, 2] and np.isclose(selection.fraction, 0.1).any()
    # --draws: the random rows' mean of 3 draws, recorded in the meta and said where the baseline is shown
    assert set(selection[selection.selection == "random"].draws) == {3}
    meta = json.loads((tmp_path / "n.json").read_text())["meta"]
    assert meta["random_draws"] == 3 and meta["n_bootstrap"] == 300  # --n-bootstrap: the intervals' resamples
    assert meta["test_vs_random"].startswith("exact paired sign-flip test") and meta["test_vs_random"] in result.output
    assert "random (mean of 3)" in result.output and "the random k (mean of 3 draws)" in result.output
    # the across-layers table: each layer's Holm-adjusted p of top 5% against random 5%, as in its own table
    lines = result.output.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("layer  all neurons")))
    assert "random 0.05 (mean of 3)  p vs random (probe)  p vs random (anova)" in lines[header]
    top = selection[(selection.selection == "top") & np.isclose(selection.fraction, 0.05)]
    for layer, line in zip((0, 1, 2), lines[header + 2 : header + 5], strict=True):
        cells = line.split()
        expected = [top[(top.layer == layer) & (top.ranking == name)].iloc[0] for name in ("probe", "anova")]
        shown = [p_value(row.p_vs_random_holm, bool(row.significant_vs_random)) for row in expected]
        assert cells[0] == str(layer) and cells[-7:-5] == shown, line
    assert "Holm over each layer's top-k tests, as in the layer's table" in result.output
    assert (tmp_path / "n.png").stat().st_size > 0 and "random (mean of 3)" in (tmp_path / "n.svg").read_text()


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["--label", "nope"], "no label column 'nope'"),
        (["--label", "a", "--layer", "5"], "out of range"),
        (["--label", "a", "--top", "0"], "--top 0 must be a positive number"),
        (["--label", "a", "--top", "-3"], "--top -3 must be a positive number"),
        (["--label", "a", "--fraction", "0"], "outside (0, 1]"),
        (["--label", "a", "--fraction", "1.5"], "outside (0, 1]"),
        (["--label", "a", "--top", "3", "--fraction", "0.1"], "not both"),
        (["--label", "a", "--pooling", "max"], "pooling 'max' is not stored"),
        (["--label", "a", "--n-bootstrap", "0"], "--n-bootstrap 0 must be a whole number of at least 1"),
    ],
)
def test_bad_input_is_one_clear_error(planted_file, tmp_path, args, pattern):
    result = CliRunner().invoke(main, ["neurons", str(planted_file), "-o", str(tmp_path / "x"), *args])
    assert result.exit_code == 2, result.output
    assert pattern in result.output and "Traceback" not in result.output and "\n  hint: " in result.output


def test_results_that_exist_are_refused_without_overwrite_before_any_ranking(planted_file, tmp_path):
    """As featx erase and predict: an existing output (the figure's included) is replaced only with --overwrite."""
    kept = tmp_path / "n.png"
    kept.write_text("a user's figure")
    args = ["neurons", str(planted_file), "--label", "a", "-o", str(tmp_path / "n")]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and f"{kept} already exists" in refused.output, refused.output
    assert "hint: pass --overwrite to replace it, or choose another -o path" in refused.output
    assert sorted(tmp_path.iterdir()) == [kept] and kept.read_text() == "a user's figure"
    let_through = CliRunner().invoke(main, [*args, "--overwrite", "--pooling", "max"])  # refused by the next check
    assert let_through.exit_code == 2 and "pooling 'max' is not stored" in let_through.output
    copy = tmp_path / "p.h5"  # the default prefix, FEATURES stem + .LABEL.neurons, beside a copy of the file
    shutil.copyfile(planted_file, copy)
    (tmp_path / "p.a.neurons.csv").write_text("kept")
    with pytest.raises(InputError, match=r"p\.a\.neurons\.csv already exists") as error:
        neurons(copy, label="a")
    assert error.value.hint == "pass overwrite=True to replace it, or choose another output path"
    assert (tmp_path / "p.a.neurons.csv").read_text() == "kept"


def test_a_label_too_long_for_a_file_name_is_refused_before_any_work(planted_file, tmp_path):
    """neurons, the sweep and erase (``<stem>.erased-<label>-<method>.h5`` and its tables) name their files after the
    label, as probe does: a 240-character label failed with "File name too long" once every probe had run. They
    measure their longest name with probe's one check (``results.check_name_length``) before any work."""
    import h5py

    copy, label = tmp_path / "p.h5", "y" * 240
    shutil.copyfile(planted_file, copy)
    with h5py.File(copy, "r+") as file:  # column a under a long name, as a corpus's header may give it
        file.move("labels/a", f"labels/{label}")
        file[f"labels/{label}"].attrs["column"] = label
    erase = ["erase", "--amnesic", "none"]
    commands = ((["neurons"], "PREFIX", 241), (["probe", "--sweep"], "PREFIX", 241), (erase, "PATH", 237))
    for command, placeholder, room in commands:  # erase's file is written as .NAME.XXXXXXXX.writing: 18 more bytes
        result = CliRunner().invoke(main, [*command, str(copy), "--label", label, "--layer", "1"])
        assert result.exit_code == 2, result.output
        assert f"bytes: more than the {room} a results file name may have here" in result.output, result.output
        assert f"hint: give them a shorter name with -o {placeholder}" in result.output
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.h5"]


def test_not_a_features_file_is_refused(tmp_path):
    path = tmp_path / "x.h5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    result = CliRunner().invoke(main, ["neurons", str(path), "--label", "a"])
    assert result.exit_code == 2 and "featx: error:" in result.output and "Traceback" not in result.output


def test_a_prefix_naming_the_corpus_is_refused_before_ranking(tiny_model, tmp_path):
    """-o corpus would write corpus.csv over the corpus the features file was extracted from."""
    from support.planted_columns import make_planted

    features = make_planted(tmp_path, tiny_model)
    corpus = tmp_path / "corpus.csv"
    before = corpus.read_bytes()
    args = ["neurons", str(features), "--label", "a", "--layer", "1", "--jobs", "1", "-o", str(tmp_path / "corpus")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "which is an input of this run" in result.output
    assert corpus.read_bytes() == before and not (tmp_path / "corpus.json").exists()

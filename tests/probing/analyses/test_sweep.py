"""Probe-complexity sweep: the probe family, Pareto fronts, layer flips, and ``featx probe --sweep``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from support.faults import single_thread_torch

from featx.cli import main
from featx.probing.analyses.sweep import WIDTHS, _fold, probe_family, sweep
from featx.report import format_sweep, save_sweep_figures
from featx.report.figures.analyses import pareto_front
from featx.report.text.sweep import flips


def test_probe_family_grows_in_complexity():
    probes = probe_family(100, 10, cs=(0.1, 1.0))
    families = [p.family for p in probes]
    assert families.count("logreg") == 2 and families.count("mlp") == len(WIDTHS)
    ranks = [p for p in probes if p.family == "rank"]
    assert [p.rank for p in ranks] == [1, 2, 4, 8]  # below the full rank k - 1 = 9
    assert [p.params for p in ranks] == sorted(p.params for p in ranks) and ranks[0].params == 100 + 10 + 10
    assert probes[0].params == 101 * 10
    assert not [p for p in probe_family(50, 2) if p.family == "rank"]  # binary: rank 1 is the full probe


def test_pareto_front_keeps_only_undominated_points():
    points = pd.DataFrame({"params": [10, 10, 100, 1000, 50], "accuracy": [0.6, 0.7, 0.9, 0.85, 0.65]})
    front = pareto_front(points)
    assert list(front.params) == [10, 100] and list(front.accuracy) == [0.7, 0.9]


def test_flips_name_the_reordered_layer_pairs():
    real = pd.DataFrame(
        {"setting": ["A"] * 3 + ["B"] * 3, "layer": [0, 1, 2] * 2, "accuracy": [0.6, 0.8, 0.9, 0.6, 0.95, 0.9]}
    )
    found = flips(real, "A")
    assert found["A"] == [] and found["B"] == [(1, 2)]


def test_a_fold_holds_out_training_rows_only_for_the_selection_score():
    """Every probe's held-out predictions (what ``selection_score`` scores) are of rows of the training part, and
    they do not move when the test rows' labels change: the choice never sees the test rows."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    train, test = np.arange(45), np.arange(45, 60)
    probes = [probe for probe in probe_family(3, 2, cs=(1.0,)) if probe.setting in ("C=1", "width=4")]
    other = y.copy()
    other[test] = 1 - other[test]
    with single_thread_torch():  # as sweep_layer runs its folds
        first, second = (_fold(X, [labels], probes, train, test, None, 2, 0) for labels in (y, other))
    assert sorted(setting for _, setting in first) == ["C=1", "width=4"]
    for key, result in first.items():
        rows, predicted = result.validation
        assert len(rows) == 9 and np.isin(rows, train).all() and len(result.predictions) == len(test)
        assert np.array_equal(rows, second[key].validation[0]) and np.array_equal(predicted, second[key].validation[1])


@pytest.mark.slow
def test_rank_one_probe_reads_a_one_dimensional_signal(planted_split_file, tmp_path):
    result = sweep(planted_split_file, label="d", layers="1", output=tmp_path / "d", jobs=1, n_bootstrap=1)
    table = result.table
    # n_bootstrap reaches every interval of the split (one resample: low == high) and the meta records it
    assert (table.accuracy_low == table.accuracy_high).all() and result.meta["n_bootstrap"] == 1
    real, control = table[table.task == "real"], table[table.task == "control"]
    rank_one = real[real.setting == "rank=1"]
    assert len(rank_one) == 1 and rank_one.accuracy.iloc[0] > 0.95
    assert rank_one.params.iloc[0] < real[real.family == "logreg"].params.min()
    assert control.accuracy.max() < 0.6 and len(control) == len(real)
    assert "selection_score" in table and table.selection_score.between(0, 1).all()  # every row, both tasks
    assert rank_one.selection_score.iloc[0] > 0.95 and control.selection_score.max() < 0.7
    assert set(real.family) == {"logreg", "rank", "mlp"}
    assert all(path.exists() for path in result.paths) and [p.suffix for p in result.paths][-1] == ".json"
    assert save_sweep_figures(result) == result.paths[-2:]  # the report's figure, in both formats
    assert [path.suffix for path in result.paths[-2:]] == [".png", ".svg"] and all(
        p.exists() for p in result.paths[-2:]
    )
    text = format_sweep(result)
    assert "layers best across complexities" in text and "rankings that flip" in text
    assert "the best probe (chosen on the training part)" in text and "best on the test rows" not in text
    assert '"selection_score"' in result.paths[1].read_text()  # the JSON carries the column, as the CSV does


@pytest.mark.slow
def test_cli_probe_sweep(planted_file, tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "probe",
            str(planted_file),
            "--sweep",
            "--label",
            "a",
            "--layer",
            "2",
            "--folds",
            "2",
            "--jobs",
            "1",
            "--n-bootstrap",
            "300",
            "-o",
            str(tmp_path / "a"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "a.sweep.json").read_text())["meta"]["n_bootstrap"] == 300  # taken from probe's
    assert "probe-complexity sweep of 'a'" in result.output and "evaluation: 2-fold cv" in result.output
    table = pd.read_csv(tmp_path / "a.sweep.csv")
    assert list(table.layer.unique()) == [2] and set(table.task) == {"real", "control"}
    assert table.selection_score.notna().all() and "best layer of each probe (chosen on the training part)" in (
        result.output
    )
    assert (table[table.task == "real"].accuracy > 0.9).all()
    assert (tmp_path / "a.sweep.png").exists() and (tmp_path / "a.sweep.json").exists()


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["--label", "nope"], "no label column 'nope'"),
        (["--label", "a", "--layer", "cat(0,1)"], "single layers only"),
        (["--label", "a", "--layer", "9"], "out of range"),
        (["--label", "a", "--folds", "1"], "--folds 1 is too small"),
        (["--label", "a", "--mdl"], "it does not take --mdl"),
        (["--label", "a", "--classifier", "mlp"], "it does not take --classifier"),
        # options the sweep used to drop silently
        (["--label", "a", "--bins", "3"], "it does not take --bins"),
        (["--label", "a", "--min-class-rows", "2"], "it does not take --min-class-rows"),
        (["--label", "a", "--arcs"], "it does not take --arcs"),
        (["--label", "a", "--site", "hidden,ffn"], "it does not take --site"),
    ],
)
def test_bad_input_is_one_clear_error(planted_file, tmp_path, args, pattern):
    result = CliRunner().invoke(main, ["probe", str(planted_file), "--sweep", "-o", str(tmp_path / "x"), *args])
    assert result.exit_code == 2, result.output
    assert pattern in result.output and "Traceback" not in result.output


def test_not_a_features_file_is_refused(tmp_path):
    path = tmp_path / "notes.h5"
    path.write_text("not hdf5")
    result = CliRunner().invoke(main, ["probe", str(path), "--sweep"])
    assert result.exit_code == 2 and "is not an HDF5 file" in result.output and "Traceback" not in result.output


def test_the_python_call_refuses_what_the_sweep_does_not_use_and_passes_on_what_it_does(planted_file, monkeypatch):
    from featx.errors import InputError
    from featx.probing import sweep_from_probe_options
    from featx.probing.analyses import sweep as module

    with pytest.raises(InputError, match="does not take --bins, --mdl"):
        sweep_from_probe_options(planted_file, True, {"label": "a", "bins": 3, "mdl": True, "labels": "more.csv"})
    with pytest.raises(InputError, match="--join 'doc' is not understood"):  # the sweep's, checked as probe's
        sweep_from_probe_options(planted_file, True, {"label": "a", "labels": "more.csv", "join": "doc"})
    with pytest.raises(InputError, match="--join applies to --labels only"):
        sweep_from_probe_options(planted_file, True, {"label": "a", "join": "row"})
    with pytest.raises(InputError, match="does not take nonsense"):
        sweep_from_probe_options(planted_file, True, {"label": "a", "nonsense": 1})
    seen = {}
    monkeypatch.setattr(module, "sweep", lambda config: seen.setdefault("config", config))
    sweep_from_probe_options(planted_file, False, {"label": "a", "n_bootstrap": 50, "write": False, "lexical": False})
    config = seen["config"]
    assert (config.n_bootstrap, config.write, config.control, config.label) == (50, False, False, "a")


def test_the_sweep_control_is_the_probes_permutation(planted_file):
    """The sweep's control labels are ``probing.permuted_control``'s (featx probe's and fit's), not a copy of its
    draw that could drift from it."""
    from featx.probing import permuted_control
    from featx.probing.analyses.sweep import SweepConfig, _sweep_jobs

    task, jobs, _ = _sweep_jobs(SweepConfig(planted_file, label="a", layers="1", seed=5, write=False), [])
    assert len(jobs) == 1 and np.array_equal(jobs[0][4], permuted_control(task.y, 5))
    assert not np.array_equal(jobs[0][4], task.y)  # a permutation that moved rows
    config = SweepConfig(planted_file, label="a", layers="1", control=False, write=False)
    assert _sweep_jobs(config, [])[1][0][4] is None

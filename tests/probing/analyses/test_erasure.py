"""Concept erasure: LEACE against its closed form and the reference package, INLP, and ``featx erase``."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

import featx
from featx.cli import main
from featx.probing.analyses.erase import erase
from featx.probing.analyses.erasure import fit_inlp, fit_leace, load_erasers, moved, one_hot
from featx.report import format_erase
from featx.store import derived_record


def planted(n=2000, d_other=5, seed=0):
    """Label in neuron 0 (+ two correlated noise neurons); ``d_other`` neurons exactly uncorrelated, in
    the sample, with the label and with the first block."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    first = rng.standard_normal((n, 3))
    first[:, 0] += 2.0 * (2 * y - 1)
    first[:, 1] += 0.5 * first[:, 0]
    other = rng.standard_normal((n, d_other))
    basis = np.column_stack([np.ones(n), first, y])
    other -= basis @ np.linalg.lstsq(basis, other, rcond=None)[0]  # exact in-sample orthogonality
    return np.column_stack([first, other]), y


def logreg_accuracy(X_train, y_train, X_test, y_test):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=2000).fit(X_train, y_train)
    return float(np.mean(model.predict(X_test) == y_test))


@pytest.mark.parametrize("shrinkage", [True, False])
def test_leace_removes_the_planted_direction_and_leaves_the_rest(shrinkage):
    X, y = planted()
    eraser = fit_leace(X, y, 2, shrinkage=shrinkage)
    erased = eraser(X).astype(np.float64)
    assert eraser.rank == 1
    cross = (erased - erased.mean(0)).T @ (one_hot(y, 2) - one_hot(y, 2).mean(0)) / len(y)
    assert np.abs(cross).max() < 1e-5  # no linear trace of the label: equal class means everywhere
    assert np.abs(erased[y == 0, 0].mean() - erased[y == 1, 0].mean()) < 1e-4  # planted direction removed
    np.testing.assert_allclose(erased[:, 3:], X[:, 3:], atol=1e-5)  # other directions unchanged
    assert logreg_accuracy(X[:1500], y[:1500], X[1500:], y[1500:]) > 0.95
    held_out = fit_leace(X[:1500], y[:1500], 2, shrinkage=shrinkage)
    assert logreg_accuracy(held_out(X[:1500]), y[:1500], held_out(X[1500:]), y[1500:]) < 0.6
    assert 0 < moved(X, erased) < 0.5


def test_leace_closed_form_without_shrinkage():
    X, y = planted(n=500, d_other=2)
    centred = X - X.mean(0)
    sigma = centred.T @ centred / (len(X) - 1)
    sigma_xz = centred.T @ (one_hot(y, 2) - one_hot(y, 2).mean(0)) / (len(X) - 1)
    values, vectors = np.linalg.eigh(sigma)
    root = vectors @ np.diag(np.sqrt(values)) @ vectors.T
    whiten = np.linalg.inv(root)
    u, s, _ = np.linalg.svd(whiten @ sigma_xz)
    u = u[:, :1]  # binary label: a rank-1 edit (the second singular value is 0)
    expected = X - centred @ (root @ u @ u.T @ whiten).T
    np.testing.assert_allclose(fit_leace(X, y, 2, shrinkage=False)(X), expected, atol=1e-5)


@pytest.mark.parametrize("shrinkage", [True, False])
def test_leace_equals_the_reference_package(shrinkage):
    torch = pytest.importorskip("torch")
    concept_erasure = pytest.importorskip("concept_erasure")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 10)) @ rng.standard_normal((10, 10))
    y = rng.integers(0, 3, 400)
    X[:, 2] += 1.5 * y
    fitter = concept_erasure.LeaceFitter(
        10, 3, shrinkage=shrinkage, constrain_cov_trace=False, svd_tol=1e-8, dtype=torch.float64
    )
    fitter.update(torch.from_numpy(X), torch.nn.functional.one_hot(torch.from_numpy(y), 3).double())
    ours = fit_leace(X, y, 3, shrinkage=shrinkage)
    np.testing.assert_allclose(ours.projection, fitter.eraser.P.numpy(), atol=1e-10)
    np.testing.assert_allclose(ours(X), fitter.eraser(torch.from_numpy(X)).numpy(), atol=1e-5)


def test_inlp_iterations_reduce_accuracy_monotonically():
    rng = np.random.default_rng(0)
    n = 1500
    y = rng.integers(0, 2, n)
    X = rng.standard_normal((n, 12))
    for neuron, strength in enumerate((3.0, 1.5, 0.8)):
        X[:, neuron] += strength * (2 * y - 1)
    eraser = fit_inlp(X, y, 2, iterations=20, seed=0)
    history = eraser.history
    assert history[0] > 0.95 and len(history) >= 3
    assert all(later <= earlier + 1e-9 for earlier, later in zip(history, history[1:], strict=False))
    assert history[-1] < 0.6 and eraser.iterations == len(history) and eraser.rank == len(history) - 1
    basis = eraser.left
    np.testing.assert_allclose(basis.T @ basis, np.eye(eraser.rank), atol=1e-8)  # a true projection


@pytest.mark.slow
def test_erase_brings_every_layer_to_chance_and_keeps_the_other_label(planted_file, tmp_path):
    result = erase(planted_file, label="a", folds=3, output=tmp_path / "erased.h5", jobs=1)
    table = result.table
    assert list(table.layer) == [0, 1, 2] and (table.before > 0.9).all()
    assert table.at_chance.all() and (table.after < 0.7).all()
    assert (table["rank"] == 1).all() and (table.moved > 0).all()
    # Layer 0's probe is right on every row before and predicts one class after (C chosen by log-loss: the prior is
    # all the erased features leave) in each of the 3 folds: equal differences get the exact sign test, whose
    # smallest p over 3 folds is 0.25; the others vary by fold and their corrected t-test holds.
    assert table.p.iloc[0] == pytest.approx(0.25) and (table.p_holm.iloc[1:] < 0.05).all()
    assert (table.random_after > 0.9).all()  # one random direction leaves the planted one: the control
    low, high = table.random_after_low, table.random_after_high
    assert ((low <= table.random_after) & (table.random_after <= high)).all()
    b = result.amnesic[result.amnesic.label == "b"]
    assert len(b) == 3 and (b.after > 0.9).all() and (b.change.abs() < 0.05).all() and (b.random_after > 0.9).all()
    assert set(result.amnesic.label) == {"b", "c", "d"}
    text = format_erase(result)
    assert "at chance" in text and "random dirs" in text and "amnesic probing" in text and "erased.erase.csv" in text
    row = table.iloc[0]  # the control beside the after, each with its interval (the control had none)
    control = f"{row.random_after:.3f} [{row.random_after_low:.3f}, {row.random_after_high:.3f}]"
    assert "random dirs [95% CI]" in text and control in text


@pytest.mark.slow
def test_erased_file_is_a_features_file_marked_derived(planted_file, tmp_path):
    output = tmp_path / "erased.h5"
    erase(planted_file, label="a", method="inlp", folds=3, output=output, jobs=1, amnesic="none")
    with featx.open(planted_file) as source, featx.open(output) as derived:
        assert derived.n_rows == source.n_rows and derived.ids == source.ids
        assert derived.label_columns == source.label_columns and derived.poolings == ["mean"]
        assert derived.layers == source.layers
        np.testing.assert_array_equal(derived.labels("b"), source.labels("b"))
        assert not np.allclose(derived.features("mean", 1), source.features("mean", 1))
        fingerprint = source.attrs["fingerprint"]
        info = derived_record(derived.attrs)
    assert info["kind"] == "erasure" and info["method"] == "inlp" and info["label"] == "a"
    assert info["source_fingerprint"] == fingerprint and all(n >= 2 for n in info["iterations"].values())
    with h5py.File(output, "r") as file:
        assert "request_key" not in file.attrs and file.attrs["fingerprint"] != fingerprint
    assert json.loads(output.with_name("erased.erase.json").read_text())["results"][0]["iterations"] >= 2
    erasers = load_erasers(output.with_name("erased.erasers.npz"))
    with featx.open(planted_file) as source, featx.open(output) as derived:
        rows = source.features("mean", 2)
        np.testing.assert_allclose(erasers["mean/2"](rows), derived.features("mean", 2), atol=1e-5)


def test_probing_an_erased_file_says_what_it_holds_and_warns_where_its_eraser_saw_the_test_rows(planted_file, tmp_path):
    output = tmp_path / "erased.h5"
    erase(planted_file, label="a", folds=3, output=output, jobs=1, amnesic="none")  # cross-validation: all rows

    def notes(label):
        return featx.probing.resolve_plan(featx.probing.ProbeConfig(features=output, label=label)).notes

    same = [note for note in notes("a") if "erased.h5 holds" in note]
    assert len(same) == 1 and same[0].startswith("warning: erased.h5 holds features erased of label 'a' (leace, ")
    assert "its eraser fitted on all labelled rows" in same[0] and "not held-out" in same[0]
    other = [note for note in notes("b") if "erased.h5 holds" in note]
    assert other == ["erased.h5 holds features erased of label 'a' (leace, its eraser fitted on all labelled rows)"]
    assert not [note for note in notes("b") if "erased" in note and note.startswith("warning")]
    assert not [
        note
        for note in featx.probing.resolve_plan(featx.probing.ProbeConfig(features=planted_file, label="a")).notes
        if "erased" in note
    ]


@pytest.mark.slow
def test_probe_and_plot_accept_the_erased_file(planted_split_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    erased = tmp_path / "erased.h5"
    erase_args = ["--label", "a", "-o", str(erased), "--jobs", "1", "--amnesic", "b", "--n-bootstrap", "1"]
    result = runner.invoke(main, ["erase", str(planted_split_file), *erase_args])
    assert result.exit_code == 0, result.output
    assert "evaluation: split" in result.output and "amnesic probing" in result.output
    # --n-bootstrap 1 reaches every interval of a split: each is one resample's score, low == high
    written = json.loads((tmp_path / "erased.erase.json").read_text())
    assert written["meta"]["n_bootstrap"] == 1
    for name in ("before", "after"):
        assert all(row[f"{name}_low"] == row[f"{name}_high"] for row in written["results"]), name
    probed = runner.invoke(main, ["probe", str(erased), "--label", "a", "--jobs", "1", "--n-bootstrap", "1"])
    assert probed.exit_code == 0, probed.output
    meta = json.loads((tmp_path / "erased.a.probe.json").read_text())["meta"]
    assert meta["n_bootstrap"] == 1 and meta["evaluation"] == "split"
    assert "erased.h5 holds features erased of label 'a' (leace, its eraser fitted on the train split)" in probed.output
    assert "not held-out" not in probed.output  # the eraser saw the train split only
    table, _ = featx.probing.load_results(tmp_path / "erased.a.probe.csv")
    assert (table[table.kind == "single"].accuracy < 0.7).all()
    assert len(table) > 3 and (table.accuracy_low == table.accuracy_high).all()  # the majority's and lexical's too
    other = runner.invoke(main, ["probe", str(erased), "--label", "b", "--jobs", "1"])
    assert other.exit_code == 0 and "b" in other.output
    plotted = runner.invoke(main, ["plot", str(tmp_path / "erased.a.probe.csv")])
    assert plotted.exit_code == 0, plotted.output
    assert (tmp_path / "erased.a.probe.png").stat().st_size > 0


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["--label", "nope"], "no label column 'nope'"),
        (["--label", "a", "--layer", "7"], "out of range"),
        (["--label", "a", "--method", "inlp", "--iterations", "0"], "--iterations 0 must be a positive number"),
        (["--label", "a", "--amnesic", "a"], "that is the erased label"),
        (["--label", "a", "--pooling", "cls"], "pooling"),
    ],
)
def test_bad_input_is_one_clear_error(planted_file, tmp_path, args, pattern):
    result = CliRunner().invoke(main, ["erase", str(planted_file), "-o", str(tmp_path / "x.h5"), *args])
    assert result.exit_code == 2, result.output
    assert pattern in result.output and "Traceback" not in result.output and "\n  hint: " in result.output


def test_not_a_features_file_and_clobbering_are_refused(planted_file, tmp_path):
    runner = CliRunner()
    text = tmp_path / "notes.h5"
    text.write_text("hello")
    result = runner.invoke(main, ["erase", str(text), "--label", "a"])
    assert result.exit_code == 2 and "not an HDF5 file" in result.output
    same = runner.invoke(main, ["erase", str(planted_file), "--label", "a", "-o", str(planted_file)])
    assert same.exit_code == 2 and "is the source features file" in same.output
    existing = tmp_path / "exists.h5"
    existing.write_text("")
    refused = runner.invoke(main, ["erase", str(planted_file), "--label", "a", "-o", str(existing)])
    assert refused.exit_code == 2 and "--overwrite" in refused.output


def test_the_erased_file_name_leaves_room_for_its_writing_temporary(planted_file, tmp_path):
    """The erased file is written through ``.NAME.XXXXXXXX.writing``, 18 bytes longer than its name (not the 14 of
    a ``.tmp``): a name of 238 bytes fits 255 less 14 but failed with "File name too long" once every eraser was
    fitted. (Its tables, ``a.erase.csv``..., are named without the suffix: short here.)"""
    from featx.errors import InputError
    from featx.probing.analyses.erase_paths import check_output

    check_output(planted_file, tmp_path / ("a." + "b" * 235), overwrite=False)  # 237 bytes: fits
    with pytest.raises(InputError, match=r"238 bytes: more than the 237 .* less 18 for the temporary") as error:
        check_output(planted_file, tmp_path / ("a." + "b" * 236), overwrite=False)
    assert error.value.hint.endswith(" PATH")  # -o names the erased file, not a prefix


@pytest.mark.slow
def test_derived_file_drops_token_states_and_other_sites(tiny_model, tmp_path):
    from support.tiny import SENTENCES, write_csv

    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    source = tmp_path / "c.h5"
    featx.extract(
        corpus,
        model=str(tiny_model),
        output=source,
        poolings="mean,cls",
        sites="hidden,ffn",
        tokens=True,
        progress=False,
    )
    output = tmp_path / "c.erased.h5"
    result = erase(
        source, label="tense", layers="1,2", poolings="mean,cls", folds=2, output=output, jobs=1, amnesic="none"
    )
    assert sorted(set(result.table.pooling)) == ["cls", "mean"] and len(result.table) == 4
    with featx.open(output) as derived, featx.open(source) as original:
        assert derived.sites == ["hidden"] and not derived.has_tokens and derived.layers == [1, 2]
        assert derived.poolings == ["mean", "cls"] and derived.texts == original.texts
        assert derived.split is not None and list(derived.split) == list(original.split)


@pytest.mark.parametrize("method", ["leace", "inlp"])
def test_rows_of_one_class_give_an_eraser_that_changes_nothing(method):
    from featx.probing.analyses.erasure import fit_eraser

    X = np.random.default_rng(0).standard_normal((50, 4))
    eraser = fit_eraser(method, X, np.zeros(50, dtype=np.int64), 2)
    assert eraser.rank == 0
    np.testing.assert_allclose(eraser(X), X, atol=1e-6)


def test_random_eraser_is_an_orthogonal_projection_of_the_given_rank():
    from featx.probing.analyses.erasure import random_eraser

    X = np.random.default_rng(0).standard_normal((100, 6))
    eraser = random_eraser(X, 2, seed=3)
    P = eraser.projection
    np.testing.assert_allclose(P @ P, P, atol=1e-10)
    assert eraser.rank == 2 and round(np.trace(P)) == 4


def test_an_unfinished_extraction_is_refused_with_a_fitting_hint(planted_file, tmp_path):
    import shutil

    partial = tmp_path / "p.h5.partial"
    shutil.copy(planted_file, partial)
    with h5py.File(partial, "r+") as file:
        file.attrs["complete"] = False
    result = CliRunner().invoke(main, ["erase", str(tmp_path / "p.h5"), "--label", "a"])
    assert result.exit_code == 2 and "incomplete" in result.output
    assert "--allow-partial" not in result.output and "featx extract" in result.output


@pytest.mark.slow
def test_erase_shows_a_progress_bar_that_quiet_turns_off(planted_file, tmp_path, capfd):
    options = dict(label="a", folds=3, jobs=1, amnesic="none", write=False)
    erase(planted_file, **options)
    assert "erase: 100%" in capfd.readouterr().err  # one step per layer x pooling, on stderr
    erase(planted_file, progress=False, **options)
    assert "erase" not in capfd.readouterr().err
    from featx.cli.generate import field_values

    command = main.commands["erase"]
    for quiet in ("-q", "--quiet"):
        with command.make_context("erase", [str(planted_file), quiet]) as context:
            assert field_values(command.config, context.params)["progress"] is False

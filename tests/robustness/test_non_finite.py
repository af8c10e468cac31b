"""Non-finite features: a file holding NaN (a model that overflowed in float16, a damaged or edited file) is
refused by every reader of features with one line naming the file, what was read and the first bad row,
instead of a traceback, a blank cell or a collapsed accuracy with exit 0."""

from __future__ import annotations

import importlib
import re
import shutil
import sys

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.tiny import WORDS

import featx
from featx.cli import main
from featx.errors import StoreError

BAD_ROW, BAD_TOKEN, BAD_WORD = 7, 30, 11


def _plant_nan(path, group: str, first: int) -> None:
    """NaN in one value of every dataset under ``group`` (``pooled``, ``tokens``, ``words/pooled``), at
    layer position 1 (layer 1 of the tiny model's 0, 1, 2)."""
    with h5py.File(path, "r+") as file:
        for dataset in file[group].values():
            if isinstance(dataset, h5py.Dataset) and dataset.dtype.kind == "f" and dataset.ndim == 3:
                dataset[first, 1, 3] = np.nan


@pytest.fixture
def nan_features(features_copy):
    _plant_nan(features_copy, "pooled", BAD_ROW)
    _plant_nan(features_copy, "tokens", BAD_TOKEN)
    return features_copy


POOLED = rf"non-finite values \(NaN\) in the '\w+' features of layer 1: first at row {BAD_ROW}\b"
TOKENS = rf"non-finite values \(NaN\) in the token states of layer 1: first at token {BAD_TOKEN}\b"

CASES = {  # name: (the command after FEATURES and before -o, what the line says)
    "logreg": (["probe", "{features}", "--classifier", "logreg", "--jobs", "1"], POOLED),
    "svm": (["probe", "{features}", "--classifier", "svm", "--jobs", "1"], POOLED),
    "mlp": (["probe", "{features}", "--classifier", "mlp", "--jobs", "1"], POOLED),
    "attention over tokens": (["probe", "{features}", "--classifier", "attn", "--jobs", "1"], TOKENS),
    "mdl": (["probe", "{features}", "--mdl", "--jobs", "1"], POOLED),
    "sweep": (["probe", "{features}", "--sweep", "--jobs", "1"], POOLED),
    # the probed layer 0 is clean: the bad layer 1 is read by the learning curves alone, checked before any fit
    "train sizes": (["probe", "{features}", "--layer", "0", "--train-sizes", "0.5,1", "--curve-layers", "1"], POOLED),
    "erase": (["erase", "{features}", "--label", "label"], POOLED),
    "neurons": (["neurons", "{features}", "--label", "label", "--draws", "2"], POOLED),
    "similarity": (["similarity", "{features}"], POOLED),
    "fit": (["fit", "{features}", "--label", "label"], POOLED),
}


def _never(*args, **kwargs):
    raise AssertionError("work (a probe, a CKA matrix) started before the features were checked")


# modules that bind a fitting function by name when imported: imported before the patch, so that none of them
# keeps the patched function after the test (and each is patched where it holds it)
BINDING_MODULES = ("featx.probing.tasks.classification", "featx.probing.tasks.regression", "featx.deploy.choose")
FITS = (("featx.probing.inputs", "run_jobs"), ("featx.deploy.choose", "score_candidate"))


def _forbid_fits(patch, fits=FITS) -> None:
    """Every function of ``fits`` replaced by ``_never`` in each featx module that holds it."""
    for name in BINDING_MODULES:
        importlib.import_module(name)
    for home, attribute in fits:
        original = getattr(importlib.import_module(home), attribute)
        for module in [m for n, m in sys.modules.items() if n.startswith("featx")]:
            if getattr(module, attribute, None) is original:
                patch.setattr(module, attribute, _never)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_every_reader_refuses_a_nan_with_one_line(nan_features, tmp_path, monkeypatch, name):
    """... before anything is fitted: every matrix a command will read is checked before its first job (layer 1
    is bad, so a command that checked each layer as its job read it would have fitted layer 0's probes first)."""
    args, pattern = CASES[name]
    output = tmp_path / "out" / "result"
    output.parent.mkdir()
    if name == "similarity":  # CKA fits nothing: no product of layers before the check
        monkeypatch.setattr("featx.report.similarity._cka_matrix", _never)
    else:
        _forbid_fits(monkeypatch)  # probe, sweep, erase, neurons: every job; fit: each candidate's folds
    command = [arg.format(features=nan_features) for arg in args] + ["-o", str(output)]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, re.escape(str(nan_features)) + " holds " + pattern)
    assert "hint: re-extract" in result.output and "--dtype float32" in result.output
    assert not any(output.parent.iterdir())  # nothing written


@pytest.mark.slow
def test_a_regression_probe_refuses_a_nan_its_learning_curves_would_read(split_features, tmp_path, monkeypatch):
    """The regression task checks what its jobs and its learning curves read before any fit, as classification."""
    features = tmp_path / "scored.h5"
    shutil.copy(split_features, features)
    _plant_nan(features, "pooled", BAD_ROW)
    _forbid_fits(monkeypatch)
    command = ["probe", str(features), "--label", "score", "--task", "regression", "--layer", "0"]
    result = CliRunner().invoke(
        main, [*command, "--train-sizes", "0.5,1", "--curve-layers", "1", "-o", str(tmp_path / "r")]
    )
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, re.escape(str(features)) + " holds " + POOLED)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scored.h5"]  # nothing written


def test_the_api_read_names_the_first_bad_row_and_a_clean_layer_still_reads(nan_features):
    with h5py.File(nan_features, "r+") as file:
        file["pooled/mean"][BAD_ROW + 5, 1, 0] = np.inf  # a later inf: the first bad row is still named
    with featx.open(nan_features) as features:
        assert np.isfinite(features.features("mean", 0)).all()
        with pytest.raises(StoreError, match=rf"\(NaN\).*layer 1: first at row {BAD_ROW} \(2 rows affected\)"):
            features.features("mean", 1)
        with pytest.raises(StoreError, match="layer 1: first at row"):
            features.features("mean", -2)


def _treebank(path, n_sentences: int) -> None:
    rng = np.random.default_rng(0)
    vocabulary = [word for word in WORDS if word.isalpha()]
    lines = []
    for s in range(n_sentences):
        words = list(rng.choice(vocabulary, size=4))
        lines += [f"# sent_id = s{s}", f"# text = {' '.join(words)}"]
        for i, word in enumerate(words):
            tag = ("NOUN", "VERB")[len(word) % 2]
            lines.append(
                f"{i + 1}\t{word}\t{word}\t{tag}\t_\t_\t{0 if i == 0 else 1}\t{'root' if i == 0 else 'dep'}\t_\t_"
            )
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_word_probe_refuses_a_nan_word_vector(tiny_model, tmp_path, monkeypatch):
    _treebank(tmp_path / "toy.conllu", 30)
    runner = CliRunner()
    out = runner.invoke(
        main,
        ["extract", str(tmp_path / "toy.conllu"), "--model", str(tiny_model), "-o", str(tmp_path / "toy.h5"), "-q"],
    )
    assert out.exit_code == 0, out.output
    _plant_nan(tmp_path / "toy.h5", "words/pooled", BAD_WORD)
    with monkeypatch.context() as patched:  # the word jobs (and the scalar mix over the layers) never start
        _forbid_fits(patched, FITS + (("featx.deploy.attach", "score_head_candidate"),))
        for command in (
            ["probe", str(tmp_path / "toy.h5"), "--label", "upos", "--jobs", "1", "-o", str(tmp_path / "r")],
            ["probe", str(tmp_path / "toy.h5"), "--label", "head", "--arcs", "-o", str(tmp_path / "r")],
            ["fit", str(tmp_path / "toy.h5"), "--label", "upos", "-o", str(tmp_path / "upos.featx")],
            ["fit", str(tmp_path / "toy.h5"), "--label", "head", "--arcs", "-o", str(tmp_path / "head.featx")],
        ):
            result = runner.invoke(main, command)
            assert result.exit_code == 2, result.output
            pattern = rf"in the '\w+' word vectors of layer 1: first at word {BAD_WORD}\b"
            assert_one_clear_error(result.output, pattern)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["toy.conllu", "toy.h5"]  # nothing written

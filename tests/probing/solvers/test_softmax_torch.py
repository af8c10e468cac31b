"""The torch softmax solver (``featx/probing/softmax_torch.py``) and the probe's device choice
(``featx/probing/devices.py``): the same solutions as the numpy solver, the dispatch of a whole probing
run, and clear errors for a GPU that is not there. CPU only: torch runs on device "cpu" here."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from support.blobs import blobs
from support.planted import plant
from support.planted_words import PlantedWords

from featx.cli import main
from featx.errors import InputError
from featx.probing import ProbeConfig, probe
from featx.probing.inputs import solver_plan
from featx.probing.solvers import devices, softmax, softmax_torch
from featx.probing.solvers.softmax_problem import prepare
from featx.probing.tasks.words import probe_words

THETA_ATOL = 2e-4  # weights of order 1; measured differences are below 3e-5
LOSS_RTOL = 1e-6


def _loss(X, labels, k, Cs, balanced, theta) -> np.ndarray:
    """The objective of every problem at ``theta``, evaluated by the numpy solver's objective."""
    problem = prepare(X, labels, k, Cs, balanced)
    objective = softmax._Objective(problem.X, problem.codes, problem.weights, problem.lam, problem.offsets)
    return objective(theta, np.arange(len(labels)))[0]


def _cases():
    X, y = blobs(k=4, seed=2)
    permuted = np.random.default_rng(3).permutation(y)
    Xb, yb = blobs(k=2, seed=1)
    rare = (y != 0) | (np.arange(len(y)) % 4 == 0)  # class 0 rare
    start = softmax.solve(X, [y], 4, [0.01]).theta[0]
    seen = y != 2  # class 2 never in the training labels
    return {
        "multinomial": (X, [y], 4, [0.1], False, None),
        "binary": (Xb, [yb], 2, [0.5], False, None),
        "balanced": (X[rare], [y[rare]], 4, [1.0], True, None),
        "batched": (X, [y, permuted, y], 4, [0.01, 1.0, 10.0], False, None),
        "warm start": (X, [y], 4, [0.1], False, [start]),
        "missing class": (X[seen], [y[seen]], 4, [1.0], False, None),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_same_solution_as_the_numpy_solver(case):
    X, labels, k, Cs, balanced, init = _cases()[case]
    ours = softmax.solve(X, labels, k, Cs, balanced, init=init)
    theirs = softmax_torch.solve(X, labels, k, Cs, balanced, init=init, device="cpu")
    assert theirs.theta.dtype == np.float64 and isinstance(theirs.n_iter, np.ndarray)
    np.testing.assert_array_equal(theirs.offsets, ours.offsets)
    np.testing.assert_allclose(theirs.theta, ours.theta, rtol=0, atol=THETA_ATOL)  # coefficients and intercepts
    np.testing.assert_allclose(
        _loss(X, labels, k, Cs, balanced, theirs.theta), _loss(X, labels, k, Cs, balanced, ours.theta), rtol=LOSS_RTOL
    )
    for p in range(len(labels)):
        np.testing.assert_array_equal(theirs.scores(X, p).argmax(axis=1), ours.scores(X, p).argmax(axis=1))
    np.testing.assert_array_equal(theirs.converged, ours.converged)
    assert np.all(np.abs(theirs.n_iter - ours.n_iter) <= 2)


def test_a_class_missing_from_the_fit_keeps_zero_weights_and_is_never_predicted():
    X, labels, k, Cs, balanced, _ = _cases()["missing class"]
    solution = softmax_torch.solve(X, labels, k, Cs, balanced, device="cpu")
    assert np.isneginf(solution.offsets[0, 2]) and not solution.theta[0][:, 2].any()
    full, y = blobs(k=4, seed=2)
    assert (solution.scores(full, 0).argmax(axis=1) != 2).all()


def test_objective_and_gradient_match_the_numpy_objective():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 6)).astype(np.float32)
    codes = [rng.integers(0, 3, 50), rng.integers(0, 2, 50)]  # the second problem never sees class 2
    problem = prepare(X, codes, 3, [0.3, 2.0], balanced=True)
    theta = rng.normal(size=problem.theta.shape)
    theta[1][:, 2] = 0
    numpy_loss, numpy_grad = softmax._Objective(
        problem.X, problem.codes, problem.weights, problem.lam, problem.offsets
    )(theta, np.arange(2))
    torch_loss, torch_grad = softmax_torch._Objective(problem, torch.device("cpu"))(
        torch.from_numpy(theta), torch.arange(2)
    )
    np.testing.assert_allclose(torch_loss.numpy(), numpy_loss, rtol=1e-6)
    np.testing.assert_allclose(torch_grad.numpy(), numpy_grad, rtol=1e-5, atol=1e-7)


def test_solve_dispatches_on_the_device_a_run_sets(monkeypatch):
    X, labels, k, Cs, balanced, _ = _cases()["batched"]
    calls = []
    real = softmax_torch.solve

    def counted(*args, **kw):
        calls.append(kw.get("device", args[-1]))
        return real(*args, **kw)

    monkeypatch.setattr(softmax_torch, "solve", counted)
    direct = real(X, labels, k, Cs, device="cpu")
    with devices.solver_device("cpu"):
        assert devices.current_device() == "cpu"
        dispatched = softmax.solve(X, labels, k, Cs)
        model = softmax.SoftmaxRegression(C=0.1).fit(X, labels[0])
    assert devices.current_device() is None and calls == ["cpu", "cpu"]
    np.testing.assert_array_equal(dispatched.theta, direct.theta)  # the same code path, bit for bit
    numpy_model = softmax.SoftmaxRegression(C=0.1).fit(X, labels[0])
    assert len(calls) == 2  # outside the block: numpy again
    np.testing.assert_array_equal(model.predict(X), numpy_model.predict(X))


def test_solve_refuses_arguments_that_disagree():
    X, y = blobs(n=50)
    with pytest.raises(ValueError, match="Cs"):
        softmax.solve(X, [y, y], 3, [1.0])
    with pytest.raises(ValueError, match="class codes"):
        softmax_torch.solve(X, [y], 2, [1.0], device="cpu")


# -- a whole probing run --------------------------------------------------------------------------------
@pytest.fixture
def torch_on_cpu(monkeypatch):
    """Resolve every probe's device to torch's CPU: the GPU code path, without a GPU."""
    calls = []
    real = softmax_torch.solve
    monkeypatch.setattr(devices, "resolve_device", lambda device: "cpu")
    monkeypatch.setattr(softmax_torch, "solve", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    return calls


@pytest.mark.slow
def test_a_probe_run_on_the_torch_solver_gives_the_same_table(features_copy, torch_on_cpu, monkeypatch):
    plant(features_copy, {1: 1.5}, pooling="mean")
    options = dict(poolings="mean", layers="all", folds=3, jobs=1, mdl=True, write=False)
    monkeypatch.setattr(devices, "resolve_device", lambda device: None)
    on_numpy = probe(features_copy, **options)
    assert not torch_on_cpu and on_numpy.meta["solver"] == "numpy" and on_numpy.meta["solver_device"] == "cpu"
    monkeypatch.setattr(devices, "resolve_device", lambda device: "cpu")
    on_torch = probe(features_copy, **options)
    assert torch_on_cpu and on_torch.meta["solver"] == "torch" and on_torch.meta["solver_device"] == "cpu"
    for column in ("accuracy", "macro_f1", "control_accuracy", "C"):
        np.testing.assert_array_equal(on_torch.table[column], on_numpy.table[column])
    np.testing.assert_allclose(on_torch.table.mdl_bits, on_numpy.table.mdl_bits, rtol=1e-4)


@pytest.mark.slow
def test_a_word_probe_run_on_the_torch_solver_gives_the_same_table(torch_on_cpu, monkeypatch):
    def run():
        config = ProbeConfig(features="planted", write=False, jobs=1, n_bootstrap=200, label="upos", poolings="mean")
        return probe_words(config, "planted", [], time.perf_counter(), source=PlantedWords(signal={2: 3.0}))

    monkeypatch.setattr(devices, "resolve_device", lambda device: None)
    on_numpy = run()
    monkeypatch.setattr(devices, "resolve_device", lambda device: "cpu")
    on_torch = run()
    assert torch_on_cpu and on_torch.meta["solver"] == "torch" and on_numpy.meta["solver"] == "numpy"
    np.testing.assert_array_equal(on_torch.table.accuracy, on_numpy.table.accuracy)


def test_on_a_gpu_jobs_take_turns_unless_jobs_is_given(monkeypatch):
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "4")  # a machine of 4 cores, whatever the test run sets
    monkeypatch.setattr(devices, "resolve_device", lambda device: "cuda:0")
    notes = []
    assert solver_plan(ProbeConfig(), 8, notes, solves=True) == ("cuda:0", 1)
    assert "one job at a time" in notes[0] and "--jobs" in notes[0]
    notes = []
    assert solver_plan(ProbeConfig(jobs=3), 8, notes, solves=True) == ("cuda:0", 3) and notes == []
    assert solver_plan(ProbeConfig(jobs=3), 8, notes, solves=False) == (None, 3)  # no logreg: not resolved


# -- the device option -----------------------------------------------------------------------------------
@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "cuda:-1", "mps", "", "cuda:\u00b2"])  # '²' passed isdigit
def test_a_device_that_is_not_understood_is_refused(device):
    with pytest.raises(InputError, match="not understood") as error:
        ProbeConfig(device=device)
    assert "auto, cpu, cuda or cuda:N" in error.value.hint


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "CUDA:1"])
def test_a_gpu_asked_for_without_one_says_what_to_do(device, no_gpu):
    with pytest.raises(InputError, match="sees no CUDA GPU") as error:
        ProbeConfig(device=device)
    assert "--device cpu" in error.value.hint
    ProbeConfig(device="auto")
    ProbeConfig(device=" CPU ")
    assert devices.resolve_device("cpu") is None


def test_a_gpu_index_that_is_not_there_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(InputError, match="1 GPU"):
        devices.check_device("cuda:1")
    assert devices.check_device("cuda:0") == "cuda:0"


@pytest.mark.slow
def test_auto_without_a_driver_is_the_numpy_solver_and_does_not_import_torch():
    code = (
        "import sys; from featx.probing import ProbeConfig; from featx.probing.solvers import devices; "
        "devices.driver_present = lambda: False; "
        "ProbeConfig(); print(devices.resolve_device('auto'), 'torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["None", "False"]


@pytest.mark.parametrize("device, message", [("cuda", "sees no CUDA GPU"), ("tpu", "not understood")])
def test_the_cli_reports_a_bad_device_without_a_traceback(tiny_features, no_gpu, device, message):
    result = CliRunner().invoke(main, ["probe", str(tiny_features), "--device", device, "--jobs", "1"])
    assert result.exit_code == 2 and message in result.output and "hint:" in result.output
    assert "Traceback" not in result.output


def test_sweep_refuses_a_gpu(tiny_features):
    result = CliRunner().invoke(main, ["probe", str(tiny_features), "--sweep", "--device", "cuda:0"])
    assert result.exit_code == 2 and "--sweep runs on the CPU" in result.output

"""``run_jobs``: outputs in the jobs' order, whichever process ran each job; device-free jobs prepared once in the
run's process, while the workers start."""

from __future__ import annotations

import os
import re

import pytest

from featx.probing.inputs import DeviceFreeJob, run_jobs


class Lexical(DeviceFreeJob):
    name = "lexical"


def _where(job) -> tuple[str, int]:
    return getattr(job, "name", job), os.getpid()


@pytest.mark.slow
def test_device_free_jobs_run_in_a_process_of_their_own_while_the_device_jobs_take_turns():
    jobs = [(Lexical(),), ("a",), ("b",), ("c",)]
    outputs = run_jobs(_where, jobs, 1, device="cpu")
    assert [name for name, _ in outputs] == ["lexical", "a", "b", "c"]
    pids = dict(outputs)
    assert pids["a"] == pids["b"] == pids["c"] == os.getpid() and pids["lexical"] != os.getpid()


@pytest.mark.slow  # over a second of CPU (worker processes / a figure of several sites)
def test_without_a_device_or_with_workers_nothing_is_set_aside():
    jobs = [(Lexical(),), ("a",)]
    assert {pid for _, pid in run_jobs(_where, jobs, 1)} == {os.getpid()}
    assert [name for name, _ in run_jobs(_where, jobs, 2, device="cpu")] == ["lexical", "a"]


class Prepared(DeviceFreeJob):
    """A job whose ``prepare`` (in the run's process) sets what its worker reads."""

    def __init__(self):
        self.calls: list[int] = []

    def prepare(self) -> None:
        self.calls.append(os.getpid())


def _prepared(job) -> list[int]:
    return job.calls if isinstance(job, Prepared) else []


@pytest.mark.slow
def test_device_free_jobs_are_prepared_once_in_the_runs_process_before_they_travel():
    for workers, device in ((1, None), (2, None), (1, "cpu"), (2, "cpu")):
        jobs = [(Prepared(),), ("a",), (Prepared(),)]
        outputs = run_jobs(_prepared, jobs, workers, device)
        assert outputs == [[os.getpid()], [], [os.getpid()]], (workers, device)


@pytest.mark.slow  # over a second of CPU (worker processes / a figure of several sites)
def test_outputs_come_back_in_the_jobs_order_whatever_went_out_first():
    # the device-free jobs (first here) go out after the first two others, once prepared
    jobs = [(Lexical(),), (Prepared(),), ("a",), ("b",), ("c",)]
    outputs = run_jobs(_where, jobs, 2)
    assert [name for name, _ in outputs][0] == "lexical" and [name for name, _ in outputs][2:] == ["a", "b", "c"]
    assert isinstance(outputs[1][0], Prepared) and outputs[1][0].calls == [os.getpid()]


class Failing(DeviceFreeJob):
    def prepare(self) -> None:
        raise RuntimeError("no counts for you")


@pytest.mark.slow
def test_a_failed_preparation_ends_the_run_with_its_error():
    for workers in (1, 2):
        with pytest.raises(RuntimeError, match="no counts for you"):
            run_jobs(_where, [("a",), ("b",), ("c",), ("d",), (Failing(),), ("e",)], workers)


@pytest.mark.parametrize("command", ["probe", "sweep", "neurons"])
@pytest.mark.parametrize("output", ["nodir/x", "", "sub/", "sub"])
def test_a_results_prefix_that_cannot_be_written_is_refused_before_any_probe(
    tiny_features, tmp_path, monkeypatch, output, command
):
    """``featx probe -o nodir/x`` (and ``--sweep``, ``featx neurons``) failed after every probe had run ("cannot
    write nodir/x.predictions.csv"), ``-o ''`` wrote ``..csv``, ``..json`` and ``..predictions.csv`` into the
    working folder and ``-o sub/`` wrote ``sub.csv`` beside the folder: each is refused before the first fit."""
    import featx
    from featx.errors import InputError
    from featx.probing import plan
    from featx.probing.analyses import neurons, sweep

    def no_probe(*args, **kwargs):
        raise AssertionError("a probe ran")

    monkeypatch.setattr(plan, "check_metric", no_probe)  # past probe's checks: its probes
    monkeypatch.setattr(sweep, "_run", no_probe)
    monkeypatch.setattr(neurons, "_run", no_probe)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()  # -o sub/ wrote sub.csv beside the folder
    run = {"probe": featx.probe, "sweep": featx.probing.sweep, "neurons": featx.probing.neurons}[command]
    with pytest.raises(InputError) as caught:
        run(tiny_features, label="label", layers="0", output=output)
    said = str(caught.value)  # from Python: the output keyword, never the -o flag
    assert "output" in caught.value.message and not re.search(r"(^|\s)-o\b", said)
    assert "output" in caught.value.hint or caught.value.message == "output='' is empty: give a path, or leave it out"
    assert ("nodir" in caught.value.message) == (output == "nodir/x")
    if output == "nodir/x":
        assert caught.value.hint == "create it, or choose a writable location with output=PREFIX"
    assert ("is a folder" in caught.value.message) == output.startswith("sub")
    assert [path.name for path in tmp_path.iterdir()] == ["sub"] and not any((tmp_path / "sub").iterdir())


def test_a_recorded_corpus_path_too_long_for_the_system_is_no_traceback(tmp_path):
    """A hostile or foreign features file's ``corpus_path`` longer than a file name may be: the corpus check (a
    warning when the corpus changed) finds no corpus there, as for any missing one, not an OSError traceback."""
    from types import SimpleNamespace

    from featx.probing.inputs import check_corpus

    features = SimpleNamespace(attrs={"corpus_path": "a" * 5000, "corpus_sha256": "0" * 64}, path=tmp_path / "f.h5")
    notes: list[str] = []
    check_corpus(features, notes)
    assert notes == []


@pytest.mark.parametrize(
    ("python", "hint"),
    [(True, "create it, or choose another prefix with output"), (False, "create it, or choose another prefix with -o")],
)
def test_results_that_cannot_be_written_name_the_output_as_its_caller_does(tmp_path, python, hint):
    """Results whose folder went away while the probes ran: ``-o`` on the command line, ``output`` from Python."""
    import pandas as pd

    from featx.errors import StoreError
    from featx.options import command_line, keywords_of
    from featx.probing import ProbeConfig
    from featx.probing.results import write_results

    missing = tmp_path / "gone"
    with pytest.raises(StoreError) as raised, keywords_of(ProbeConfig) if python else command_line():
        write_results(pd.DataFrame({"layer": [0]}), {}, missing / "r.csv", missing / "r.json")
    assert raised.value.hint == hint and not missing.exists()

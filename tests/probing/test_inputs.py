"""``run_jobs``: outputs in the jobs' order, whichever process ran each job."""

from __future__ import annotations

import os

from featx.probing.inputs import DeviceFreeJob, run_jobs


class Lexical(DeviceFreeJob):
    name = "lexical"


def _where(job) -> tuple[str, int]:
    return getattr(job, "name", job), os.getpid()


def test_device_free_jobs_run_in_a_process_of_their_own_while_the_device_jobs_take_turns():
    jobs = [(Lexical(),), ("a",), ("b",), ("c",)]
    outputs = run_jobs(_where, jobs, 1, device="cpu")
    assert [name for name, _ in outputs] == ["lexical", "a", "b", "c"]
    pids = dict(outputs)
    assert pids["a"] == pids["b"] == pids["c"] == os.getpid() and pids["lexical"] != os.getpid()


def test_without_a_device_or_with_workers_nothing_is_set_aside():
    jobs = [(Lexical(),), ("a",)]
    assert {pid for _, pid in run_jobs(_where, jobs, 1)} == {os.getpid()}
    assert [name for name, _ in run_jobs(_where, jobs, 2, device="cpu")] == ["lexical", "a"]

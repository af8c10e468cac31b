"""``run_jobs``: outputs in the jobs' order, whichever process ran each job."""

from __future__ import annotations

import os

from featx.probing.inputs import run_jobs


def _where(name: str) -> tuple[str, int]:
    return name, os.getpid()


def test_jobs_set_aside_run_in_a_process_of_their_own_while_the_device_jobs_take_turns():
    jobs = [("lexical",), ("a",), ("b",), ("c",)]
    outputs = run_jobs(_where, jobs, 1, device="cpu", aside=lambda job: job[0] == "lexical")
    assert [name for name, _ in outputs] == ["lexical", "a", "b", "c"]
    pids = {name: pid for name, pid in outputs}
    assert pids["a"] == pids["b"] == pids["c"] == os.getpid() and pids["lexical"] != os.getpid()


def test_without_a_device_or_with_workers_nothing_is_set_aside():
    jobs = [("lexical",), ("a",)]
    aside = lambda job: job[0] == "lexical"  # noqa: E731
    assert {pid for _, pid in run_jobs(_where, jobs, 1, aside=aside)} == {os.getpid()}
    assert [name for name, _ in run_jobs(_where, jobs, 2, device="cpu", aside=aside)] == ["lexical", "a"]

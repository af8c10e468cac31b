"""The local engine's probe workers: started by ``prepare`` before any stage, each with its share of the
cores (two workers on two cores: one BLAS thread each) and the probing code imported, and stopped by
``close``; a worker that dies fails its cell, and the cells handed out after it run in a fresh pool."""

from __future__ import annotations

import os

import pytest
from support.study_files import pid_after_a_moment
from threadpoolctl import threadpool_info

from featx.study.cells import PROBE, Task
from featx.study.engines import LocalEngine
from featx.study.records import state_folder
from featx.study.workers import share_of_cores


@pytest.mark.slow  # two spawned interpreters importing the probing code: 1.6 s quiet, more when shared
def test_prepared_workers_use_their_share_of_the_cores():
    engine = LocalEngine()
    engine.prepare(2)
    pool = engine._pool
    try:
        assert pool is not None
        want = share_of_cores(2)
        assert pool.submit(os.getenv, "OMP_NUM_THREADS").result() == str(want)
        blas = [lib["num_threads"] for lib in pool.submit(threadpool_info).result() if lib["user_api"] == "blas"]
        assert blas and set(blas) == {want}
    finally:
        engine.close()
    assert engine._pool is None


@pytest.mark.slow
def test_a_worker_that_dies_fails_its_cell_and_the_later_cells_still_run(tmp_path):
    state_folder(tmp_path)
    # both workers' first tasks end their process, so the pool is broken before the next two are handed out
    functions = ["support.study_files:worker_dies"] * 2 + ["support.study_files:worker_lives"] * 2
    tasks = [Task(f"probe/cell{index}", PROBE, name, {}, str(tmp_path)) for index, name in enumerate(functions)]
    engine = LocalEngine()
    try:
        outcomes = engine.run(tasks, 2, lambda task, outcome: None)
    finally:
        engine.close()
    assert outcomes[0]["status"] == "failed" and "its worker died" in outcomes[0]["error"]
    assert [outcome["status"] for outcome in outcomes[2:]] == ["done", "done"]  # a fresh pool ran them


@pytest.mark.slow
def test_ctrl_c_to_idle_workers_leaves_them_serving(tmp_path, capfd):
    """A terminal's Ctrl-C reaches every process of the run: an idle worker ignores it (the driver decides),
    where it died printing a KeyboardInterrupt traceback and broke the pool, failing the next cells."""
    import signal

    state_folder(tmp_path)
    engine = LocalEngine()
    engine.prepare(2)
    try:
        pool = engine._pool
        assert pool is not None
        pids: set[int] = set()
        for _ in range(400):  # until every worker has answered a call (its initializer ran)
            pids |= {future.result() for future in [pool.submit(pid_after_a_moment) for _ in range(2)]}
            if pids == set(pool._processes):
                break
        assert pids == set(pool._processes)
        for pid in pids:
            os.kill(pid, signal.SIGINT)
        tasks = [
            Task(f"probe/cell{index}", PROBE, "support.study_files:worker_lives", {}, str(tmp_path))
            for index in range(4)
        ]
        outcomes = engine.run(tasks, 2, lambda task, outcome: None)
    finally:
        engine.close()
    assert [outcome["status"] for outcome in outcomes] == ["done"] * 4
    assert "KeyboardInterrupt" not in capfd.readouterr().err

"""Commits by time as well as memory, and SIGTERM/SIGHUP handled like Ctrl-C.

A commit block (the unit the memory budget sizes) may take minutes on a big model; its finished batches are
committed every ``--commit-seconds`` on batch boundaries (``progress/window``), so a kill loses at most
that much work, and the batch plan (hence the features, bit for bit, and the fingerprint) is unchanged.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess

import h5py
import pytest
from support.faults import (
    assert_same_file,
    featx_env,
    finish,
    many_rows_csv,
    no_traceback,
    reference_run,
    rows_done,
    single_thread_torch,
    start,
    wait_until,
)

import featx
from featx.extraction import ExtractConfig, extract
from featx.store import partial_path

N_ROWS = 360
BATCH = 8
BATCHES = N_ROWS // BATCH  # one commit block holds the whole corpus: only commits by time can save work


def block_marker(output):
    """``(commit block start, batches committed inside it)`` of ``<output>.partial`` as another process sees it."""
    try:
        with h5py.File(partial_path(output), "r", locking=False) as file:
            start, done = (int(value) for value in file["progress/window"][()])
            return start, done
    except Exception:  # not there yet, or being created
        return None


def batches_committed(output) -> int:
    marker = block_marker(output)
    return marker[1] if marker and marker[0] == 0 else 0


def one_block_args(corpus, model, output, *extra):
    import sys

    return [
        sys.executable,
        "-m",
        "featx",
        "extract",
        str(corpus),
        "--model",
        str(model),
        "-o",
        str(output),
        "-q",
        "--commit-rows",
        "1000",
        "--batch-size",
        str(BATCH),
        "--tokens",
        "--commit-seconds",
        "0.001",
        *extra,
    ]


@pytest.mark.slow
def test_sigkill_at_three_random_points_inside_one_commit_block_resumes_to_the_same_file(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv", N_ROWS)
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5", commit_rows=1000)
    output = tmp_path / "out.h5"
    args = one_block_args(corpus, tiny_model, output)
    seed = int.from_bytes(os.urandom(4), "little")
    targets = sorted(random.Random(seed).sample(range(2, BATCHES * 2 // 3), 3))
    landed = []
    for target in targets:
        goal = max(target, batches_committed(output) + 2)  # this run's own commits, past the last run's
        process = start(args, tmp_path)
        reached = wait_until(lambda goal=goal: batches_committed(output) >= goal, process)
        process.kill()
        process.wait()
        landed.append(reached)
        if reached:  # nothing committed is lost: the marker only moves forward
            assert rows_done(output) == 0 and batches_committed(output) >= goal
    final = subprocess.run(args, cwd=tmp_path, env=featx_env(), capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    assert all(landed), f"seed {seed}: the run ended before {targets}"
    assert "resumed at row 0, plus" in final.stdout and "rows committed inside the next commit block" in final.stdout
    assert_same_file(reference, output)


def test_work_between_commits_never_exceeds_the_interval(tiny_model, tmp_path, monkeypatch):
    """On a fake clock where every batch takes 3 s, a kill at any moment loses less than the 10 s interval:
    the work since the last committed batch finished is under 10 s whenever a commit is made."""
    from featx.extraction.forward.runner import Runner
    from featx.extraction.run import loop

    now = {"t": 0.0}
    monkeypatch.setattr(loop.time, "perf_counter", lambda: now["t"])
    original_call, original_committed = Runner.__call__, loop.CommitClock.committed

    def slow_batch(self, *args):
        now["t"] += 3.0
        return original_call(self, *args)

    exposed = []  # work at risk just before each commit (a kill then would lose it), fake seconds

    def committed(self):
        exposed.append(now["t"] - self.covered)
        original_committed(self)

    monkeypatch.setattr(Runner, "__call__", slow_batch)
    monkeypatch.setattr(loop.CommitClock, "committed", committed)
    corpus = many_rows_csv(tmp_path / "corpus.csv", 120)
    with single_thread_torch():
        extract(
            ExtractConfig(
                corpus=corpus,
                output=tmp_path / "out.h5",
                model=str(tiny_model),
                batch_size=BATCH,
                commit_rows=1000,
                progress=False,
            )
        )
    # 15 batches of 3 s = 45 s of work in one commit block: several commits inside it, then the block's own.
    assert len(exposed) >= 4 and max(exposed) < 10.0, exposed


def test_commits_by_time_change_neither_features_nor_fingerprint(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 80)
    with single_thread_torch():
        often = extract(
            ExtractConfig(
                corpus=corpus,
                output=tmp_path / "often.h5",
                model=str(tiny_model),
                batch_size=BATCH,
                tokens=True,
                commit_seconds=1e-6,
                progress=False,
            )
        ).output
        once = extract(
            ExtractConfig(
                corpus=corpus,
                output=tmp_path / "once.h5",
                model=str(tiny_model),
                batch_size=BATCH,
                tokens=True,
                progress=False,
            )
        ).output
    assert_same_file(once, often)
    with featx.open(often) as a, featx.open(once) as b:
        assert a.fingerprint == b.fingerprint


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP")])
def test_sigterm_and_sighup_stop_like_ctrl_c(tiny_model, tmp_path, sig, code, name):
    corpus = many_rows_csv(tmp_path / "corpus.csv", N_ROWS)
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5", commit_rows=1000)
    output = tmp_path / "out.h5"
    args = one_block_args(corpus, tiny_model, output)
    process = start(args, tmp_path)
    reached = wait_until(lambda: batches_committed(output) >= 3, process)
    process.send_signal(sig)
    _, stderr = finish(process, 120)
    if not reached:
        pytest.skip("the run finished before the signal could land")
    assert process.returncode == code, stderr
    assert f"interrupted ({name})" in stderr and "run the same featx extract command again" in stderr
    assert stderr.count("\n") == 2, stderr  # the message and its hint
    no_traceback(stderr)
    assert not output.with_name("out.h5.lock").exists()  # released and removed
    assert batches_committed(output) >= 3 and not output.exists()
    saved = re.search(r"(\d+) of \d+ rows are saved in .*\((\d+) of them committed inside the next commit", stderr)
    assert saved is not None and saved[1] == saved[2], stderr  # the rows, not batches, of the commits inside
    final = subprocess.run(args, cwd=tmp_path, env=featx_env(), capture_output=True, text=True, timeout=300)
    assert final.returncode == 0 and f"resumed at row 0, plus {saved[1]} rows committed inside" in final.stdout
    assert_same_file(reference, output)


@pytest.mark.slow
def test_sigterm_while_the_model_loads_releases_the_lock(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 24)
    output = tmp_path / "out.h5"
    process = start(one_block_args(corpus, tiny_model, output), tmp_path)
    lock = output.with_name(output.name + ".lock")
    assert wait_until(lock.exists, process)
    process.send_signal(signal.SIGTERM)
    _, stderr = finish(process, 60)
    assert process.returncode == 143, stderr
    assert "SIGTERM" in stderr and "run the same" in stderr
    no_traceback(stderr)
    assert not lock.exists()


LIBRARY_RUN = """
import sys
import featx
from featx.errors import Interrupted

options = dict(model=sys.argv[2], output=sys.argv[3], batch_size={batch}, commit_rows=1000, tokens=True,
               commit_seconds=0.001, progress=False)
try:
    featx.extract(sys.argv[1], **options)
except Interrupted as stop:
    print("stopped", stop.exit_code, stop, file=sys.stderr)
    sys.exit(3)
"""


@pytest.mark.slow
def test_sigterm_inside_featx_extract_from_python_leaves_a_resumable_file(tiny_model, tmp_path):
    import sys

    corpus = many_rows_csv(tmp_path / "corpus.csv", N_ROWS)
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5", commit_rows=1000)
    output = tmp_path / "out.h5"
    script = LIBRARY_RUN.format(batch=BATCH)
    process = start([sys.executable, "-c", script, str(corpus), str(tiny_model), str(output)], tmp_path)
    reached = wait_until(lambda: batches_committed(output) >= 3, process)
    process.send_signal(signal.SIGTERM)
    _, stderr = finish(process, 120)
    if not reached:
        pytest.skip("the run finished before the signal could land")
    assert process.returncode == 3 and "stopped 143 interrupted (SIGTERM)" in stderr, stderr  # one clear error
    assert not output.with_name("out.h5.lock").exists()  # released and removed
    assert batches_committed(output) >= 3 and not output.exists()
    with single_thread_torch():
        summary = featx.extract(
            corpus,
            model=str(tiny_model),
            output=output,
            batch_size=BATCH,
            commit_rows=1000,
            tokens=True,
            commit_seconds=0.001,
            progress=False,
        )
    assert summary.status == "resumed" and summary.resumed_from == 0 and summary.resumed_inside > 0, summary
    assert_same_file(reference, output)


def test_featx_extract_restores_the_previous_signal_handlers(tiny_model, tmp_path, monkeypatch):
    from featx.extraction.run import orchestrate

    corpus = many_rows_csv(tmp_path / "corpus.csv", 16)
    original, seen = orchestrate.extract, {}

    def mine(signum, frame):  # pragma: no cover - never sent
        pass

    def spy(config):
        seen["during"] = signal.getsignal(signal.SIGTERM)
        return original(config)

    monkeypatch.setattr(orchestrate, "extract", spy)
    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with single_thread_torch():
            featx.extract(corpus, model=str(tiny_model), output=tmp_path / "out.h5", progress=False)
        assert seen["during"] is not mine and signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)

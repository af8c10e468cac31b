"""Faults: kills, Ctrl-C, a full disk, concurrent readers and writers. Nothing committed is ever lost.

The subprocess tests run the real ``featx extract`` on the tiny model and interrupt it while the
``.partial`` file's ``progress/rows_done`` marker moves; the finished file is then compared, row for
row and bit for bit, with an uninterrupted run.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import signal
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner
from support.faults import (
    COMMIT_ROWS,
    N_ROWS,
    assert_same_file,
    extract_args,
    featx_env,
    many_rows_csv,
    no_traceback,
    reference_run,
    rows_done,
    single_thread_torch,
    start,
    wait_until,
)

import featx
from featx.cli import main
from featx.errors import IncompleteError, StoreError
from featx.extraction import ExtractConfig, extract
from featx.store import FeatureWriter, OutputLock, creating_path, partial_path

# -- SIGKILL and Ctrl-C at random points ---------------------------------------------------------


@pytest.mark.slow
def test_random_kills_and_ctrl_c_then_rerun_equals_uninterrupted_run(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv")
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5")
    output = tmp_path / "out.h5"
    args = extract_args(corpus, tiny_model, output)
    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    # Targets at least two commit blocks apart and a third of the corpus before its end, so each run has work
    # left when its signal lands.
    first, second, third = (
        COMMIT_ROWS + offset + 2 * COMMIT_ROWS * k
        for k, offset in enumerate(sorted(rng.sample(range(N_ROWS * 2 // 3 - 5 * COMMIT_ROWS), 3)))
    )
    landed = []

    # 1. SIGKILL while the file is being created (before its first flush).
    process = start(args, tmp_path)
    created = wait_until(lambda: creating_path(output).exists() or partial_path(output).exists(), process)
    process.kill()
    process.wait()
    landed.append(("SIGKILL at creation", created))
    assert not output.exists()

    # 2-4. SIGKILL, Ctrl-C, SIGKILL once random numbers of rows are committed; each run resumes the last.
    for row, sig in ((first, signal.SIGKILL), (second, signal.SIGINT), (third, signal.SIGKILL)):
        # Wait for this run's own commits: the marker left by the last run may already be past ``row``,
        # and a signal sent before the interpreter has installed its handlers would kill it silently.
        target = max(row, (rows_done(output) or 0) + COMMIT_ROWS)
        process = start(args, tmp_path)
        reached = wait_until(lambda target=target: (rows_done(output) or 0) >= target, process)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=120)
        landed.append((f"{sig.name} at row {row}", reached))
        if sig == signal.SIGINT and reached:
            assert process.returncode == 130, stderr
            assert "rows are saved in" in stderr and "run the same featx extract command again" in stderr
            no_traceback(stderr)
        if reached:
            assert not output.exists() and rows_done(output) is not None and rows_done(output) >= target - COMMIT_ROWS

    final = subprocess.run(args, cwd=tmp_path, env=featx_env(), capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    assert "resumed at row" in final.stdout
    assert [name for name, hit in landed if not hit] == [], f"seed {seed}: the run ended before {landed}"
    assert not partial_path(output).exists() and not creating_path(output).exists()
    assert_same_file(reference, output)


def test_damaged_partial_from_a_killed_creation_restarts(tiny_model, tmp_path):
    """A ``.partial`` that cannot be reopened (an older featx killed mid-creation) holds nothing usable."""
    corpus = many_rows_csv(tmp_path / "corpus.csv", 24)
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5")
    output = tmp_path / "out.h5"
    partial_path(output).write_bytes(reference.read_bytes()[:3000])  # truncated mid-metadata
    creating_path(output).write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)  # leftover of a killed creation
    summary = reference_run(corpus, tiny_model, output)
    assert summary == output and not creating_path(output).exists()
    assert_same_file(reference, output)


@pytest.mark.parametrize("where", ["load_model", "tokenize_texts", "collate", "write_block", "commit"])
def test_ctrl_c_anywhere_is_a_clean_exit_130_and_resumable(tiny_model, tmp_path, monkeypatch, where):
    """KeyboardInterrupt in the main thread, the collate thread or the writer thread: one message, code 130."""
    from featx.extraction.model import loading as modeling
    from featx.extraction.run import loop, orchestrate

    corpus = many_rows_csv(tmp_path / "corpus.csv", 40)
    output = tmp_path / "out.h5"
    calls = {"n": 0}

    def interrupt_on_second_call(original):
        def wrapper(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 2 or where in ("load_model", "tokenize_texts"):
                raise KeyboardInterrupt
            return original(*args, **kwargs)

        return wrapper

    if where in ("write_block", "commit"):
        monkeypatch.setattr(FeatureWriter, where, interrupt_on_second_call(getattr(FeatureWriter, where)))
    else:
        module = {"collate": loop, "load_model": modeling}.get(where, orchestrate)
        monkeypatch.setattr(module, where, interrupt_on_second_call(getattr(module, where)))
    cli_args = [
        "extract",
        str(corpus),
        "--model",
        str(tiny_model),
        "-o",
        str(output),
        "-q",
        "--commit-rows",
        str(COMMIT_ROWS),
        "--batch-size",
        "8",
    ]
    result = CliRunner().invoke(main, cli_args)
    assert result.exit_code == 130, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert "run the same" in result.output and "again" in result.output
    monkeypatch.undo()
    resumed = CliRunner().invoke(main, cli_args)
    assert resumed.exit_code == 0, resumed.output
    with featx.open(output) as features:
        assert features.n_rows == 40 and features.complete


@pytest.mark.slow
def test_ctrl_c_during_model_load_in_a_real_process(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 24)
    output = tmp_path / "out.h5"
    process = start(extract_args(corpus, tiny_model, output), tmp_path)
    lock = output.with_name(output.name + ".lock")
    assert wait_until(lock.exists, process), process.communicate()
    process.send_signal(signal.SIGINT)  # the lock is taken just before the model loads
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "run the same command again" in stderr or "run the same featx extract command again" in stderr
    no_traceback(stderr)
    with OutputLock(output):  # the lock was released (its file may stay: a lock file holds no lock)
        pass


# -- a full disk ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_disk_full_during_a_write_keeps_old_file_and_resumes(tiny_model, tmp_path, monkeypatch):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 60)
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5")
    output = tmp_path / "out.h5"
    reference_run(corpus, tiny_model, output, poolings="mean", tokens=False)  # an earlier, complete file
    before = hashlib.sha256(output.read_bytes()).hexdigest()
    original = FeatureWriter.write_block
    calls = {"n": 0}

    def full_disk(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] >= 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FeatureWriter, "write_block", full_disk)
    cli_args = [
        "extract",
        str(corpus),
        "--model",
        str(tiny_model),
        "-o",
        str(output),
        "-q",
        "--overwrite",
        "--commit-rows",
        str(COMMIT_ROWS),
        "--batch-size",
        "8",
        "--tokens",
    ]
    with single_thread_torch():
        result = CliRunner().invoke(main, cli_args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("featx: error: writing") and "No space left on device" in result.output
    assert f"{2 * COMMIT_ROWS} of 60 rows are saved" in result.output and "free disk space" in result.output
    assert "Traceback" not in result.output
    assert hashlib.sha256(output.read_bytes()).hexdigest() == before
    assert rows_done(output) == 2 * COMMIT_ROWS

    monkeypatch.setattr(FeatureWriter, "write_block", original)  # space freed: the same command resumes
    with single_thread_torch():
        result = CliRunner().invoke(main, cli_args)
    assert result.exit_code == 0, result.output
    assert f"resumed at row {2 * COMMIT_ROWS}" in result.output
    assert_same_file(reference, output)


@pytest.fixture
def small_filesystem(tmp_path):
    """A 300 KB tmpfs (root with CAP_SYS_ADMIN only); skipped where mounting is not permitted."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount_point)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.mark.slow
def test_real_full_filesystem_is_reported_before_any_work_then_runs_once_space_is_freed(
    tiny_model, tmp_path, small_filesystem
):
    """The file's space is reserved at creation, so a full disk stops the run before any row is computed."""
    corpus = many_rows_csv(tmp_path / "corpus.csv", 600)
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5")
    output = small_filesystem / "out.h5"
    old = small_filesystem / "old.h5"
    old.write_bytes(b"an earlier result" * 1000)
    failed = subprocess.run(
        extract_args(corpus, tiny_model, output),
        cwd=tmp_path,
        env=featx_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert failed.returncode == 2, failed.stderr
    assert failed.stderr.startswith("featx: error: not enough disk space for") and "MB" in failed.stderr
    assert "free disk space" in failed.stderr and failed.stderr.count("\n") == 2, failed.stderr
    assert sorted(path.name for path in small_filesystem.iterdir()) == ["old.h5"]  # nothing left behind
    assert old.read_bytes() == b"an earlier result" * 1000
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_filesystem)], check=True)
    assert reference_run(corpus, tiny_model, output) == output
    assert_same_file(reference, output)


# -- readers and a second writer while extraction runs ----------------------------------------------


@pytest.mark.slow
def test_reader_and_second_writer_during_extraction(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv")
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5")
    with featx.open(reference) as full:
        expected_mean = full.features("mean", 2)
        expected_texts = full.texts
    output = tmp_path / "out.h5"
    args = extract_args(corpus, tiny_model, output)
    writer = start(args, tmp_path)
    views = []

    def read_once() -> bool:
        """One reader's view; False once the file is finished and renamed into place."""
        try:
            featx.open(output).close()
            return False
        except IncompleteError as err:
            assert "incomplete" in err.message and "featx extract command again" in err.hint
        try:
            featx.open(partial_path(output)).close()  # the .partial itself, by name
            return False
        except IncompleteError as err:
            assert "incomplete" in err.message
        except StoreError:
            if output.exists():  # renamed between the checks
                return False
            raise
        try:
            partial = featx.open(output, allow_partial=True)
        except StoreError:
            if output.exists():  # renamed between the two opens
                return False
            raise
        with partial:
            n = partial.n_rows
            np.testing.assert_array_equal(partial.features("mean", 2), expected_mean[:n])
            assert partial.texts == expected_texts[:n]
            assert len(partial.labels("tense")) == n
            if partial.complete:  # finished and renamed since the first open: that is the whole file
                assert n == N_ROWS
                return False
            views.append(n)
        return True

    try:
        assert wait_until(lambda: (rows_done(output) or 0) >= 3 * COMMIT_ROWS, writer)
        os.kill(writer.pid, signal.SIGSTOP)  # hold it mid-run, lock held, so the second writer surely meets it
        try:
            assert read_once()
            second = subprocess.run(args, cwd=tmp_path, env=featx_env(), capture_output=True, text=True, timeout=120)
        finally:
            os.kill(writer.pid, signal.SIGCONT)
        assert second.returncode == 2, second.stderr
        assert "another featx extract (pid" in second.stderr and "is writing out.h5" in second.stderr
        no_traceback(second.stderr)
        while writer.poll() is None and read_once():  # always a committed prefix, never garbage
            pass
        _, stderr = writer.communicate(timeout=300)
    finally:
        if writer.poll() is None:  # only after a failed assertion above
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, stderr
    assert len(views) >= 2 and views == sorted(views), views
    assert_same_file(reference, output)


def test_kill_between_marking_complete_and_renaming(tiny_model, tmp_path):
    """The last commit block of a kill: ``.partial`` is complete but not yet renamed; the rerun only renames it."""
    corpus = many_rows_csv(tmp_path / "corpus.csv", 24)
    reference = reference_run(corpus, tiny_model, tmp_path / "reference.h5")
    output = tmp_path / "out.h5"
    partial_path(output).write_bytes(reference.read_bytes())
    with single_thread_torch():
        summary = extract(
            ExtractConfig(
                corpus=corpus,
                output=output,
                model=str(tiny_model),
                commit_rows=COMMIT_ROWS,
                batch_size=8,
                tokens=True,
                progress=False,
            )
        )
    assert summary.status == "resumed" and summary.resumed_from == 24
    assert output.read_bytes() == reference.read_bytes() and not partial_path(output).exists()

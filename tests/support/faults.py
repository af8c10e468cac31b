"""Running ``featx extract`` in a real child process, watching its committed rows, and comparing finished
files bit for bit: the helpers of the fault tests (``tests/robustness``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import h5py
import numpy as np

import featx
from featx.extraction import ExtractConfig, extract
from featx.store import partial_path
from support.tiny import SENTENCES, write_csv

REPO = Path(featx.__file__).resolve().parent.parent
N_ROWS = 360
COMMIT_ROWS = 10


def many_rows_csv(path: Path, n_rows: int = N_ROWS) -> Path:
    rows = [
        (f"{text} {number}", sentiment, tense, split)
        for number, (text, sentiment, tense, split) in (
            (number, SENTENCES[number % len(SENTENCES)]) for number in range(n_rows)
        )
    ]
    return write_csv(path, rows)


def featx_env() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONFAULTHANDLER": "1",  # a child that hangs can be made to print every thread's stack (``finish``)
    }


def extract_args(corpus: Path, model: Path, output: Path, *extra: str) -> list[str]:
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
        str(COMMIT_ROWS),
        "--batch-size",
        "8",
        "--tokens",
        *extra,
    ]


def _default_signals() -> None:
    # A suite started in the background (``make test &``, nohup) passes SIGINT/SIGHUP on as ignored, and
    # Python then never raises KeyboardInterrupt: give the child the dispositions a terminal would.
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=featx_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )


def finish(process: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """``process.communicate(timeout=timeout)``; a child still running then is sent SIGABRT, on which Python's
    fault handler (``featx_env``) prints every thread's stack, and the test fails with those stacks: a hang after
    a signal says where it hung instead of only that it timed out."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        _, stderr = process.communicate(timeout=60)
        raise AssertionError(
            f"the child did not exit within {timeout:g} s; its threads when aborted:\n{stderr[-8000:]}"
        ) from None


def rows_done(output: Path) -> int | None:
    """The committed-rows marker of ``<output>.partial`` as another process sees it, or None."""
    try:
        with h5py.File(partial_path(output), "r", locking=False) as file:
            return int(file["progress/rows_done"][0])
    except Exception:  # not there yet, or being created
        return None


def wait_until(condition, process: subprocess.Popen, timeout: float = 120.0) -> bool:
    """Poll ``condition`` until it holds (True) or the process exits first (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if process.poll() is not None:
            return False
        time.sleep(0.002)
    raise AssertionError("timed out waiting for the extraction")


@contextmanager
def single_thread_torch():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the subprocesses run with OMP_NUM_THREADS=1: same arithmetic, same bits
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def reference_run(corpus: Path, model: Path, output: Path, **options) -> Path:
    config = dict(commit_rows=COMMIT_ROWS, batch_size=8, tokens=True, progress=False)
    config.update(options)
    with single_thread_torch():
        return extract(ExtractConfig(corpus=corpus, output=output, model=str(model), **config)).output


def assert_same_file(expected: Path, actual: Path) -> None:
    """Row for row: every pooled and token dataset bit-identical, texts and ids identical, all committed."""
    with h5py.File(expected, "r") as a, h5py.File(actual, "r") as b:
        assert b.attrs["complete"] and int(b["progress/rows_done"][0]) == int(a.attrs["n_rows"])
        for group in ("pooled", "tokens", "rows", "labels"):
            assert sorted(a[group]) == sorted(b[group]), group
            for name in a[group]:
                np.testing.assert_array_equal(a[group][name][()], b[group][name][()], err_msg=f"{group}/{name}")
    with featx.open(expected) as a, featx.open(actual) as b:
        assert a.texts == b.texts and a.ids == b.ids and a.n_rows == b.n_rows


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr


def link_each_temporary(monkeypatch, victim: Path) -> None:
    """What someone who can write to an output's folder could do: each ``tempfile.mkstemp`` file's name is swapped
    for a link to ``victim`` as soon as it is made (featx holds the file's descriptor); featx must never write,
    truncate or chmod the victim through that name, nor rename the link into place."""
    import tempfile

    make = tempfile.mkstemp

    def mkstemp(*args, **options):
        descriptor, name = make(*args, **options)
        os.unlink(name)
        os.symlink(victim, name)
        return descriptor, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)

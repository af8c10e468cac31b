"""featx.exiting: the console command ends without the interpreter's teardown, as ``sys.exit`` would end it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from featx.exiting import can_exit_now, exit_code

REPO = Path(__file__).resolve().parent.parent


def _python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


def test_exit_code_is_what_sys_exit_gives():
    assert exit_code(None) == 0
    assert exit_code(3) == 3
    assert exit_code(True) == 1


def test_exit_code_of_a_message_is_one_and_the_message_on_stderr(capsys):
    assert exit_code("featx: stopped") == 1
    assert capsys.readouterr().err == "featx: stopped\n"


def test_exit_now_runs_atexit_flushes_and_keeps_the_code():
    code = (
        "import atexit, sys\n"
        "from featx.exiting import exit_now\n"
        "atexit.register(lambda: print(' atexit ran', end=''))\n"
        "print('unflushed', end='')\n"
        "sys.stderr.write('err')\n"
        "exit_now(3)\n"
    )
    result = _python(code)
    assert (result.returncode, result.stdout, result.stderr) == (3, "unflushed atexit ran", "err")


@pytest.mark.slow
def test_a_running_thread_that_is_no_daemon_gets_the_normal_exit():
    code = (
        "import threading, time\n"
        "from featx.exiting import can_exit_now, exit_now\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread finished'))).start()\n"
        "print(can_exit_now())\n"
        "exit_now(0)\n"
    )
    result = _python(code)
    assert (result.returncode, result.stdout) == (0, "False\nthread finished\n")


def test_an_open_hdf5_file_gets_the_normal_exit(tmp_path):
    with h5py.File(tmp_path / "open.h5", "w") as file:
        file["x"] = [1, 2, 3]
        assert not can_exit_now()


def test_the_console_command_ends_with_its_code_and_output(tmp_path):
    ok = _python("import sys; sys.argv = ['featx', '--version']; from featx.cli import run; run()")
    assert ok.returncode == 0 and "featx" in ok.stdout
    missing = _python(f"from featx.cli import run; run(['labels', {str(tmp_path / 'none.h5')!r}])")
    assert missing.returncode != 0 and missing.stderr.startswith("featx: error:")

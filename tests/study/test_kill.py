"""``kill -9`` at a random point of a study, then the same command: nothing finished is redone, and the
results are those of an uninterrupted study."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from support.study_files import study_dict, to_toml

import featx.study


def _done(output) -> dict[str, dict]:
    states = {}
    for path in (output / ".study").glob("*.json") if (output / ".study").is_dir() else []:
        try:
            state = json.loads(path.read_text())
        except ValueError:  # never: states are renamed into place whole
            raise AssertionError(f"{path} is not whole") from None
        if state["status"] == "done":
            states[state["key"]] = state
    return states


@pytest.mark.slow
def test_killed_at_a_random_cell_then_run_again(done_study, tiny_model, study_corpora, tmp_path):
    output = tmp_path / "out"
    path = tmp_path / "study.toml"
    path.write_text(to_toml(study_dict(tiny_model, study_corpora, output, bad=False)))
    cells = random.Random(os.getpid()).randint(1, 9)  # of the 10 cells
    command = [sys.executable, "-m", "featx", "study", "run", str(path)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(_done(output)) < cells and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = _done(output)
    lines: list[str] = []
    result = featx.study.run(path, echo=lines.append)
    assert all(f"{key}: up to date" in lines for key in before), (cells, lines)
    after = _done(output)
    assert all(after[key] == state for key, state in before.items())
    pd.testing.assert_frame_equal(result.results, done_study[1].results)
    pd.testing.assert_frame_equal(result.summary, done_study[1].summary)

"""Each cell's state: done only for the same request with its outputs there; a running cell told apart from
one a killed run left."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from featx.study import format_status, make_plan, status
from featx.study.records import DONE, PENDING, cell_status, record_state, state_path


def test_states_and_status(tmp_path):
    (tmp_path / "a.csv").write_text("text,x\nhi,1\n")
    study = {"study": {"output": str(tmp_path / "out")}, "models": [{"name": "m"}],
             "corpora": [{"name": "a", "path": str(tmp_path / "a.csv"), "labels": ["x", "y"]}]}  # fmt: skip
    plan = make_plan(study)
    extraction, first, second = (cell.task for cell in (*plan.extractions, *plan.probes))
    record_state(extraction, "done", time.time() - 3)
    assert cell_status(extraction) == PENDING  # its features file is not there
    features = tmp_path / "out/m/a/features.h5"
    features.parent.mkdir(parents=True)
    features.write_bytes(b"")
    assert cell_status(extraction) == DONE
    changed = make_plan({**study, "extract": {"max_length": 16}}).extractions[0].task
    assert cell_status(changed) == PENDING  # other options: another fingerprint
    record_state(first, "failed", time.time(), error="no label column 'x'")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        record_state(second, "running", time.time())
        path = state_path(second.output, second.key)
        path.write_text(json.dumps({**json.loads(path.read_text()), "pid": sleeper.pid}))
        shown = status(study).set_index("cell")
        assert shown.status.tolist() == ["done", "failed", "running"]
        assert shown.loc["probe/m/a/x", "error"] == "no label column 'x'"
        assert "1 done, 1 running, 0 pending, 1 failed" in format_status(shown.reset_index())
    finally:
        sleeper.kill()
        sleeper.wait()
    assert status(study).status.tolist()[-1] == "pending (interrupted)"
    features.unlink()
    features.symlink_to(tmp_path / "a.csv")
    assert cell_status(extraction) == PENDING  # never through a link


@pytest.mark.slow
def test_a_link_planted_at_a_cell_folder_fails_that_cell_and_nothing_is_written_through_it(
    tiny_model, study_corpora, tmp_path
):
    from support.study_files import study_dict

    from featx.study import execute

    plan = make_plan(study_dict(tiny_model, study_corpora, tmp_path / "out", bad=False))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out/tiny").mkdir(parents=True)
    (tmp_path / "out/tiny/sents").symlink_to(elsewhere)  # planted while the run went on (after its checks)
    outcome = execute(plan.extractions[0].task)
    assert outcome["status"] == "failed" and "out/tiny/sents is a symbolic link" in outcome["error"]
    assert list(elsewhere.iterdir()) == []


def test_a_state_edited_by_hand_shows_no_time_it_cannot_read(tmp_path):
    (tmp_path / "a.csv").write_text("text,x\nhi,1\n")
    study = {"study": {"output": str(tmp_path / "out")}, "models": [{"name": "m"}],
             "corpora": [{"name": "a", "path": str(tmp_path / "a.csv"), "labels": ["x"]}]}  # fmt: skip
    extraction, probe = make_plan(study).tasks
    record_state(extraction, "failed", time.time(), error="boom")
    record_state(probe, "failed", time.time(), error="boom")
    for task, started in ((extraction, 1e300), (probe, "yesterday")):
        path = state_path(task.output, task.key)
        path.write_text(json.dumps({**json.loads(path.read_text()), "started": started, "finished": -1e300}))
    shown = status(study)
    assert shown.status.tolist() == ["failed", "failed"] and shown.started.tolist() == ["", ""]
    assert shown.finished.tolist() == ["", ""] and "0 done, 0 pending, 2 failed" in format_status(shown)

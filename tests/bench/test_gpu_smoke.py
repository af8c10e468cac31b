"""``bash bench/gpu.sh OUT --smoke``: every step of the GPU benchmark runs on the CPU with tiny models built in
place and writes its tables, so the script does not rot between sessions that have a GPU. No timing is
checked: only that each step ran and wrote what it says. Its Python (gpu.sh's ``PYTHON``) and the children whose
runs the steps time (``python -c`` extractions, ``python -m featx`` fit, predict and probe: ``FEATX_BENCH_PYTHON``,
bench/gpu.py's ``python_command``) run through the test run's fork server: the same code, without importing
torch, transformers and featx eleven times."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_sh_smoke_writes_every_table(tmp_path, served_commands):
    out = tmp_path / "out"
    python = tmp_path / "python"  # one word, as gpu.sh's "$PY" takes it
    python.write_text(f'#!/bin/sh\nexec {served_commands["python"]} "$@"\n')
    python.chmod(0o755)
    env = {**os.environ, "PYTHON": str(python), "FEATX_BENCH_PYTHON": str(python), "PYTHONPATH": str(REPO)}
    env.pop("OUT", None)
    done = subprocess.run(
        ["bash", str(REPO / "bench" / "gpu.sh"), str(out), "--smoke"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    extraction = json.loads((out / "gpu.json").read_text())
    assert {(row["model"], row["method"]) for row in extraction} == {
        (model, f"featx {kind}") for model in ("minilm", "bert-base-random") for kind in ("steady", "cmd")
    }
    assert all(row["matmul_rate"] > 0 for row in extraction)
    solver = json.loads((out / "solver.json").read_text())
    assert solver and "predictions" in (out / "solver-table.md").read_text()
    decoder = json.loads((out / "decoder.json").read_text())
    assert decoder["template"] and decoder["rows"] == 16 and decoder["tokens"] > 16
    assert decoder["predicted_peak_bytes"] > 0 and decoder["peak_kind"] == "process peak RSS"
    predict = json.loads((out / "predict.json").read_text())
    assert "rows" in predict or predict.get("skipped", "").startswith("skipped: featx")
    words = predict["words"]  # the word probe: predict scores what fit reported on the same test words
    assert words["words"] > 0 and words["predict"].split()[1] == words["fit"].split()[2]
    host = json.loads((out / "host.json").read_text())
    methods = [row["method"] for row in host]
    assert methods[0] == "sentence-transformers (256)" and all(row["steady"] > 0 for row in host)
    assert "featx new, 16 rows/batch, all" in methods and "featx new, 16 rows/batch, last-mean" in methods
    assert "Ordered by" in (out / "profile-minilm.txt").read_text()
    summary = (out / "summary.md").read_text()
    assert all(f"## {table}" in summary for table in ("gpu", "solver", "decoder", "predict", "host"))

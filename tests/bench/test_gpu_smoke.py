"""``bash bench/gpu.sh OUT --smoke``: every step of the GPU benchmark runs on the CPU with tiny models built in
place and writes its tables, so the script does not rot between sessions that have a GPU. No timing is
checked: only that each step ran and wrote what it says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_sh_smoke_writes_every_table(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO)}
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

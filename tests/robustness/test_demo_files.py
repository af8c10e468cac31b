"""Every file the layer-wise notebook reads by default is one ``make demo`` writes (its comparison section read
``out/demo.random.sentiment.probe.csv``, which the demo never made). Checked on the texts themselves, with
``make -n`` (prints the demo's commands, runs none)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _notebook_defaults() -> list[str]:
    """The ``ROOT / "out" / NAME`` paths of the notebook's settings cell."""
    cells = json.loads((ROOT / "notebooks" / "layerwise.ipynb").read_text())["cells"]
    source = "".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
    return re.findall(r'ROOT / "out" / "([^"]+)"', source)


def _demo_outputs(out: Path) -> set[str]:
    """The names the demo's commands write into ``out``: each -o path (a probe's -o is a prefix of its .csv) and
    each probe's default results name beside its features file."""
    dry = subprocess.run(
        ["make", "-n", "demo", f"OUT={out}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    dry = dry.replace("$label", "sentiment")  # the loop over the demo labels, sentiment among them
    written = set()
    for command in re.findall(r"featx (extract|probe) ([^\n;]*)", dry):
        kind, args = command
        output = re.search(rf"-o {re.escape(str(out))}/(\S+)", args)
        if output:
            written.add(output.group(1) + (".csv" if kind == "probe" else ""))
    written |= {Path(name).name for name in re.findall(rf"results={re.escape(str(out))}/(\S+?);", dry)}
    return written


@pytest.mark.slow  # runs make -n in a child process
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_notebooks_default_files_are_written_by_make_demo(tmp_path):
    defaults = _notebook_defaults()
    assert "demo.random.sentiment.probe.csv" in defaults and "demo.features.h5" in defaults
    assert set(defaults) <= _demo_outputs(tmp_path / "out")

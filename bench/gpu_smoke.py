"""``bash bench/gpu.sh OUT --smoke`` in one process: every step of the GPU benchmark, in the order gpu.sh runs
them on a GPU, through its module's ``main`` on the CPU with tiny models built in place (each step's own
``--smoke``). One interpreter imports torch, transformers and sentence-transformers once for the seven steps
instead of once per step; what a step times in child processes (fresh-process runs, ``featx`` commands) still
runs in child processes (started by ``gpu.python_command``: ``FEATX_BENCH_PYTHON`` if set, else a fresh
``sys.executable``). No timing means anything here (tests/bench/test_gpu_smoke.py checks the tables, with this
process and its children run by the test run's fork server).

    PYTHONPATH=$PWD python bench/gpu_smoke.py --out DIR [more arguments for bench/gpu.py run]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# (module, its arguments) in gpu.sh's order; each gets --out DIR.
STEPS: list[tuple[str, list[str]]] = [
    ("gpu_loop", ["--smoke"]),
    ("gpu", ["run", "--smoke"]),
    ("probe_gpu", ["--smoke"]),
    ("solver_gpu", ["--device", "cpu", "--sizes", "500x32x3", "--probe-size", ""]),
    ("decoder", ["--smoke"]),
    ("predict_gpu", ["--smoke"]),
    ("gpu_host", ["--smoke", "--profile"]),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args, extra = parser.parse_known_args(argv)
    for name, arguments in STEPS:
        print(f"== bench/{name}.py {' '.join(arguments)}", flush=True)
        more = extra if name == "gpu" else []
        importlib.import_module(name).main([*arguments, "--out", str(args.out), *more])


if __name__ == "__main__":
    main()

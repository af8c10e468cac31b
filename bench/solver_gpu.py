"""The logistic probe solver on a GPU against featx's numpy solver on the CPU: time and agreement.

    PYTHONPATH=$PWD python bench/solver_gpu.py                          # on the GPU machine (bench/gpu.sh runs it)
    PYTHONPATH=$PWD python bench/solver_gpu.py --device cpu --sizes 2000x384x4 --probe-size 2000x3x384   # smoke run

Two steps, each timing the same work both ways in one run:

1. ``softmax.solve`` (numpy, CPU) against ``softmax_torch.solve`` (``--device``) on seeded problems of
   ROWSxWIDTHxCLASSES with a grid of ``--cs`` strengths solved as one batch, as featx's C search does:
   seconds each (the GPU one synchronised, its first call a warm-up not counted), the largest weight
   difference, and the share of test predictions that agree.
2. A whole ``featx probe FILE --layer all --pooling all`` on a synthetic features file
   (``probe_scale.synthetic_features``: ROWSxLAYERSxWIDTH) with ``--device`` first, then ``--device cpu``:
   wall seconds each and the largest difference between the two result tables' accuracies. Each run is cut
   at ``--probe-timeout`` seconds and reported as cut (``> N s``): on 27 Nov 2026 the CPU half of the default
   size ran past the whole device lease, and with it went the GPU half that ran second then.

Writes ``solver-table.md`` and ``solver.json`` to ``--out`` after every row, so a run cut short keeps what it
measured. Never part of the tests.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def planted_problem(rows: int, width: int, classes: int, seed: int = 0):
    """Standardised features with a class signal along one direction per class, and their labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=rows)
    directions = rng.standard_normal((classes, width)).astype(np.float32)
    X = rng.standard_normal((rows, width), dtype=np.float32) + 0.015 * directions[labels]  # hard enough to iterate
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    return X, labels


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def time_solvers(rows: int, width: int, classes: int, cs: list[float], device: str) -> dict:
    """Step 1 for one size: both solvers on the same batch of problems (one per C)."""
    from featx.probing.solvers import softmax, softmax_torch

    X, labels = planted_problem(rows + rows // 4, width, classes)
    train, test = slice(0, rows), slice(rows, None)
    batch = [labels[train]] * len(cs)
    start = time.perf_counter()
    reference = softmax.solve(X[train], batch, classes, cs, device=None)
    cpu_seconds = time.perf_counter() - start
    softmax_torch.solve(X[train][:256], [labels[:256]], classes, cs[:1], device=device)  # warm-up
    _synchronize(device)
    start = time.perf_counter()
    solution = softmax_torch.solve(X[train], batch, classes, cs, device=device)
    _synchronize(device)
    device_seconds = time.perf_counter() - start
    agree = np.mean(
        [
            np.mean(reference.scores(X[test], p).argmax(1) == solution.scores(X[test], p).argmax(1))
            for p in range(len(cs))
        ]
    )
    return {
        "step": "softmax.solve",
        "size": f"{rows}x{width}x{classes}",
        "problems": len(cs),
        "cpu_s": cpu_seconds,
        "device_s": device_seconds,
        "max_weight_diff": float(np.abs(reference.theta - solution.theta).max()),
        "prediction_agreement": float(agree),
        "iterations": f"{int(reference.n_iter.max())} / {int(solution.n_iter.max())}",
    }


def _accuracies(table: Path) -> dict:
    with open(table, newline="", encoding="utf-8") as handle:
        return {(row["layer"], row["pooling"]): float(row["accuracy"]) for row in csv.DictReader(handle)}


def time_probe(size: str, device: str, timeout: float) -> dict:
    """Step 2: the whole featx probe command with the solver on ``device``, then on the CPU, each cut at
    ``timeout`` seconds (its seconds then None)."""
    from probe_scale import CACHE, synthetic_features

    rows, layers, width = (int(part) for part in size.split("x"))
    features = synthetic_features(rows, layers, width)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    seconds: dict[str, float | None] = {}
    tables = {}
    for where in (device, "cpu"):
        output = CACHE / f"probe-{size}-{where.replace(':', '')}"  # results stay out of --out
        command = [sys.executable, "-m", "featx", "probe", str(features), "--layer", "all", "--pooling", "all"]
        command += ["--device", where, "-o", str(output)]
        start = time.perf_counter()
        try:
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            seconds[where] = None
            print(f"featx probe --device {where}: cut at {timeout:.0f} s", flush=True)
            continue
        seconds[where] = time.perf_counter() - start
        tables[where] = _accuracies(output.with_suffix(".csv"))
    both = "cpu" in tables and device in tables
    diffs = [abs(tables["cpu"][key] - tables[device][key]) for key in tables["cpu"]] if both else []
    return {
        "step": "featx probe --layer all --pooling all",
        "size": size,
        "problems": len(next(iter(tables.values()), {})),
        "cpu_s": seconds["cpu"],
        "device_s": seconds[device],
        "timeout_s": timeout,
        "max_accuracy_diff": max(diffs) if diffs else None,
    }


def _seconds(value: float | None, timeout: float | None) -> str:
    return f"> {timeout:.0f} (cut)" if value is None else f"{value:.2f}"


def table(rows: list[dict], device: str) -> str:
    lines = [
        f"| step | size | problems | numpy on CPU (s) | torch on {device} (s) | speed-up | agreement |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        if "max_weight_diff" in row:
            agreement = (
                f"max weight diff {row['max_weight_diff']:.1e}, predictions "
                f"{100 * row['prediction_agreement']:.2f}% equal, iterations {row['iterations']}"
            )
        elif row["max_accuracy_diff"] is None:
            agreement = "not compared: a run was cut"
        else:
            agreement = f"max accuracy diff {row['max_accuracy_diff']:.4f}"
        timeout = row.get("timeout_s")
        cut = row["cpu_s"] is None or row["device_s"] is None
        speed_up = "n/a" if cut else f"{row['cpu_s'] / row['device_s']:.1f}x"
        lines.append(
            f"| {row['step']} | {row['size']} | {row['problems']} | {_seconds(row['cpu_s'], timeout)} | "
            f"{_seconds(row['device_s'], timeout)} | {speed_up} | {agreement} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--sizes",
        default="20000x384x4,20000x768x17,100000x384x4",
        help="ROWSxWIDTHxCLASSES problems for step 1 (empty: skip)",
    )
    parser.add_argument("--cs", default="0.001,0.01,0.1,1,10", help="the C grid solved as one batch")
    parser.add_argument("--probe-size", default="20000x13x768", help="ROWSxLAYERSxWIDTH for step 2 (empty: skip)")
    parser.add_argument("--probe-timeout", type=float, default=120.0, help="seconds each step-2 run may take")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / ".cache" / "solver-gpu")
    args = parser.parse_args(argv)
    import torch

    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    print(
        f"# bench/solver_gpu.py {' '.join(sys.argv[1:])}: {name}, torch {torch.__version__}, load {os.getloadavg()}",
        flush=True,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    cs = [float(c) for c in args.cs.split(",")]
    rows: list[dict] = []

    def write() -> str:
        text = table(rows, args.device)
        (args.out / "solver-table.md").write_text(text + "\n")
        (args.out / "solver.json").write_text(json.dumps(rows, indent=1))
        return text

    for size in filter(None, args.sizes.split(",")):
        rows.append(time_solvers(*(int(part) for part in size.split("x")), cs, args.device))
        print(write().splitlines()[-1], flush=True)
    if args.probe_size:
        rows.append(time_probe(args.probe_size, args.device, args.probe_timeout))
    print("\n" + write())


if __name__ == "__main__":
    main()

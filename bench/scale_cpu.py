"""Wall time of one featx extract process against ``torchrun --nproc-per-node N`` on the same corpus.

    python bench/scale_cpu.py --corpus /path/to/data.csv --rows 2000 --procs 2

Takes the first ``--rows`` rows of the corpus, runs ``featx extract`` (default model,
``--pooling mean``) once as a single process and once under torchrun with ``--procs``
processes (shards + merge), alternating ``--repeats`` times, and prints a Markdown table
with wall times, torch threads per process and the machine's load (``uptime``), which
matters on a shared machine. Both runs write into a temporary folder.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def load() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` shows them."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def subset(corpus: Path, rows: int, folder: Path) -> Path:
    out = folder / "corpus.csv"
    with open(corpus, newline="", encoding="utf-8") as src, open(out, "w", newline="", encoding="utf-8") as dst:
        reader, writer = csv.reader(src), csv.writer(dst)
        for number, row in enumerate(reader):
            if number > rows:
                break
            writer.writerow(row)
    return out


def timed(command: list[str], env: dict, cwd: Path) -> float:
    started = time.perf_counter()
    process = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{process.stdout}\n{process.stderr}")
    print(process.stdout.strip(), file=sys.stderr)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pooling", default="mean")
    parser.add_argument(
        "--all",
        action="store_true",
        help="also 1 process with 1 thread, and torchrun with all cores per process (oversubscribed)",
    )
    args = parser.parse_args()

    bin_dir = Path(sys.executable).parent
    torchrun = (
        [str(bin_dir / "torchrun")]
        if (bin_dir / "torchrun").exists()
        else [sys.executable, "-m", "torch.distributed.run"]
    )
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    cores = len(os.sched_getaffinity(0))
    threads = max(1, cores // args.procs)
    single = [sys.executable, "-m", "featx"]
    launcher = [*torchrun, "--standalone", "--nproc-per-node", str(args.procs), "-m", "featx"]
    runs = {  # name: (command, extra environment, torch threads per process)
        "1 process": (single, {}, cores),
        f"torchrun {args.procs} processes": (launcher, {}, threads),
    }
    if args.all:
        runs["1 process, 1 thread"] = (single, {"OMP_NUM_THREADS": "1"}, 1)
        runs[f"torchrun {args.procs} processes, {cores} threads each"] = (
            launcher,
            {"FEATX_NUM_THREADS": str(cores)},
            cores,
        )
    results: dict[str, list[float]] = {name: [] for name in runs}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = subset(args.corpus, args.rows, folder)
        common = ["extract", str(corpus), "--pooling", args.pooling, "-q", "--overwrite"]
        for _repeat in range(args.repeats):
            for number, (name, (command, extra, _)) in enumerate(runs.items()):
                loads.append(load())
                output = folder / f"run{number}.h5"
                results[name].append(timed([*command, *common, "-o", str(output)], {**env, **extra}, folder))
        loads.append(load())
    print(f"\n{args.rows} rows of {args.corpus}, --pooling {args.pooling}, default model, {cores} cores\n")
    print("| run | torch threads per process | wall seconds (each repeat) | median |")
    print("|---|---|---|---|")
    for name, seconds in results.items():
        each = ", ".join(f"{s:.1f}" for s in seconds)
        print(f"| {name} | {runs[name][2]} | {each} | {statistics.median(seconds):.1f} |")
    print(f"\nload average (1, 5, 15 min) before each run and at the end: {'; '.join(loads)}")


if __name__ == "__main__":
    main()

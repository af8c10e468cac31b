"""What a kill -9 loses, and what commits by time cost, on a real corpus and the default model.

    PYTHONPATH=$PWD python bench/kill_resume.py                 # 10,000 AG News rows, kill at 60%
    PYTHONPATH=$PWD python bench/kill_resume.py --rows 2000 --skip-cost

Runs, each a fresh process of the library (``featx.extract``) on the first ``--rows`` rows of
``$FEATX_BENCH_DATA/agnews/data.csv`` (default ``../shared/data``), written to ``out/`` (gitignored):

1. a full run (``--commit-seconds`` default, 10 s): its wall time ``full``;
2. the same run killed with SIGKILL at ``--kill-at`` of ``full`` (``kill``, from process start);
3. the same command again: it resumes; wall time ``resume``, its start-up (process start to its batch
   loop: imports, model load, tokenising, reopening the file) ``startup``.
   Lost work = resume - (full - kill) - startup: what the killed run computed and did not commit.
4. unless ``--skip-cost``: a full run committing by memory only (``--commit-seconds 1e9``); the cost of
   commits by time = steady time of run 1 / steady time of run 4 - 1 (steady: the batch loop's own time).

A timing: run it on a quiet machine (``uptime`` is printed before and after), never in tests.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN = """
import json, sys, time
began = time.perf_counter()
import featx
s = featx.extract(sys.argv[1], output=sys.argv[2], progress=False, commit_seconds=float(sys.argv[3]))
d = s.as_dict()
d["process_seconds"] = time.perf_counter() - began
print(json.dumps(d))
"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def make_corpus(rows: int, out: Path) -> Path:
    data = Path(os.environ.get("FEATX_BENCH_DATA", REPO.parent / "shared" / "data")) / "agnews" / "data.csv"
    target = out / f"agnews{rows}.csv"
    with open(data, newline="", encoding="utf-8") as source, open(target, "w", newline="", encoding="utf-8") as sink:
        reader, writer = csv.reader(source), csv.writer(sink)
        writer.writerow(next(reader))
        for number, row in enumerate(reader):
            if number >= rows:
                break
            writer.writerow(row)
    return target


def committed(output: Path):
    """``(rows_done, window start, batches committed inside it)`` of ``<output>.partial``, or None."""
    import h5py

    try:
        with h5py.File(output.with_name(output.name + ".partial"), "r", locking=False) as file:
            return (int(file["progress/rows_done"][0]), *(int(v) for v in file["progress/window"][()]))
    except Exception:
        return None


def run(corpus: Path, output: Path, commit_seconds: float, kill_after: float | None = None) -> dict:
    args = [sys.executable, "-c", RUN, str(corpus), str(output), str(commit_seconds)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    began = time.perf_counter()
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if kill_after is not None:
        last_change, marker = None, None
        while time.perf_counter() - began < kill_after:  # watch the commits as another process sees them
            if process.poll() is not None:
                raise SystemExit("the run finished before the kill")
            now = committed(output)
            if now != marker:
                marker, last_change = now, time.perf_counter() - began
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)
        process.wait()
        return {"wall": time.perf_counter() - began, "last_commit": last_change, "marker": marker}
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - began
    if process.returncode != 0:
        raise SystemExit(stderr)
    summary = json.loads(stdout.strip().splitlines()[-1])
    summary["wall"] = wall
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--kill-at", type=float, default=0.6)
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument(
        "--cost-only",
        default=None,
        help="only the cost: commit intervals to compare, e.g. 1e9,10,2, run alternately --repeat times",
    )
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    if options.cost_only:
        return cost_only(options)
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    corpus = make_corpus(options.rows, out)
    print("uptime before:", uptime(), flush=True)
    for name in ("kill_full.h5", "kill_killed.h5", "kill_memory_only.h5"):
        for path in (out / name, out / (name + ".partial")):
            path.unlink(missing_ok=True)
    full = run(corpus, out / "kill_full.h5", 10.0)
    print(f"full run: {full['wall']:.1f} s (batch loop {full['forward_seconds']:.1f} s)", flush=True)
    killed = run(corpus, out / "kill_killed.h5", 10.0, kill_after=options.kill_at * full["wall"])
    resumed = run(corpus, out / "kill_killed.h5", 10.0)
    startup = resumed["wall"] - resumed["forward_seconds"]
    lost = resumed["wall"] - (full["wall"] - killed["wall"]) - startup
    print(
        f"killed at {killed['wall']:.1f} s; resume {resumed['wall']:.1f} s (start-up {startup:.1f} s, "
        f"resumed at row {resumed['resumed_from']} + {resumed['resumed_inside']} rows inside the window)"
    )
    print(
        f"lost work = {resumed['wall']:.1f} - ({full['wall']:.1f} - {killed['wall']:.1f}) - {startup:.1f} "
        f"= {lost:.1f} s",
        flush=True,
    )
    # Batches run longest first inside a window, so the rows left after a kill are the short ones and the
    # formula above under-counts; the direct measure: work done after the last commit the killed run made.
    if killed["last_commit"] is not None:
        print(
            f"direct: last commit seen at {killed['last_commit']:.1f} s (marker {killed['marker']}), killed at "
            f"{killed['wall']:.1f} s: at most {killed['wall'] - killed['last_commit']:.1f} s of work lost",
            flush=True,
        )
    if not options.skip_cost:
        memory_only = run(corpus, out / "kill_memory_only.h5", 1e9)
        cost = full["forward_seconds"] / memory_only["forward_seconds"] - 1
        print(
            f"commits by time (10 s): batch loop {full['forward_seconds']:.1f} s; by memory only: "
            f"{memory_only['forward_seconds']:.1f} s; cost {100 * cost:+.1f}%"
        )
    print("uptime after:", uptime())


def cost_only(options) -> None:
    """Batch-loop time per commit interval, runs interleaved (A B C A B C ...) so that load drifts hit all."""
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    corpus = make_corpus(options.rows, out)
    intervals = [float(value) for value in options.cost_only.split(",")]
    times: dict[float, list[float]] = {interval: [] for interval in intervals}
    print("uptime before:", uptime(), flush=True)
    for _repeat in range(options.repeat):
        for interval in intervals:
            output = out / "kill_cost.h5"
            output.unlink(missing_ok=True)
            summary = run(corpus, output, interval)
            times[interval].append(summary["forward_seconds"])
            print(f"  commit-seconds {interval:g}: batch loop {summary['forward_seconds']:.1f} s", flush=True)
    base = min(times[max(intervals)])
    for interval in intervals:
        best = min(times[interval])
        print(
            f"commit-seconds {interval:g}: best batch loop {best:.1f} s ({100 * (best / base - 1):+.1f}% against "
            f"memory-only commits), all: {', '.join(f'{value:.1f}' for value in times[interval])}"
        )
    print("uptime after:", uptime())


if __name__ == "__main__":
    main()

"""Study speed (issue 44): the probe stage with 1 and 2 workers on the local and the Ray engine, a whole study
(extractions and probes, 2 workers) on the Ray engine against the local one, on a local cluster that the study
starts and stops and on a cluster already running (``ray start --head`` here, untimed, as a Ray user runs one),
and a whole study against the same extract and probe commands run one by one.

    .venv/bin/python bench/study.py [--rows 400] [--out bench/.study] [--no-commands] [--rounds 3]
    .venv/bin/python bench/study.py --rows 1000 --no-commands --no-whole --rounds 3   # the probe stages again

The study: the packaged MiniLM and a random-init MiniLM x SST-2, TREC and AG News samples (``--rows`` train
and ``--rows // 2`` test rows each, from ../shared/data; TREC's test part caps ``--rows`` at about 1,000),
``--layer all``: 6 extractions, 6 probes. The whole-study rows are each a ``featx study run`` command in a fresh
process, as a user runs one (its imports, the engine's start and stop, the tables; the Ray rows start and stop
the local cluster, but for the running cluster's). The probe-stage rows are a ``featx.study.run`` in a fresh
process too, on a done study's folder with its probes undone (their states and results removed): its
``StudyResult.stages`` "extract" (the up-to-date checks) and "probe", from the engine started; the engine's
start ("prepare": the worker processes or the Ray cluster) is a row of its own. An untimed run of the
commands (or a 20-row study), and an untimed start and stop of a local Ray cluster in a child process, come
first, so that no row pays for filling the disk caches the later ones reuse. Run it on a quiet machine: no
helpers, and no other Ray cluster (the running cluster is stopped with ``ray stop``, which stops every Ray
cluster of this machine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import featx.study

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("FEATX_BENCH_DATA", ROOT.parent / "shared" / "data"))
CORPORA = ("sst2", "trec", "agnews")


def samples(folder: Path, rows: int) -> dict[str, Path]:
    """Each corpus's first ``rows`` train rows and ``rows // 2`` test rows (seeded sample), as CSV."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in CORPORA:
        table = pd.read_csv(DATA / name / "data.csv")
        train = table[table.split == "train"].sample(rows, random_state=0)
        test = table[table.split == "test"].sample(rows // 2, random_state=0)
        paths[name] = folder / f"{name}.csv"
        pd.concat([train, test]).to_csv(paths[name], index=False)
    return paths


def study(paths: dict[str, Path], output: Path, **settings) -> dict:
    return {
        "study": {"output": str(output), **settings},
        "models": [{"name": "minilm"}, {"name": "minilm-random", "random_init": True}],
        "corpora": [{"name": name, "path": str(path), "labels": ["label"]} for name, path in paths.items()],
        "probe": {"layer": "all"},
    }


def probes_undone(folder: Path) -> None:
    """A done study's folder with its extractions left done and its probes undone (states and results gone)."""
    for state in (folder / ".study").glob("*.json"):
        if json.loads(state.read_text()).get("kind") == "probe":
            state.unlink()
    for results in folder.glob("*/*/*.probe.*"):
        results.unlink()


def timed(data: dict) -> featx.study.StudyResult:
    result = featx.study.run(data)
    assert result.exit_code == 0, result.errors
    return result


def one_by_one(paths: dict[str, Path], folder: Path) -> float:
    """The same cells as ``featx extract`` and ``featx probe`` commands, one after another."""
    featx = [sys.executable, "-m", "featx"]
    started = time.perf_counter()
    for model, random in (("minilm", False), ("minilm-random", True)):
        for name, path in paths.items():
            features = folder / model / f"{name}.h5"
            features.parent.mkdir(parents=True, exist_ok=True)
            extract = [*featx, "extract", str(path), "-o", str(features), "-q"]
            subprocess.run(extract + (["--random-init"] if random else []), check=True)
            probe = [*featx, "probe", str(features), "--label", "label", "--layer", "all"]
            subprocess.run(probe + ([] if model == "minilm" else ["--no-lexical"]), check=True, capture_output=True)
    return time.perf_counter() - started


def warm_ray() -> None:
    """A local Ray cluster started and stopped in a child process, untimed: the first cluster after a boot reads
    Ray's binaries and modules from disk, which every later one finds in the page cache. This process still
    imports Ray in its first Ray row, as a ``featx study run --engine ray`` command does."""
    code = (
        "import ray; ray.init(num_cpus=1, include_dashboard=False, _node_ip_address='127.0.0.1'); "
        "ray.get(ray.remote(lambda: 0).remote()); ray.shutdown()"
    )
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)


RAY_PORT = 6391
RAY = str(Path(sys.executable).with_name("ray"))  # the ray command of this environment


def running_cluster() -> str:
    """A cluster started with ``ray start --head`` (this machine's CPUs, no dashboard), as a Ray user runs one;
    its address."""
    cpus = str(os.cpu_count() or 1)
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")  # loopback only: no token asked
    command = [RAY, "start", "--head", f"--port={RAY_PORT}", f"--num-cpus={cpus}", "--include-dashboard=false"]
    subprocess.run(command + ["--node-ip-address=127.0.0.1"], check=True, capture_output=True, env=env)
    return f"127.0.0.1:{RAY_PORT}"


def stop_cluster() -> None:
    subprocess.run([RAY, "stop"], check=False, capture_output=True)


def say(figures: dict[str, float], name: str, value: float) -> None:
    figures[name] = value
    print(f"{name}: {value:.2f}", flush=True)


def command(paths: dict[str, Path], folder: Path, engine: str, jobs: int, address: str | None = None) -> float:
    """A whole ``featx study run`` command in a fresh process (its imports, the engine's start and stop, the
    tables), as a user runs it: its wall time."""
    folder.mkdir(parents=True, exist_ok=True)
    toml = folder / "study.toml"
    toml.write_text(featx.study.study_toml(study(paths, folder / "out")))
    run = [sys.executable, "-m", "featx", "study", "run", str(toml), "--jobs", str(jobs), "--engine", engine]
    started = time.perf_counter()
    subprocess.run(run + (["--address", address] if address else []), check=True, capture_output=True)
    return time.perf_counter() - started


def whole_studies(paths: dict[str, Path], out: Path, figures: dict[str, float], commands: bool = True) -> None:
    """A whole study from nothing, each a ``featx study run`` command in a fresh process: local with 1 worker
    (against the commands), local and Ray with 2 (a local cluster the study starts and stops), and Ray with 2 on
    a running cluster (started untimed)."""
    for engine, jobs in ((("local", 1),) if commands else ()) + (("local", 2), ("ray", 2)):
        seconds = command(paths, out / f"whole-{engine}-{jobs}", engine, jobs)
        say(figures, f"whole study, {engine}, {jobs} worker(s) (s)", seconds)
    address = running_cluster()
    try:
        seconds = command(paths, out / "whole-ray-running-2", "ray", 2, address)
        say(figures, "whole study, ray on a running cluster, 2 worker(s) (s)", seconds)
    finally:
        stop_cluster()
    if commands:
        say(figures, "the same extract and probe commands one by one (s)", one_by_one(paths, out / "commands"))


STAGES = (
    "import json, sys; import featx.study; result = featx.study.run(json.loads(sys.argv[1])); "
    "assert result.exit_code == 0, result.errors; print(json.dumps(result.stages))"
)


def fresh_stages(data: dict) -> dict[str, float]:
    """``featx.study.run(data)``'s stages (seconds), run in a fresh process: no row inherits what an earlier one
    imported, started or left behind in this one."""
    ran = subprocess.run([sys.executable, "-c", STAGES, json.dumps(data)], check=True, capture_output=True, text=True)
    return json.loads(ran.stdout.strip().splitlines()[-1])


def probe_stages(paths: dict[str, Path], folder: Path, figures: dict[str, float], rounds: int = 1) -> None:
    """The probe stage alone, on a done study's folder with its probes undone, per engine and workers: the
    extractions' up-to-date checks and the probes, from the engine started (its start, ``prepare``: the worker
    processes or the Ray cluster, a fixed cost whatever the workers, is a row of its own). ``rounds`` alternating
    rounds, the median of each."""
    seen: dict[str, list[float]] = {}
    for _ in range(rounds):
        for engine in ("local", "ray"):
            for jobs in (1, 2):
                probes_undone(folder)
                stages = fresh_stages(study(paths, folder, engine=engine, jobs=jobs))
                for name, value in (
                    (f"probe stage, {engine}, {jobs} worker(s) (s)", stages["extract"] + stages["probe"]),
                    (f"engine start before it, {engine}, {jobs} worker(s) (s)", stages["prepare"]),
                ):
                    seen.setdefault(name, []).append(value)
                    print(f"  {name}: {value:.2f}", flush=True)
    for name, values in seen.items():
        say(figures, name, float(np.median(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / ".study")
    parser.add_argument(
        "--no-commands",
        action="store_true",
        help="leave out the commands one by one (and the 1-worker whole study compared with them): the engines "
        "only, e.g. at a larger --rows; the untimed warm-up is then a 20-row study",
    )
    parser.add_argument(
        "--no-probe-stages",
        action="store_true",
        help="leave out the probe stage with 1 and 2 workers per engine: the whole studies only (a larger --rows)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds of the probe stages (medians)")
    parser.add_argument(
        "--no-whole",
        action="store_true",
        help="the probe stages only, on the done study a previous run of the same --rows and --out left",
    )
    args = parser.parse_args()
    done = args.out / ("whole-local-2" if args.no_commands or args.no_whole else "whole-local-1") / "out"
    if args.no_whole:
        figures: dict[str, float] = {}
        probe_stages(samples(args.out / "data", args.rows), done, figures, args.rounds)
        report(figures)
        return
    shutil.rmtree(args.out, ignore_errors=True)
    paths = samples(args.out / "data", args.rows)
    if args.no_commands:  # untimed: each model's first run fills caches the later ones reuse
        timed(study(samples(args.out / "warm-data", 20), args.out / "warm-up", engine="local", jobs=2))
    else:
        one_by_one(paths, args.out / "warm-up")
    warm_ray()  # untimed: the same for Ray's own files
    figures = {}
    whole_studies(paths, args.out, figures, commands=not args.no_commands)
    if not args.no_probe_stages:
        probe_stages(paths, done, figures, args.rounds)
    report(figures)


def report(figures: dict[str, float]) -> None:
    """The ratios of the figures measured, then every figure."""
    if "probe stage, ray, 2 worker(s) (s)" in figures:
        for engine in ("local", "ray"):
            one, two = (figures[f"probe stage, {engine}, {jobs} worker(s) (s)"] for jobs in (1, 2))
            figures[f"probe stage speed-up, {engine}, 2 workers over 1 (target >= 1.7)"] = one / two
        figures["probe stage, ray / local, 2 workers"] = (
            figures["probe stage, ray, 2 worker(s) (s)"] / figures["probe stage, local, 2 worker(s) (s)"]
        )
    if "whole study, ray, 2 worker(s) (s)" in figures:
        figures["whole study, ray / local, 2 workers (target <= 1.10)"] = (
            figures["whole study, ray, 2 worker(s) (s)"] / figures["whole study, local, 2 worker(s) (s)"]
        )
        figures["whole study, ray on a running cluster / local, 2 workers (target <= 1.10)"] = (
            figures["whole study, ray on a running cluster, 2 worker(s) (s)"]
            / figures["whole study, local, 2 worker(s) (s)"]
        )
        if "the same extract and probe commands one by one (s)" in figures:
            figures["whole study (local, 1 worker) / one by one (target <= 1.05)"] = (
                figures["whole study, local, 1 worker(s) (s)"]
                / figures["the same extract and probe commands one by one (s)"]
            )
    print()
    for name, value in figures.items():
        print(f"{name}: {value:.2f}")


if __name__ == "__main__":
    main()

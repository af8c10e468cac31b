"""Study speed (issue 44): the probe stage with 1 and 2 workers on the local and the Ray engine, the Ray
engine's total against the local one's, and a whole study against the same extract and probe commands run
one by one.

    .venv/bin/python bench/study.py [--rows 600] [--out bench/.study]

The study: the packaged MiniLM and a random-init MiniLM x SST-2, TREC and AG News samples (``--rows`` train
and ``--rows // 2`` test rows each, from ../shared/data), ``--layer all``. Each timing is of a whole
``featx.study.run`` in this process (the Ray rows include starting the local cluster). The probe-stage rows
run on the study's folder with its extractions done and its probes undone (their states and results
removed), so they time the probe stage and the tables. An untimed run of the commands comes first, so that
neither side pays for filling the caches the other then reuses. Run it on a quiet machine: no helpers.
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


def timed(data: dict) -> float:
    started = time.perf_counter()
    result = featx.study.run(data)
    assert result.exit_code == 0, result.errors
    return time.perf_counter() - started


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / ".study")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    paths = samples(args.out / "data", args.rows)
    one_by_one(paths, args.out / "warm-up")  # untimed: the first run of a model fills caches the later ones reuse
    figures = {"whole study, local, 1 worker (s)": timed(study(paths, args.out / "done"))}
    print(f"whole study, local, 1 worker (s): {figures['whole study, local, 1 worker (s)']:.2f}", flush=True)
    figures["the same extract and probe commands one by one (s)"] = one_by_one(paths, args.out / "commands")
    for engine in ("local", "ray"):
        for jobs in (1, 2):
            probes_undone(args.out / "done")
            data = study(paths, args.out / "done", engine=engine, jobs=jobs)
            key = f"probe stage, {engine}, {jobs} worker(s) (s)"
            figures[key] = timed(data)
            print(f"{key}: {figures[key]:.2f}", flush=True)
    for engine in ("local", "ray"):
        one, two = (
            figures[f"probe stage, {engine}, 1 worker(s) (s)"],
            figures[f"probe stage, {engine}, 2 worker(s) (s)"],
        )
        figures[f"probe stage speed-up, {engine}, 2 workers over 1"] = one / two
    figures["ray / local, 2 workers"] = (
        figures["probe stage, ray, 2 worker(s) (s)"] / figures["probe stage, local, 2 worker(s) (s)"]
    )
    figures["study / one by one"] = (
        figures["whole study, local, 1 worker (s)"] / figures["the same extract and probe commands one by one (s)"]
    )
    for name, value in figures.items():
        print(f"{name}: {value:.2f}")


if __name__ == "__main__":
    main()

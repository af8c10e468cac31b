"""``featx probe --device cuda`` on a study-sized grid: 2 models x 3 corpus shapes, every layer x 5 poolings.

    PYTHONPATH=$PWD python bench/probe_gpu.py --out DIR            # on the GPU machine (bench/gpu.sh: step "probe")
    PYTHONPATH=$PWD python bench/probe_gpu.py --smoke --out DIR    # a tiny model and corpus, CPU (only that it runs)

A study (bench/study.py) multiplies probe work: models x corpora, each ``--layer all --pooling all``. This
step extracts each model (MiniLM, the bert-base-sized random model of bench/gpu.py) x corpus (SST-2 872 rows,
2 classes; AG News 2,000 and 7,600 rows, 4 classes; from ``gpu.py prepare``) on ``--device``, then times the
whole ``featx probe FILE --layer all --pooling all --device DEVICE`` command (a fresh process: control task
and lexical baseline included, as a study runs it). Each probe is cut at ``--run-seconds`` and the whole step
stops starting new ones past ``--budget`` seconds, so it fits its time box in bench/gpu.sh. Writes
probe-table.md and probe.json to --out after every row. Never part of the tests' timings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu  # noqa: E402  (bench/gpu.py: assets, the bert-base-sized model, run_featx)

CORPORA = ("sst2", "agnews", "agnewsbig")


def probe_once(features: Path, device: str, out: Path, seconds: float, extra: list[str]) -> tuple[float, str]:
    """Wall seconds of one whole ``featx probe`` command, and how it ended ("ok", "cut", "exit N")."""
    command = [*gpu.python_command(), "-m", "featx", "probe", str(features), "--layer", "all", "--pooling", "all"]
    command += ["--device", device, "-o", str(out), *extra]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, "cut"
    status = "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
    return time.perf_counter() - start, status


def best_of(prefix: Path) -> str:
    """The best probe's accuracy line from the results table (PREFIX.csv), or ''."""
    table = prefix.with_suffix(".csv")
    if not table.exists():
        return ""
    import csv

    with open(table, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    scores = [float(row["accuracy"]) for row in rows if row.get("accuracy") not in (None, "")]
    return f"{max(scores):.3f}" if scores else ""


def table(rows: list[dict], header: str) -> str:
    lines = [
        header,
        "",
        "| model | corpus | rows | layers x poolings | extract s | probe s (whole command) | best accuracy | status |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['model']} | {row['corpus']} | {row['rows']:,} | {row['grid']} | {row['extract_seconds']:.1f} "
            f"| {row['probe_seconds']:.1f} | {row['best']} | {row['status']} |"
        )
    total = sum(row["probe_seconds"] for row in rows)
    lines += ["", f"The grid's probes: {total:.1f} s in all ({len(rows)} runs)."]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gpu.common_arguments(parser, dtype_help="of the extraction")
    parser.add_argument("--models", default="minilm,bert-base-random")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--run-seconds", type=float, default=60.0, help="each probe command is cut here")
    parser.add_argument("--budget", type=float, default=150.0, help="no new run starts past this many seconds")
    parser.add_argument("--smoke", action="store_true", help="a tiny model and corpus built in place, CPU")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="featx-probe-gpu-"))
    if args.smoke:  # only that the step runs (tests/bench/test_gpu_smoke.py); no timing means anything
        args.assets, args.device, args.dtype = gpu.smoke_assets(work), "cpu", "float32"
        args.models, args.corpora, args.run_seconds, args.budget = "minilm", "sst2", 600.0, 600.0
    extra = ["--jobs", "1", "--folds", "2", "--no-lexical"] if args.smoke else []  # smoke: the cheapest probe
    args.out.mkdir(parents=True, exist_ok=True)
    header = (
        f"featx probe --layer all --pooling all --device {args.device}, features {args.dtype}, "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f}"
    )
    print(f"# bench/probe_gpu.py: {header}", flush=True)
    models = {
        "minilm": lambda: args.assets / "minilm-bf16",
        "bert-base-random": lambda: gpu.bert_base_random(args.assets, work),
    }
    rows: list[dict] = []
    for model in args.models.split(","):
        for corpus_name in args.corpora.split(","):
            corpus = args.assets / f"{corpus_name}.csv"
            left = args.budget - (time.perf_counter() - began)
            if not corpus.exists() or left <= 5:
                print(f"  {model} x {corpus_name}: skipped ({'no corpus' if left > 5 else 'budget spent'})")
                continue
            start = time.perf_counter()
            summary = gpu.run_featx(
                models[model](), corpus, work / f"{model}-{corpus_name}.h5", args.device, args.dtype
            )
            extract_seconds = time.perf_counter() - start
            left = args.budget - (time.perf_counter() - began)
            seconds, status = probe_once(
                work / f"{model}-{corpus_name}.h5",
                args.device,
                work / f"{model}-{corpus_name}",
                min(args.run_seconds, left),
                extra,
            )
            rows.append(
                {
                    "model": model,
                    "corpus": corpus_name,
                    "rows": summary.rows,
                    "grid": f"{len(summary.layers)} x {len(summary.poolings)}",
                    "extract_seconds": extract_seconds,
                    "probe_seconds": seconds,
                    "best": best_of(work / f"{model}-{corpus_name}"),
                    "status": status,
                }
            )
            print(f"  {model} x {corpus_name}: probe {seconds:.1f} s ({status})", flush=True)
            (args.out / "probe-table.md").write_text(table(rows, header) + "\n")
            (args.out / "probe.json").write_text(json.dumps({"header": header, "rows": rows}, indent=1))
    if not rows:
        (args.out / "probe-table.md").write_text(header + "\n\n(no run: no corpus, or the budget was spent)\n")
    print("\n" + table(rows, header), flush=True)


if __name__ == "__main__":
    main()

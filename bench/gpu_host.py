"""Where featx's GPU batch loop spends its time on short texts: rows per batch, outputs, code before/after.

    PYTHONPATH=$PWD python bench/gpu_host.py --out DIR            # on the GPU machine, after gpu.py prepare
    PYTHONPATH=$PWD python bench/gpu_host.py --device cpu --quick  # the same code on CPU, small corpus

On the H200 (27 Nov 2026) featx's batch loop ran SST-2 at 0.43-0.63x sentence-transformers' rate with the
GPU idle 80-95% of the time. This run separates the suspects, each a fresh ``featx.extract`` process on the
same corpus, model and dtype (``--corpus``, default the 20,000-row SST-2 of ``gpu.py prepare``):

  rows/batch   ``--batch-size`` (the rows cap; 256 is the default) at 65,536 padded tokens a batch
  outputs      all: every layer x 5 poolings (the default); last-mean: the last layer's mean only, what
               sentence-transformers returns
  code         new: this checkout; old: ``--old DIR`` (a copy of an earlier ``featx`` package, e.g.
               ``git archive ee7ca9c featx | tar -x -C bench/.gpu/old``), where present

and sentence-transformers ``encode`` (batch 256) in the same run. With ``--profile`` one more run of this
checkout at the default row cap is profiled (cProfile, top functions by own time: ``profile.txt``). Columns:
steady (tokens over ``forward_seconds``) and call (tokens over the whole ``extract`` call, model load and
tokenising included), and steady against sentence-transformers. Writes host-table.md and host.json to --out.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu  # noqa: E402  (bench/gpu.py: the assets, the bert-base-sized model, sentence-transformers' run)

CHILD = """
import cProfile, io, json, pstats, sys
from featx.extraction import ExtractConfig, extract
args = json.loads(sys.argv[1])
profile = args.pop("profile", None)
warm = args.pop("warm")
config = ExtractConfig(**args)
extract(ExtractConfig(**{**args, "corpus": warm}))  # warm-up: CUDA context, kernels, imports, page cache
profiler = cProfile.Profile() if profile else None
if profiler: profiler.enable()
summary = extract(config)
if profiler:
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
    open(profile, "w").write(text.getvalue())
print("RESULT", json.dumps({"forward": summary.forward_seconds, "call": summary.seconds}))
"""


def featx_run(code: Path, folder: Path, corpus: Path, work: Path, args, batch: int, outputs: str, profile=None):
    """One ``extract`` in a fresh process importing featx from ``code``: (forward seconds, call seconds)."""
    options = {
        "corpus": str(corpus),
        "warm": str(work / "warm.csv"),
        "output": str(work / "run.h5"),
        "model": str(folder),
        "device": args.device,
        "dtype": args.dtype,
        "max_length": gpu.MAX_LENGTH,
        "batch_size": batch,
        "overwrite": True,
        "progress": False,
    }
    if outputs == "last-mean":
        options.update(layers="-1", poolings="mean")
    if profile:
        options["profile"] = str(profile)
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    # another featx (--old) needs a fresh interpreter: a forking python_command has this checkout's imported
    python = gpu.python_command() if code == HERE.parent else [sys.executable]
    done = subprocess.run(
        [*python, "-c", CHILD, json.dumps(options)], cwd=work, env=env, capture_output=True, text=True
    )
    (work / "run.h5").unlink(missing_ok=True)
    line = next((line for line in done.stdout.splitlines() if line.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    result = json.loads(line[len("RESULT ") :])
    return result["forward"], result["call"]


def cases(args) -> list[tuple[str, int, str]]:
    """(code, rows per batch, outputs) in the order run."""
    old = [("old", 256, "all")] if args.old.is_dir() else []
    new = [("new", batch, "all") for batch in args.batches]
    return old + new + [("new", 256, "last-mean"), ("new", max(args.batches), "last-mean")]


def bench_model(name: str, folder: Path, corpus: Path, work: Path, args, log) -> list[dict]:
    from featx.extraction.model.loading import load_tokenizer
    from featx.extraction.tokens.tokenize import tokenize_texts

    with open(corpus, newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    tokens = int(tokenize_texts(load_tokenizer(str(folder)), texts, gpu.MAX_LENGTH).lengths.sum())
    st_seconds, _ = gpu.run_st(folder, texts, args.device, args.dtype, 256)
    log(
        f"{name}: {len(texts):,} rows, {tokens:,} tokens; sentence-transformers (256): {tokens / st_seconds:,.0f} tok/s"
    )
    rows = [{"model": name, "method": "sentence-transformers (256)", "steady": tokens / st_seconds, "call": None}]
    for code, batch, outputs in cases(args):
        path = args.old if code == "old" else HERE.parent
        try:
            forward, call = featx_run(path, folder, corpus, work, args, batch, outputs)
        except Exception as err:  # a failing variant is a result
            log(f"  featx {code} {batch} {outputs}: failed: {err}")
            continue
        method = f"featx {code}, {batch} rows/batch, {outputs}"
        rows.append({"model": name, "method": method, "steady": tokens / forward, "call": tokens / call})
        log(f"  {method}: steady {tokens / forward:,.0f}, call {tokens / call:,.0f} tok/s")
    if args.profile:
        featx_run(HERE.parent, folder, corpus, work, args, 256, "all", profile=args.out / f"profile-{name}.txt")
    return rows


def table(rows: list[dict], args) -> str:
    lines = [
        f"corpus {args.corpus.name}, {args.dtype}, device {args.device}",
        "",
        "| model | method | steady tokens/s | call tokens/s | steady / sentence-transformers |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows:
        st = next(r["steady"] for r in rows if r["model"] == row["model"] and r["call"] is None)
        call = "" if row["call"] is None else f"{row['call']:,.0f}"
        lines.append(
            f"| {row['model']} | {row['method']} | {row['steady']:,.0f} | {call} | {row['steady'] / st:.2f}x |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gpu.common_arguments(parser)
    parser.add_argument("--models", default="minilm,bert-base-random")
    parser.add_argument("--corpus", type=Path, default=None, help="default: ASSETS/sst2big.csv")
    parser.add_argument("--batches", default="256,4096,16384", help="rows per batch (--batch-size) tried")
    parser.add_argument("--old", type=Path, default=gpu.ASSETS / "old", help="an earlier featx package's parent")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--quick", action="store_true", help="the first 2,000 rows")
    parser.add_argument("--smoke", action="store_true", help="a tiny model and corpus built in place, CPU")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="featx-host-"))
    if args.smoke:  # only that every step runs (tests/bench/test_gpu_smoke.py); no timing means anything
        args.assets, args.device, args.dtype, args.models = gpu.smoke_assets(work), "cpu", "float32", "minilm"
        args.corpus, args.batches, args.old = args.assets / "sst2.csv", "16", work / "no-old-code"
    args.batches = [int(batch) for batch in args.batches.split(",")]
    args.corpus = args.corpus or args.assets / "sst2big.csv"
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        args.corpus = gpu.subset(args.corpus, 2000, work / "quick.csv")
    gpu.subset(args.corpus, 512, work / "warm.csv")
    log = lambda line="": print(line, flush=True)  # noqa: E731
    log(f"# bench/gpu_host.py {' '.join(sys.argv[1:])}, {time.strftime('%H:%M:%S')}, load {os.getloadavg()}")
    models = {
        "minilm": lambda: args.assets / "minilm-bf16",
        "bert-base-random": lambda: gpu.bert_base_random(args.assets, work),
    }
    rows: list[dict] = []
    for name in args.models.split(","):
        rows += bench_model(name, models[name](), args.corpus, work, args, log)
        (args.out / "host-table.md").write_text(table(rows, args) + "\n")  # after every model: a cut run keeps it
        (args.out / "host.json").write_text(json.dumps(rows, indent=1))
    log("\n" + table(rows, args))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""``featx extract --long window`` on long documents, timed between checkouts in alternating rounds.

    PYTHONPATH=$PWD python bench/long_window.py --roots /tmp/wt-main,. --rounds 2
    PYTHONPATH=$PWD python bench/long_window.py --roots /tmp/wt-main,. --extra=--max-tokens=8192

The corpus (written once to ``out/long-window-<docs>x<pieces>.csv``, gitignored): ``--docs`` documents, each
AG News texts (``$FEATX_BENCH_DATA/agnews/data.csv``, default ``../shared/data``) joined in file order until it
holds ``--pieces`` word-pieces of the default model's tokenizer, so every document runs as several windows.

A root is a folder holding a checkout (``git worktree add`` one for an older commit). Each run is a fresh
process, ``python -m featx extract CORPUS --long window --layer all -o out/long-window-<i>.h5 --overwrite``
(plus ``--extra``) with ``PYTHONPATH`` at its root; the roots alternate round by round so that the machine's load
hits them alike, and the best round counts. Each line gives the wall time of the whole command (imports, model
load and writing included) and the load average; at the end, the largest difference between the roots' features
(every pooling and layer, as stored: float16 unless ``--extra=--store-dtype=float32``).

A timing: run it on a quiet machine (``uptime`` is printed before and after), never in tests.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def make_corpus(docs: int, pieces: int, out: Path) -> Path:
    """``docs`` documents of about ``pieces`` word-pieces each, AG News texts joined in file order."""
    target = out / f"long-window-{docs}x{pieces}.csv"
    if target.exists():
        return target
    from featx.extraction.model.loading import load_model

    tokenizer = load_model("default", "cpu", "float32").tokenizer
    data = Path(os.environ.get("FEATX_BENCH_DATA", REPO.parent / "shared" / "data")) / "agnews" / "data.csv"
    documents: list[tuple[str, str]] = []
    with open(data, newline="", encoding="utf-8") as source:
        reader = csv.DictReader(source)
        parts: list[str] = []
        count = 0
        for row in reader:
            parts.append(row["text"])
            count += len(tokenizer(row["text"], add_special_tokens=False)["input_ids"])
            if count >= pieces:
                documents.append((" ".join(parts), row["label"]))
                parts, count = [], 0
                if len(documents) == docs:
                    break
    with open(target, "w", newline="", encoding="utf-8") as sink:
        writer = csv.writer(sink)
        writer.writerow(["text", "label"])
        writer.writerows(documents)
    return target


def extract(root: Path, corpus: Path, output: Path, extra: list[str]) -> float:
    """Wall seconds of one ``featx extract --long window --layer all`` in a fresh process of ``root``'s featx."""
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "featx", "extract", str(corpus), "--long", "window", "--layer", "all"]
    command += ["-o", str(output), "--overwrite", "--quiet", *extra]
    began = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(result.stderr)
    return time.perf_counter() - began


def largest_difference(first: Path, second: Path) -> float:
    """The largest absolute difference between two features files' pooled features (every pooling and layer)."""
    import numpy as np

    import featx

    with featx.open(first) as a, featx.open(second) as b:
        return max(
            float(np.abs(a.features(pooling, layer).astype(np.float64) - b.features(pooling, layer)).max())
            for pooling in a.poolings
            for layer in a.layers
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", default=".", help="comma-separated checkouts (folders), one per variant")
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--pieces", type=int, default=1500, help="word-pieces per document (about)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--extra", default="", help="comma-separated further options, e.g. --max-tokens=8192")
    args = parser.parse_args(argv)
    roots = [Path(root).resolve() for root in args.roots.split(",")]
    extra = [option for option in args.extra.split(",") if option]
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    corpus = make_corpus(args.docs, args.pieces, out)
    outputs = [out / f"long-window-{index}.h5" for index in range(len(roots))]
    print(f"# bench/long_window.py {' '.join(sys.argv[1:])}: {corpus.name}")
    print("uptime before:", uptime(), flush=True)
    best = [float("inf")] * len(roots)
    for round_ in range(args.rounds):
        for index, root in enumerate(roots):
            seconds = extract(root, corpus, outputs[index], extra)
            best[index] = min(best[index], seconds)
            print(f"round {round_} [{root}] {seconds:.1f} s (load {os.getloadavg()[0]:.2f})", flush=True)
    print("uptime after:", uptime())
    for index, root in enumerate(roots):
        print(f"best [{root}]: {best[index]:.1f} s ({best[0] / best[index]:.2f}x the first's speed)")
    for index in range(1, len(roots)):
        difference = largest_difference(outputs[0], outputs[index])
        print(f"largest |difference| of features, {roots[index]} vs {roots[0]}: {difference:.3g}")


if __name__ == "__main__":
    main()

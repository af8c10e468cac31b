"""Does ``--dtype bfloat16`` cost probe accuracy? The same rows extracted in fp32 and bf16, the same probe.

    PYTHONPATH=$PWD python bench/bf16_accuracy.py            # 10,000 AG News train rows, default model
    PYTHONPATH=$PWD python bench/bf16_accuracy.py --rows 3000 --corpus sst2

Both files are made by ``featx extract`` (all layers, all poolings, float16 store) and probed by
``featx.probe`` with the same seeded 5-fold CV (logreg, inner C search), so every (layer, pooling)
cell compares the two dtypes on the same folds: differences are paired, over all rows. Also prints
McNemar's exact test on the out-of-fold predictions of the cell with the largest difference.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CACHE = ROOT / "bench" / ".cache"
DATA = Path(os.environ.get("FEATX_BENCH_DATA", ROOT.parent / "shared" / "data"))


def corpus(name: str, rows: int) -> Path:
    import pandas as pd

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}{rows // 1000}k.csv"  # agnews10k.csv is bench/probe.py's corpus too
    if not path.exists():
        frame = pd.read_csv(DATA / name / "data.csv")
        frame[frame.split == "train"].head(rows)[["text", "label"]].to_csv(path, index=False)
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="agnews", help="a folder of ../shared/data (agnews, sst2, trec)")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--model", default="default")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    from scipy.stats import binomtest

    import featx

    path = corpus(args.corpus, args.rows)
    tables, rates, outputs = {}, {}, {}
    for dtype in ("float32", "bfloat16"):
        # The fp32 file of the default model is bench/probe.py's cached one.
        output = (
            CACHE / f"{path.stem}.features.h5"
            if dtype == "float32" and args.model == "default"
            else CACHE / "work" / f"{path.stem}.{args.model.replace('/', '_')}.{dtype}.h5"
        )
        outputs[dtype] = output
        summary = featx.extract(path, output=output, model=args.model, dtype=dtype, device="cpu", progress=False)
        print(summary.line())
        if summary.forward_seconds:
            rates[dtype] = summary.tokens / summary.forward_seconds
        started = time.perf_counter()
        result = featx.probe(
            output, layers="all", poolings="all", folds=args.folds, jobs=args.jobs, control=False, write=False
        )
        print(f"probe {dtype}: {time.perf_counter() - started:.1f} s")
        single = result.table[(result.table.kind == "single") & (result.table.classifier == "logreg")]
        tables[dtype] = single.set_index(["pooling", "layer"])["accuracy"] * 100
    print(f"# bench/bf16_accuracy.py {' '.join(sys.argv[1:])}  (load {os.getloadavg()[0]:.2f})")
    if rates:
        print("steady-state tokens/s of the runs made now: " + ", ".join(f"{k} {v:,.0f}" for k, v in rates.items()))
    full, low = tables["float32"], tables["bfloat16"]
    diff = (low - full).rename("diff")
    print("accuracy (%), bf16 - fp32, per pooling (columns) and layer (rows):")
    print(diff.unstack(0).round(2).to_string())
    worst = diff.abs().idxmax()
    print(
        f"cells within 0.5 points: {int((diff.abs() <= 0.5).sum())} of {len(diff)}; largest |difference| "
        f"{diff.abs().max():.2f} at {worst}; mean {diff.mean():+.3f}"
    )
    print(f"best cell: fp32 {full.max():.2f} ({full.idxmax()}), bf16 {low.max():.2f} ({low.idxmax()})")
    # Paired test on the worst cell: rows one dtype's probe got right and the other's wrong.
    pooling, layer = worst
    correct = {}
    for dtype, output in outputs.items():
        result = featx.probe(
            output,
            layers=str(layer),
            poolings=pooling,
            folds=args.folds,
            jobs=1,
            control=False,
            write=False,
            predictions=f"{pooling}/logreg",
        )
        frame = result.predictions
        correct[dtype] = (frame["label"] == frame[f"layer_{layer}"]).to_numpy()
    a, b = correct["float32"], correct["bfloat16"]
    only_fp32, only_bf16 = int((a & ~b).sum()), int((~a & b).sum())
    p = binomtest(only_fp32, only_fp32 + only_bf16).pvalue if only_fp32 + only_bf16 else 1.0
    print(
        f"McNemar on {worst}: right only with fp32 {only_fp32} rows, only with bf16 {only_bf16} rows, exact p = {p:.3f}"
    )


if __name__ == "__main__":
    main()

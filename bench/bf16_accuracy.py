"""Does ``--dtype bfloat16`` cost probe accuracy? SST-2 features in fp32 and bf16, same probe.

    PYTHONPATH=$PWD python bench/bf16_accuracy.py                # 3,000 train rows + the 872 test rows

Both extractions use featx with every layer and the mean and cls poolings; the probe is a plain
``LogisticRegression`` (standardised features, fixed C) fitted on train and scored on test, per layer.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent / ".cache"
DATA = Path(os.environ.get("FEATX_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def corpus(train_rows: int) -> Path:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"sst2-train{train_rows}-test.csv"
    if not path.exists():
        with open(DATA / "sst2" / "data.csv", newline="", encoding="utf-8") as handle:
            records = list(csv.DictReader(handle))
        rows = [r for r in records if r["split"] == "train"][:train_rows] + [r for r in records if r["split"] == "test"]
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label", "split"])
            writer.writerows((r["text"], r["label"], r["split"]) for r in rows)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-rows", type=int, default=3000)
    parser.add_argument("--model", default="default")
    args = parser.parse_args(argv)
    import featx
    from featx.extractor import ExtractConfig, extract
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    path = corpus(args.train_rows)
    accuracy, rates = {}, {}
    for dtype in ("float32", "bfloat16"):
        summary = extract(ExtractConfig(corpus=path, output=CACHE / "work" / f"acc-{dtype}.h5", model=args.model,
                                        device="cpu", dtype=dtype, poolings="mean,cls", overwrite=True,
                                        progress=False, max_length=256))
        rates[dtype] = summary.tokens / summary.forward_seconds
        with featx.open(summary.output) as features:
            split, y = np.asarray(features.split), features.labels("label")
            train, test = split == "train", split == "test"
            for pooling in ("mean", "cls"):
                for layer in features.layers:
                    X = features.features(pooling, layer)
                    probe = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
                    probe.fit(X[train], y[train])
                    accuracy[dtype, pooling, layer] = 100 * probe.score(X[test], y[test])
    print(f"# bench/bf16_accuracy.py {' '.join(sys.argv[1:])}  (load {os.getloadavg()[0]:.2f})")
    print(f"steady-state tokens/s: fp32 {rates['float32']:,.0f}, bf16 {rates['bfloat16']:,.0f}")
    print("| pooling | layer | fp32 acc | bf16 acc | bf16 - fp32 |")
    print("|---|---:|---:|---:|---:|")
    diffs = []
    for (dtype, pooling, layer), value in accuracy.items():
        if dtype == "float32":
            low = accuracy["bfloat16", pooling, layer]
            diffs.append(low - value)
            print(f"| {pooling} | {layer} | {value:.2f} | {low:.2f} | {low - value:+.2f} |")
    print(f"largest |difference|: {max(abs(d) for d in diffs):.2f} points; mean {np.mean(diffs):+.2f}")


if __name__ == "__main__":
    main()

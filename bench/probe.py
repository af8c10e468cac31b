"""Benchmark of ``featx probe``: all layers x all poolings x logreg (or svm), 5-fold CV with C search, against a
plain per-(layer, pooling) loop of ``LogisticRegressionCV`` (scaler + nested 5-fold CV, sklearn defaults), or for
``--classifier svm`` of ``GridSearchCV(LinearSVC)`` over featx's C grid (scaler + nested 5-fold CV).

    python bench/probe.py                      # 10,000 AG News rows, default model, cached in bench/.cache/
    python bench/probe.py FEATURES.h5          # any features file
    python bench/probe.py --reference-sets all # time the reference on all 35 sets (slow)
    python bench/probe.py --reference-sets 0   # featx probe alone (the probe-speed case of BENCHMARKS.md)
    python bench/probe.py --rows 2000 --classifier svm --reference-sets 2   # the svm probe

featx probe runs as ``featx probe FEATURES --layer all --pooling all`` does: the control task and the lexical
baseline (TF-IDF n-grams, a job of its own beside the layer jobs) included; its CPU time (user + sys of the
process and its job workers) is printed beside the wall time, as the machines are shared.

The reference is timed on a spread of ``--reference-sets`` (layer, pooling) sets; its full-grid time is
extrapolated from them and both accuracies are compared on the same sets. Prints machine load too:
the 2 cores of the development machines are shared.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CACHE = ROOT / "bench" / ".cache"
DATA = Path(os.environ.get("FEATX_BENCH_DATA", ROOT.parent / "shared" / "data")) / "agnews" / "data.csv"


def build_features(rows: int) -> Path:
    import pandas as pd

    import featx

    CACHE.mkdir(parents=True, exist_ok=True)
    corpus = CACHE / f"agnews{rows // 1000}k.csv"
    if not corpus.exists():
        frame = pd.read_csv(DATA)
        frame[frame.split == "train"].head(rows)[["text", "label"]].to_csv(corpus, index=False)
    output = corpus.with_name(corpus.stem + ".features.h5")
    summary = featx.extract(corpus, output=output, progress=False)  # a no-op when the cached file is current
    print(summary.line())
    return output


def cpu_seconds() -> float:
    """CPU time of this process and its live children (the joblib workers): load-independent-ish cost."""
    import psutil

    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def reference(X: np.ndarray, y: np.ndarray, folds: int, seed: int, classifier: str = "logreg") -> float:
    """Plain nested CV: StandardScaler + LogisticRegressionCV(Cs=10, cv=5) in each outer fold, or for svm
    StandardScaler + GridSearchCV(LinearSVC, featx's C grid, cv=5)."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scores = []
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y):
        model = make_pipeline(StandardScaler(), _reference_model(classifier))
        model.fit(X[train], y[train])
        scores.append(float(np.mean(model.predict(X[test]) == y[test])))
    return float(np.mean(scores))


def _reference_model(classifier: str):
    if classifier == "svm":
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import LinearSVC

        from featx.probing.config import DEFAULT_CS

        return GridSearchCV(LinearSVC(), {"C": list(DEFAULT_CS)}, cv=5, scoring="accuracy")
    from sklearn.linear_model import LogisticRegressionCV

    return LogisticRegressionCV(Cs=10, cv=5, l1_ratios=(0.0,), use_legacy_attributes=False, scoring="accuracy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("features", nargs="?", type=Path)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--classifier", choices=("logreg", "svm"), default="logreg")
    parser.add_argument(
        "--reference-sets",
        default="3",
        help="how many (layer, pooling) sets to time the reference on, or all (0: featx probe alone)",
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    from threadpoolctl import threadpool_limits

    import featx

    path = args.features or build_features(args.rows)
    print(f"load before: {load()}")
    cpu_start = cpu_seconds()
    started = time.perf_counter()
    result = featx.probe(
        path, layers="all", poolings="all", classifiers=args.classifier, folds=args.folds, jobs=args.jobs, write=False
    )
    ours_seconds = time.perf_counter() - started
    ours_cpu = cpu_seconds() - cpu_start  # the loky workers are still alive here, so they are counted
    table = result.table[result.table.kind == "single"]
    print(f"load after featx probe: {load()}")
    n_sets = len(table)
    X_shape = (result.meta["n_labelled"], None)
    lexical = result.table[result.table.kind == "lexical"]
    lexical_note = (
        f"lexical baseline fit {lexical.fit_seconds.iloc[0]:.0f} s" if len(lexical) else "no lexical baseline"
    )
    print(
        f"featx probe ({args.classifier}): {n_sets} sets (layers x poolings), {args.folds}-fold CV with C search, "
        f"control task and lexical baseline included ({lexical_note}), jobs={args.jobs}: {ours_seconds:.1f} s wall, "
        f"{ours_cpu:.0f} s CPU (user + sys, workers included)"
    )
    if args.reference_sets == "0":
        return

    with featx.open(path) as features:
        y = features.labels(result.meta["label"]).astype(np.int64)
        keys = list(zip(table.pooling, table.layer.astype(int), strict=False))
        count = n_sets if args.reference_sets == "all" else min(n_sets, int(args.reference_sets))
        picks = [keys[int(i)] for i in np.linspace(0, n_sets - 1, count).round()]
        rows, ref_seconds, ref_cpu = [], [], []
        for pooling, layer in picks:
            X = features.features(pooling, layer)
            X_shape = X.shape
            t, c = time.perf_counter(), time.process_time()
            # One BLAS thread, as featx's workers use: on a loaded machine, default BLAS threads spin
            # and would make the reference look far slower than it is.
            with threadpool_limits(1):
                accuracy = reference(X, y, args.folds, 0, args.classifier)
            ref_seconds.append(time.perf_counter() - t)
            ref_cpu.append(time.process_time() - c)
            ours = table[(table.pooling == pooling) & (table.layer == layer)].iloc[0]
            rows.append((pooling, layer, ours.accuracy, accuracy, ours.fit_seconds, ref_seconds[-1]))
    print(f"load after reference: {load()}")
    print(f"\nfeatures: {path} ({X_shape[0]} rows x {X_shape[1]} dims, {result.meta.get('model')})")
    print(
        f"{'pooling':8} {'layer':>5} {'featx acc':>10} {'reference acc':>14} {'diff (pts)':>10} "
        f"{'featx fit s':>12} {'reference s':>12}"
    )
    for pooling, layer, ours_acc, ref_acc, ours_s, ref_s in rows:
        print(
            f"{pooling:8} {layer:>5} {ours_acc:>10.4f} {ref_acc:>14.4f} {100 * (ours_acc - ref_acc):>+10.2f} "
            f"{ours_s:>12.1f} {ref_s:>12.1f}"
        )
    per_set = float(np.mean(ref_seconds))
    full = per_set * n_sets
    measured = "measured" if count == n_sets else f"extrapolated from {count} sets"
    print(
        f"\nreference, all {n_sets} sets: {full:.0f} s ({measured}; {per_set:.1f} s per set, 1 process, 1 BLAS thread)"
    )
    print(
        f"CPU time: reference {np.mean(ref_cpu) * n_sets:.0f} s ({np.mean(ref_cpu):.1f} s per set), featx probe "
        f"{ours_cpu:.0f} s (control included); CPU speed-up {np.mean(ref_cpu) * n_sets / ours_cpu:.1f}x"
    )
    print(
        f"featx probe, all {n_sets} sets: {ours_seconds:.1f} s wall (with control task; its own fit time "
        f"excluding the control: {table.fit_seconds.sum():.0f} s of CPU over {args.jobs} workers)"
    )
    print(
        f"speed-up: {full / ours_seconds:.1f}x; max |accuracy diff| on compared sets: "
        f"{100 * max(abs(r[2] - r[3]) for r in rows):.2f} points; cores: {os.cpu_count()}"
    )


if __name__ == "__main__":
    main()

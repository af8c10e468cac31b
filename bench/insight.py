"""Benchmark of the insight features on the demo corpus: the cost of ``--mdl`` on top of a probe, and
the ``--dry-run`` estimate (size, peak memory, time) against the real extraction.

    python bench/insight.py                    # data/demo.csv, default model, outputs in bench/.cache/
    python bench/insight.py --label negation --poolings mean,cls

Prints machine load too: the 2 cores of the development machines are shared, so times vary.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CACHE = ROOT / "bench" / ".cache"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(ROOT / "data" / "demo.csv"))
    parser.add_argument("--label", default="negation")
    parser.add_argument("--poolings", default="mean,cls")
    args = parser.parse_args()

    import featx

    CACHE.mkdir(parents=True, exist_ok=True)
    output = CACHE / "insight-demo.h5"
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    guess = featx.estimate(args.corpus, output=output, overwrite=True)
    started = time.perf_counter()
    summary = featx.extract(args.corpus, output=output, overwrite=True, progress=False)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # includes the estimate's own run
    print(
        f"size: estimated {guess.file_bytes:,} B, real {summary.file_bytes:,} B "
        f"({100 * (guess.file_bytes / summary.file_bytes - 1):+.2f}%)"
    )
    print(f"time: estimated {guess.seconds:.1f} s, real {seconds:.1f} s ({guess.calibration})")
    print(
        f"peak memory: estimated {guess.peak_memory_bytes / 1e6:,.0f} MB, this process's max RSS "
        f"{peak / 1e6:,.0f} MB (estimate and extraction in one process)"
    )

    featx.probe(output, label=args.label, poolings="mean", layers="0", write=False)  # imports, worker start-up
    timings: dict[bool, list[float]] = {False: [], True: []}
    for mdl in (False, True, False, True):  # alternated, best of two: the machine's load drifts
        started = time.perf_counter()
        featx.probe(output, label=args.label, poolings=args.poolings, mdl=mdl, write=False)
        timings[mdl].append(time.perf_counter() - started)
    plain, with_mdl = min(timings[False]), min(timings[True])
    print(
        f"probe --label {args.label} --pooling {args.poolings}: {plain:.1f} s, with --mdl {with_mdl:.1f} s "
        f"({100 * (with_mdl / plain - 1):+.0f}%), best of two each"
    )


if __name__ == "__main__":
    main()

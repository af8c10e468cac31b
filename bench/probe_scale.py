"""``featx probe`` at scale on synthetic features: wall time and peak RSS, one layer against all layers.

    PYTHONPATH=$PWD python bench/probe_scale.py                   # both sizes below
    PYTHONPATH=$PWD python bench/probe_scale.py --sizes 100000x7x384 --jobs 2
    PYTHONPATH=$PWD python bench/probe_scale.py --sizes 2000x7x384 -- --no-control     # a smoke run

Sizes are ROWSxLAYERSxWIDTH: 100,000 x 7 x 384 (MiniLM: embeddings + 6 layers) and 20,000 x 13 x 768
(bert-base-sized), all 5 poolings (cls, mean, max, last, pooler) stored as float16. The files are written
through featx's own store writer (``FeatureWriter``: the schema, chunking, commit markers and the final
rename of a real extraction), block by block, so writing them is memory-flat too. Their values are
seeded noise plus a 4-class label signal along one random direction per class whose strength grows
with the layer (from near chance to roughly 80% accuracy), so the solver has real work to do.

Each probe runs ``python -m featx probe FILE --layer L --pooling all -o ...`` in its own process (peak
RSS of that process and the peak summed RSS of its process tree, joblib workers included, sampled), first
with the last layer only and then with ``--layer all``: memory-flat means the peak does not grow with the
number of layers probed (featx reads one layer x pooling at a time).
Files are cached in bench/.cache/probe-scale/ (gitignored).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(__file__).resolve().parent / ".cache" / "probe-scale"
POOLINGS = ("cls", "mean", "max", "last", "pooler")
N_CLASSES = 4
BLOCK_BYTES = 64 << 20


def synthetic_features(rows: int, layers: int, width: int, seed: int = 0) -> Path:
    """A complete featx features file of the given shape, written through ``FeatureWriter``."""
    from featx.extraction.inputs.corpus import read_corpus
    from featx.extraction.tokens.tokenize import TokenizedCorpus
    from featx.store import FeatureWriter
    from featx.store.schema import HIDDEN_SITE, SiteLayout

    CACHE.mkdir(parents=True, exist_ok=True)
    output = CACHE / f"synthetic-v2-{rows}x{layers}x{width}.h5"
    if output.exists():
        return output
    corpus_path = CACHE / f"synthetic-{rows}.csv"
    labels = np.arange(rows) % N_CLASSES
    with open(corpus_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows((f"row {index}", f"class{label}") for index, label in enumerate(labels))
    corpus = read_corpus(corpus_path)
    tokens_per_row = 12
    tokenized = TokenizedCorpus(
        input_ids=np.zeros(rows * tokens_per_row, dtype=np.int32),
        offsets=np.arange(rows + 1, dtype=np.int64) * tokens_per_row,
        full_lengths=np.full(rows, tokens_per_row, dtype=np.int32),
        word_ids=None,
    )
    site = SiteLayout(HIDDEN_SITE, tuple(range(layers)), width, POOLINGS)
    attrs = {"model": f"synthetic {layers}x{width}", "synthetic": "bench/probe_scale.py"}
    writer = FeatureWriter.create(output, attrs, corpus, tokenized, [site], np.float16, with_tokens=False)
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((N_CLASSES, width)).astype(np.float32)
    # later layers separate the classes better: from chance-like to ~80% (a shift of up to ~1.6 noise sd
    # along a direction of norm ~sqrt(width)); an easy signal would let the solver stop too early
    strength = np.linspace(0.005, 0.08, layers, dtype=np.float32) * np.sqrt(384 / width)
    block = max(1, BLOCK_BYTES // (layers * width * 4))
    try:
        for start in range(0, rows, block):
            stop = min(rows, start + block)
            signal = directions[labels[start:stop]]  # (n, width)
            values = {}
            for path in site.pooled_paths.values():
                noise = rng.standard_normal((stop - start, layers, width), dtype=np.float32)
                values[path] = (noise + strength[None, :, None] * signal[:, None, :]).astype(np.float16)
            writer.write_block(start, stop, values)
            writer.commit(stop)
        writer.finish()
    finally:
        writer.close()
    return output


def peak_rss(command: list[str], env: dict, cwd: Path | None = None) -> tuple[float, float, float]:
    """Peak RSS of the process and peak summed RSS of its process tree (joblib workers included), both
    sampled every 0.2 s with psutil, and wall seconds. ``cwd``: where the process runs (``python -m``
    puts it first on the module path, ahead of PYTHONPATH)."""
    import psutil

    errors = tempfile.TemporaryFile()  # noqa: SIM115 (read after the process ends; a pipe could stall the probe)
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors)
    own_peak = tree_peak = 0
    me = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            tree = [me, *me.children(recursive=True)]
            own_peak = max(own_peak, me.memory_info().rss)
            tree_peak = max(tree_peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    if process.returncode:
        errors.seek(0)
        raise SystemExit(f"{' '.join(command)} failed:\n{errors.read().decode()[-3000:]}")
    return own_peak / 2**20, tree_peak / 2**20, seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000x7x384,20000x13x768")
    parser.add_argument("--jobs", type=int, default=None, help="featx probe --jobs (default: featx's)")
    parser.add_argument("--layers", default="-1,all", help="the --layer values to compare, ';'-separated")
    parser.add_argument("extra", nargs="*", help="more featx probe options (after --)")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    print(f"# bench/probe_scale.py {' '.join(sys.argv[1:])}  (load {os.getloadavg()})", flush=True)
    print(
        "| rows x layers x width | file MB | write s | --layer | peak RSS (MiB) | peak tree RSS (MiB) "
        "| probe s | load |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---|")
    for size in args.sizes.split(","):
        rows, layers, width = (int(part) for part in size.split("x"))
        start = time.perf_counter()
        path = synthetic_features(rows, layers, width)
        written = time.perf_counter() - start
        for layer in args.layers.split(";") if ";" in args.layers else args.layers.split(","):
            command = [
                sys.executable,
                "-m",
                "featx",
                "probe",
                str(path),
                "--layer",
                layer,
                "--pooling",
                "all",
                "-o",
                str(CACHE / f"probe-{size}-{layer}"),
                *(["--jobs", str(args.jobs)] if args.jobs else []),
                *args.extra,
            ]
            rss, tree, seconds = peak_rss(command, env)
            print(
                f"| {rows:,} x {layers} x {width} | {path.stat().st_size / 1e6:,.0f} | {written:.1f} | {layer} "
                f"| {rss:,.0f} | {tree:,.0f} | {seconds:.1f} | {os.getloadavg()[0]:.1f} |",
                flush=True,
            )
            written = 0.0
    print(f"command: {' '.join(command[1:])}")


if __name__ == "__main__":
    main()

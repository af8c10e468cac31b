"""Peak RSS of ``featx extract`` against the row count: it must stay flat (features stream to disk).

    PYTHONPATH=$PWD python bench/memory.py                       # 20k, 50k, 200k rows, tiny BERT
    PYTHONPATH=$PWD python bench/memory.py --rows 20000,200000 -- --pooling mean --layer -1

Each size runs the real command in its own process; its peak RSS comes from ``os.wait4``. The model
is a 2-layer, 32-dim random BERT with a small WordPiece vocabulary (the tests' recipe) so that the
time goes to the pipeline (reading, tokenising, batching, writing), not to the encoder. The corpus
is synthetic short rows (3-12 words). Everything lives in bench/.cache/ (gitignored).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(__file__).resolve().parent / ".cache"
sys.path.insert(0, str(ROOT / "tests"))


def tiny_model() -> Path:
    folder = CACHE / "tiny-bert"
    if not (folder / "model.safetensors").exists():
        from support.tiny import build_tiny_bert  # the tests' tiny-BERT recipe (offline, seeded)

        build_tiny_bert(folder, layers=2, hidden=32, max_positions=64)
    return folder


def corpus(rows: int) -> Path:
    from support.tiny import WORDS

    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"short-{rows}.csv"
    if not path.exists():
        rng = random.Random(0)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("text,label\n")
            for index in range(rows):
                words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
                handle.write(f'"{" ".join(words)}",{index % 3}\n')
    return path


def peak_rss(command: list[str], env: dict) -> tuple[float, float, int]:
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    stderr = process.stderr.read().decode()
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr}")
    return usage.ru_maxrss / 1024, seconds, process.returncode  # KiB -> MiB


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="20000,50000,200000")
    parser.add_argument("--model", default=None, help="model folder (default: the tiny BERT)")
    parser.add_argument("extra", nargs="*", help="more featx extract options (after --)")
    args = parser.parse_args(argv)
    model = args.model or str(tiny_model())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    print(f"# bench/memory.py {' '.join(sys.argv[1:])}  (load {os.getloadavg()[0]:.2f})")
    print("| rows | peak RSS (MiB) | seconds | file MB |")
    print("|---:|---:|---:|---:|")
    results = []
    for rows in [int(n) for n in args.rows.split(",")]:
        path = corpus(rows)
        output = CACHE / "work" / f"memory-{rows}.h5"
        output.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "featx",
            "extract",
            str(path),
            "-o",
            str(output),
            "--model",
            model,
            "--overwrite",
            "-q",
            *args.extra,
        ]
        rss, seconds, _ = peak_rss(command, env)
        results.append((rows, rss))
        print(f"| {rows:,} | {rss:.0f} | {seconds:.1f} | {output.stat().st_size / 1e6:.1f} |", flush=True)
        output.unlink()
    if len(results) > 1:
        (r0, m0), (r1, m1) = results[0], results[-1]
        print(f"slope: {(m1 - m0) * 2**20 / (r1 - r0):.0f} bytes of peak RSS per extra row")
    print(f"command: {' '.join(command[1:])}")


if __name__ == "__main__":
    main()

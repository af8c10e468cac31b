"""Memory of reading and tokenising 1,000,000 tiny rows ("1,000,000 tiny rows, memory flat").

Each measurement runs in a fresh process: peak RSS (ru_maxrss) after imports, then after
``read_corpus`` + ``tokenize_texts`` of N one-character rows; prints bytes per row for several N, so
growth is seen to be a small per-row constant (no features are held: those stream to disk).

    PYTHONPATH=$PWD .venv/bin/python bench/million_rows.py [--rows 100000,1000000] [--model default]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from featx.extraction.inputs.corpus import read_corpus
from featx.extraction.model.loading import load_tokenizer
from featx.extraction.tokens.tokenize import tokenize_texts
tokenizer = load_tokenizer(sys.argv[2])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
started = time.perf_counter()
corpus = read_corpus(sys.argv[1])
tokenized = tokenize_texts(tokenizer, corpus.texts, 512)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rows": len(corpus), "base_mb": base / 1e6, "peak_mb": peak / 1e6, "seconds": seconds,
                  "bytes_per_row": (peak - base) / len(corpus)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="100000,1000000")
    parser.add_argument("--model", default="default")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for n in (int(value) for value in args.rows.split(",")):
            path = Path(folder) / f"rows{n}.csv"
            with open(path, "w") as handle:
                handle.write("text,label\n")
                handle.writelines(f"{'abcdefghij'[i % 10]},{i % 2}\n" for i in range(n))
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), args.model], capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr)
            print(out.stdout.strip())


if __name__ == "__main__":
    main()

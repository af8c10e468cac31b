"""What extra sites cost: featx extract with ``--site hidden`` against attn_out/ffn/pre_ln and attn_heads.

    PYTHONPATH=$PWD python bench/sites.py --corpus /path/to/data.csv --rows 1000 --repeats 2

Takes the first ``--rows`` rows of the corpus and extracts them (default model, every layer and
pooling, float16 store) once per site set, alternating the sets ``--repeats`` times, in this process.
Prints a Markdown table: the median seconds of the extraction (model load excluded where featx
reports it), tokens per second, the ratio to ``hidden`` alone and the file size. Files go to a
temporary folder.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import tempfile
import time
from pathlib import Path

SITE_SETS = {
    "hidden": "hidden",
    "+attn_out,ffn,pre_ln": "hidden,attn_out,ffn,pre_ln",
    "+attn_heads": "hidden,attn_heads",
    "+all four": "hidden,attn_out,ffn,pre_ln,attn_heads",
}


def subset(corpus: Path, rows: int, folder: Path) -> Path:
    out = folder / "corpus.csv"
    with open(corpus, newline="", encoding="utf-8") as src, open(out, "w", newline="", encoding="utf-8") as dst:
        reader, writer = csv.reader(src), csv.writer(dst)
        for number, row in enumerate(reader):
            if number > rows:
                break
            writer.writerow(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--text-col", default="text")
    args = parser.parse_args()

    import featx

    with tempfile.TemporaryDirectory() as folder:
        corpus = subset(args.corpus, args.rows, Path(folder))
        seconds = {name: [] for name in SITE_SETS}
        sizes, tokens = {}, 0
        print(f"load before: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
        for _ in range(args.repeats):
            for name, sites in SITE_SETS.items():
                output = Path(folder) / "out.h5"
                started = time.perf_counter()
                summary = featx.extract(str(corpus), output=str(output), sites=sites, text_col=args.text_col,
                                        overwrite=True, progress=False)
                wall = time.perf_counter() - started
                # The batch loop alone where featx reports it (perf branch), else the whole call.
                seconds[name].append(getattr(summary, "forward_seconds", 0.0) or wall)
                sizes[name], tokens = summary.file_bytes, summary.tokens
        print(f"load after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    base = statistics.median(seconds["hidden"])
    print(f"\n{args.rows} rows, {tokens} tokens\n")
    print("| sites | median s | tokens/s | x hidden | file MB | runs (s) |")
    print("|---|---|---|---|---|---|")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {tokens / median:,.0f} | {median / base:.2f} | {sizes[name] / 1e6:.1f} | "
              f"{', '.join(f'{value:.2f}' for value in values)} |")


if __name__ == "__main__":
    main()

"""A/B of featx's batch loop (forward + pooling of every layer) between checkouts or settings.

    PYTHONPATH=$PWD python bench/ab.py --roots fcec669,. --corpus bench/.cache/sst2-872.csv --rounds 3
    PYTHONPATH=$PWD python bench/ab.py --roots .,. --env FEATX_ONEDNN=0, --max-tokens 8192,16384

A root is a folder (a checkout) or a git commit of this repository: a commit is checked out with
``git worktree add --detach`` into a temporary folder for the run and removed afterwards, so an old
commit runs its own code and the current tree needs no old import paths.

The model runs as ``featx extract`` would run it: on featx's own encoder where that checkout has one and the
folder qualifies (``FEATX_NATIVE=0`` in ``--env``: through transformers); each round says which. (Before 29 Nov 2026
this script always loaded through transformers.)

Each variant runs in its own process (fresh imports from its root), variants alternate round by round so
that machine load hits them alike, and the best round counts. Besides wall-clock tokens/s it prints tokens
per CPU-second of the process (all threads), steadier when other jobs share the cores. Timed: the same
batches as ``featx extract`` plans them, through that checkout's runner (``Runner`` with its
``ExtractionPlan``, or the older ``_Runner``), without HDF5 writing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, warnings, torch
warnings.simplefilter("ignore", DeprecationWarning)
from featx.extraction.tokens.batching import collate, plan_batches
from featx.extraction.inputs.corpus import read_corpus
from featx.extraction.model.loading import load_model
from featx.extraction.tokens.tokenize import tokenize_texts
corpus, model, dtype, max_tokens, batch_size, max_length = sys.argv[1:7]
# featx's own encoders where `featx extract` would run them (FEATX_NATIVE=0: transformers), in checkouts that have them
import inspect, os
native = "native" in inspect.signature(load_model).parameters and os.environ.get("FEATX_NATIVE", "1") != "0"
loaded = load_model(model, "cpu", dtype, max_length=int(max_length), **({"native": True} if native else {}))
implementation = type(loaded.model).__module__.split(".")[0]
read = read_corpus(corpus, "text", None, False, "utf-8")
tokenized = tokenize_texts(loaded.tokenizer, read.texts, loaded.max_length)
try:  # featx >= the extraction package: the runner reads an ExtractionPlan
    from featx.extraction import ExtractConfig
    from featx.extraction.run.resolve import resolve_plan
    from featx.extraction.forward.runner import Runner
    config = ExtractConfig(corpus=corpus, model=model, dtype=dtype, max_tokens=int(max_tokens),
                           batch_size=int(batch_size), max_length=int(max_length), progress=False)
    runner = Runner(loaded, resolve_plan(config, read.sha256, loaded))
except ImportError:  # older checkouts
    import numpy as np
    from featx.extractor import _Runner
    from featx.extraction.forward.pooling import POOLING_FUNCTIONS
    poolings = list(POOLING_FUNCTIONS) + (["pooler"] if loaded.has_pooler else [])
    runner = _Runner(loaded, list(range(loaded.n_layers)), poolings, False, np.float16)
batches = [collate(tokenized, rows, 0) for rows in plan_batches(tokenized.lengths, int(max_tokens), int(batch_size))]
runner(*batches[-1])  # warm-up on the smallest batch
start, cpu = time.perf_counter(), time.process_time()
for ids, mask in batches:
    pooled = runner(ids, mask)[0]  # both: a dict of CPU tensors first
    for value in pooled.values():
        value.numpy()
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
tokens = int(tokenized.lengths.sum())
rates = {"tokens_per_second": tokens / seconds, "tokens_per_cpu_second": tokens / cpu}
print(json.dumps({**rates, "batches": len(batches), "implementation": implementation}))
"""


@contextmanager
def checkout(root: str):
    """``root`` as a folder: itself when it is one, else a temporary worktree of that commit."""
    if Path(root).is_dir():
        yield Path(root).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="featx-ab-") as parent:
        folder = Path(parent) / root.replace("/", "_")
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(folder), root], check=True)
        try:
            yield folder
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], check=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roots", default=".", help="comma-separated checkouts or git commits, one per variant")
    parser.add_argument("--env", default="", help="comma-separated NAME=VALUE per variant (empty: none)")
    parser.add_argument("--max-tokens", default="8192", help="comma-separated, one per variant or one for all")
    parser.add_argument("--batch-size", default="256")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--model", default="default")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--max-length", default="256")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    columns = {name: getattr(args, name).split(",") for name in ("roots", "env", "max_tokens", "batch_size")}
    n = max(len(values) for values in columns.values())
    columns = {name: values * n if len(values) == 1 else values for name, values in columns.items()}
    with ExitStack() as stack:
        columns["roots"] = [str(stack.enter_context(checkout(root))) for root in columns["roots"]]
        run_rounds(args, columns, n)


def run_rounds(args, columns: dict, n: int) -> None:
    best, best_cpu = [0.0] * n, [0.0] * n
    print(f"# bench/ab.py {' '.join(sys.argv[1:])}")
    for round_ in range(args.rounds):
        for i in range(n):
            env = {
                **os.environ,
                "PYTHONPATH": str(Path(columns["roots"][i]).resolve()),
                "HF_HUB_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
            }
            if columns["env"][i]:
                key, value = columns["env"][i].split("=", 1)
                env[key] = value
            result = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    args.corpus,
                    args.model,
                    args.dtype,
                    columns["max_tokens"][i],
                    columns["batch_size"][i],
                    args.max_length,
                ],
                env=env,
                capture_output=True,
                text=True,
            )
            if result.returncode:
                raise SystemExit(result.stderr)
            measured = json.loads(result.stdout.strip().splitlines()[-1])
            rate, cpu_rate = measured["tokens_per_second"], measured["tokens_per_cpu_second"]
            best[i], best_cpu[i] = max(best[i], rate), max(best_cpu[i], cpu_rate)
            label = " ".join(f"{k}={columns[k][i]}" for k in columns if columns[k][i])
            print(
                f"round {round_} [{label}] {rate:,.0f} tokens/s, {cpu_rate:,.0f} per CPU-second "
                f"({measured.get('implementation', 'transformers')}; load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    for i in range(n):
        label = " ".join(f"{k}={columns[k][i]}" for k in columns if columns[k][i])
        print(
            f"best [{label}]: {best[i]:,.0f} tokens/s ({best[i] / best[0]:.2f}x the first), "
            f"{best_cpu[i]:,.0f} tokens per CPU-second ({best_cpu[i] / best_cpu[0]:.2f}x)"
        )


if __name__ == "__main__":
    main()

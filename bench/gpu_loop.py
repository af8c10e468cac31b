"""Why featx's batch loop ran slower inside bench/gpu.py's process than in a fresh one: a timeline of the loop.

    PYTHONPATH=$PWD python bench/gpu_loop.py --out DIR              # on the GPU machine (bench/gpu.sh: step "loop")
    PYTHONPATH=$PWD python bench/gpu_loop.py --smoke --out DIR      # tiny model, CPU, seconds (only that it runs)

On the H100 (27 Nov 2026) the batch loop ran MiniLM on 20,000 SST-2 rows at 216k tokens/s in a fresh process
(bench/gpu_host.py) but 82k inside bench/gpu.py's process, whose earlier work is: the bf16 matmul rate, a CPU
fp32 reference run (featx's CPU path: oneDNN, torch's CPU thread pool), a GPU parity run on 200 rows. This
step replays that sequence, then times the same ``featx.extract`` (model, corpus, dtype, default batch) as:

  in-process (as gpu.py)     right after gpu.py's sequence
  in-process, again          once more in the same process: a first-run effect shows as a difference here
  in-process, copy stream    ``FEATX_COPY_STREAM=1``: pooled outputs copied to pinned host memory on a side
                             CUDA stream (featx/extraction/forward/runner.py)
  fresh process              a new process: a warm-up run on 512 rows, then the run (as gpu_host.py does)
  fresh, after a CPU run     a new process that first runs the CPU fp32 reference (tests that suspect alone)

Each run records a host timeline of the loop's phases by wrapping featx's own functions (no change to featx):
tokenise (before the loop), collate (the collate thread), wait for input (the main thread waiting on it),
forward + pool launch (the ``Runner`` call: on CUDA the kernels are queued, so a long time here is the CPU
blocked on a full GPU queue), D2H wait (the batch's copy event), scatter (results into the block's buffers),
finite check, write wait (the main thread blocked on the writer's queue), HDF5 write and commit (the writer
thread), final write (closing the writer). On CUDA the GPU's busy share over the loop comes from
torch.profiler with CUDA activity only (no CPU op tracing, whose per-op cost would itself idle the GPU).
Writes loop-table.md and loop.json to --out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu  # noqa: E402  (bench/gpu.py: assets, the bf16 matmul rate, subset, run_featx)

PHASES = (
    "tokenise",
    "collate",
    "wait for input",
    "forward + pool launch",
    "D2H wait",
    "scatter",
    "finite check",
    "write wait",
    "HDF5 write",
    "commit",
    "final write",
)


class Timeline:
    """(phase, thread, start, end) of every wrapped call while active; featx's functions patched in place."""

    def __init__(self):
        self.events: list[tuple[str, str, float, float]] = []
        self.lock = threading.Lock()
        self.patches: list[tuple[object, str, object]] = []
        self.loop_span = (0.0, 0.0)

    def record(self, phase: str, start: float) -> None:
        with self.lock:
            self.events.append((phase, threading.current_thread().name, start, time.perf_counter()))

    def wrap(self, owner, name: str, phase: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.record(phase, start)

        self.patches.append((owner, name, original))
        setattr(owner, name, timed)

    def __enter__(self):
        from featx.extraction.forward.runner import Runner
        from featx.extraction.run import loop, orchestrate, threads
        from featx.store import writer

        self.wrap(orchestrate, "tokenize_input", "tokenise")
        self.wrap(loop, "collate", "collate")
        self.wrap(Runner, "__call__", "forward + pool launch")
        self.wrap(loop.Block, "check_finite", "finite check")
        self.wrap(threads.BackgroundWriter, "submit", "write wait")
        self.wrap(threads.BackgroundWriter, "close", "final write")
        self.wrap(writer.FeatureWriter, "write_block", "HDF5 write")
        self.wrap(writer.FeatureWriter, "commit", "commit")
        self._wrap_store(loop.Block)
        self._wrap_prefetch(loop)
        self._wrap_run(loop)
        return self

    def _wrap_store(self, block) -> None:
        """Block.store: the wait on the batch's copy event, then the scatter into the buffers."""
        original = block.store

        def store(this, positions, batch, event):
            start = time.perf_counter()
            if event is not None:
                event.synchronize()
            self.record("D2H wait", start)
            start = time.perf_counter()
            original(this, positions, batch, None)
            self.record("scatter", start)

        self.patches.append((block, "store", original))
        block.store = store

    def _wrap_prefetch(self, loop) -> None:
        original = loop.prefetch

        def prefetch(iterable, *args, **kwargs):
            items = original(iterable, *args, **kwargs)
            while True:
                start = time.perf_counter()
                item = next(items, None)
                self.record("wait for input", start)
                if item is None:
                    return
                yield item

        self.patches.append((loop, "prefetch", original))
        loop.prefetch = prefetch

    def _wrap_run(self, loop) -> None:
        original = loop.run

        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.loop_span = (start, time.perf_counter())

        self.patches.append((loop, "run", original))
        loop.run = run

    def __exit__(self, *exc):
        for owner, name, original in reversed(self.patches):
            setattr(owner, name, original)

    def summary(self) -> dict:
        start, end = self.loop_span
        wall = max(end - start, 1e-9)
        phases = {}
        for phase in PHASES:
            spans = [(thread, s, e) for p, thread, s, e in self.events if p == phase]
            if spans:
                seconds = sum(e - s for _, s, e in spans)
                threads_ = sorted({thread for thread, _, _ in spans})
                phases[phase] = {"calls": len(spans), "seconds": seconds, "threads": threads_}
        return {"loop_seconds": wall, "phases": phases}


def gpu_busy(prof, span: tuple[float, float] | None = None) -> dict:
    """The union of the GPU's kernel and copy intervals over (first to last) of them."""
    busy, first_to_last = gpu.gpu_busy_time(prof)
    if first_to_last == 0:
        return {}
    return {"gpu_busy_seconds": busy / 1e6, "gpu_first_to_last_seconds": first_to_last / 1e6}


def timed_run(folder: Path, corpus: Path, work: Path, device: str, dtype: str, profile: bool) -> dict:
    """One ``featx.extract`` with the timeline (and, on CUDA with ``profile``, the CUDA-only profiler)."""
    with contextlib.ExitStack() as stack:
        timeline = stack.enter_context(Timeline())
        prof = None
        if profile and device.startswith("cuda"):
            from torch.profiler import ProfilerActivity
            from torch.profiler import profile as torch_profile

            prof = stack.enter_context(torch_profile(activities=[ProfilerActivity.CUDA]))
        summary = gpu.run_featx(folder, corpus, work / "loop.h5", device, dtype)
    result = {"forward_seconds": summary.forward_seconds, "call_seconds": summary.seconds, **timeline.summary()}
    if prof is not None:
        result.update(gpu_busy(prof))
        result["gpu_busy_share"] = result.get("gpu_busy_seconds", 0.0) / result["loop_seconds"]
    return result


def gpu_py_sequence(folder: Path, corpus: Path, work: Path, args) -> None:
    """What bench/gpu.py's process does before its timed run: matmul rate, CPU fp32 reference, parity run."""
    import torch

    config = json.loads((folder / "config.json").read_text())
    gpu.bf16_matmul_rate(torch.device(args.device), config["hidden_size"], config["intermediate_size"], 0.5)
    parity = gpu.subset(corpus, args.parity_rows, work / "parity.csv")
    gpu.run_featx(folder, parity, work / "cpu-fp32.h5", "cpu", "float32")
    gpu.run_featx(folder, parity, work / "parity.h5", args.device, args.dtype)


CHILD = """
import json, sys
sys.path.insert(0, sys.argv[2])
import gpu_loop
from pathlib import Path
a = json.loads(sys.argv[1])
work = Path(a["work"])
if a["cpu_first"]:
    gpu_loop.gpu.run_featx(Path(a["folder"]), Path(a["parity"]), work / "cpu.h5", "cpu", "float32")
gpu_loop.gpu.run_featx(Path(a["folder"]), Path(a["warm"]), work / "warm.h5", a["device"], a["dtype"])
result = gpu_loop.timed_run(Path(a["folder"]), Path(a["corpus"]), work, a["device"], a["dtype"], a["profile"])
print("RESULT", json.dumps(result))
"""


def fresh_run(folder: Path, corpus: Path, work: Path, args, cpu_first: bool) -> dict:
    """The same timed run in a new process (warm-up on 512 rows first; ``cpu_first``: the CPU reference too)."""
    options = {
        "folder": str(folder),
        "corpus": str(corpus),
        "work": str(work),
        "device": args.device,
        "dtype": args.dtype,
        "profile": True,
        "cpu_first": cpu_first,
        "warm": str(gpu.subset(corpus, 512, work / "warm.csv")),
        "parity": str(gpu.subset(corpus, args.parity_rows, work / "parity.csv")),
    }
    done = subprocess.run(
        [*gpu.python_command(), "-c", CHILD, json.dumps(options), str(HERE)],
        capture_output=True,
        text=True,
        check=False,
    )
    line = next((line for line in done.stdout.splitlines() if line.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError((done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])
    return json.loads(line[len("RESULT ") :])


def table(rows: list[dict], tokens: int, header: str) -> str:
    lines = [header, "", "| run | steady tokens/s | loop s | GPU busy | " + " | ".join(PHASES) + " |"]
    lines.append("|---|---:|---:|---:|" + "---:|" * len(PHASES))
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['run']} | failed: {row['error']} |")
            continue
        busy = f"{100 * row['gpu_busy_share']:.0f}%" if "gpu_busy_share" in row else "n/a"
        cells = [f"{row['phases'][p]['seconds']:.3f}" if p in row["phases"] else "" for p in PHASES]
        lines.append(
            f"| {row['run']} | {tokens / row['forward_seconds']:,.0f} | {row['loop_seconds']:.3f} | {busy} | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        "Phase columns: seconds summed over calls (threads overlap, so they do not add up to the loop). "
        "GPU busy: union of kernel and copy time over the loop's wall time (CUDA-only profiler over the whole "
        "call: the model's upload, a few ms, is counted too).",
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gpu.common_arguments(parser)
    parser.add_argument("--model", default="minilm", choices=["minilm", "bert-base-random"])
    parser.add_argument("--corpus", default="sst2big", help="a corpus of --assets (default sst2big, else sst2)")
    parser.add_argument("--parity-rows", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="a tiny model and corpus built in place, CPU")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="featx-loop-"))
    if args.smoke:  # only that every run works (tests/bench/test_gpu_smoke.py); no timing means anything
        args.assets, args.device, args.dtype, args.corpus, args.parity_rows = (
            gpu.smoke_assets(work),
            "cpu",
            "float32",
            "sst2",
            8,
        )
        gpu.BERT_BASE.update(gpu.SMOKE_BERT)
    corpus = args.assets / f"{args.corpus}.csv"
    corpus = corpus if corpus.exists() else args.assets / "sst2.csv"
    folder = args.assets / "minilm-bf16" if args.model == "minilm" else gpu.bert_base_random(args.assets, work)
    args.out.mkdir(parents=True, exist_ok=True)
    tokens = tokens_of(folder, corpus)
    header = (
        f"{args.model}, {corpus.name} ({tokens:,} tokens), {args.dtype}, {args.device}, "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f}"
    )
    print(f"# bench/gpu_loop.py: {header}", flush=True)
    rows: list[dict] = []

    def measure(run: str, how) -> None:
        try:
            rows.append({"run": run, **how()})
        except Exception as err:  # a failing variant is a result
            rows.append({"run": run, "error": f"{type(err).__name__}: {err}"})
        print(f"  {run}: {rows[-1].get('forward_seconds', rows[-1].get('error'))}", flush=True)
        (args.out / "loop-table.md").write_text(table(rows, tokens, header) + "\n")  # a cut run keeps what it has
        (args.out / "loop.json").write_text(json.dumps({"header": header, "tokens": tokens, "rows": rows}, indent=1))

    gpu_py_sequence(folder, corpus, work, args)
    in_process = lambda: timed_run(folder, corpus, work, args.device, args.dtype, False)  # noqa: E731
    measure("in-process (as gpu.py)", in_process)
    if not args.smoke:  # the smoke run keeps one in-process and one fresh run: only that both work
        measure("in-process, again, profiled", lambda: timed_run(folder, corpus, work, args.device, args.dtype, True))
        os.environ["FEATX_COPY_STREAM"] = "1"
        measure("in-process, copy stream", in_process)
        os.environ.pop("FEATX_COPY_STREAM")
    measure("fresh process", lambda: fresh_run(folder, corpus, work, args, cpu_first=False))
    if not args.smoke:
        measure("fresh, after a CPU run", lambda: fresh_run(folder, corpus, work, args, cpu_first=True))
    shutil.rmtree(work, ignore_errors=True)
    print("\n" + table(rows, tokens, header), flush=True)


def tokens_of(folder: Path, corpus: Path) -> int:
    import csv

    from featx.extraction.model.loading import load_tokenizer
    from featx.extraction.tokens.tokenize import tokenize_texts

    with open(corpus, newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    return int(tokenize_texts(load_tokenizer(str(folder)), texts, gpu.MAX_LENGTH).lengths.sum())


if __name__ == "__main__":
    main()

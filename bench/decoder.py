"""A decoder LLM through featx on one device: a seeded random Llama-shaped model built in place, bf16, each
row wrapped in a prompt template and read at its last token (``--template``, ``--pool-at last``).

    PYTHONPATH=$PWD python bench/decoder.py --device cuda --out OUT          # ~1B, 872 rows (bench/gpu.sh runs it)
    PYTHONPATH=$PWD .venv/bin/python bench/decoder.py --device cpu --rows 50 --out /tmp/decoder-cpu
                                                                            # the CPU figure: 1B bf16 with a template
    PYTHONPATH=$PWD .venv/bin/python bench/decoder.py --smoke --out /tmp/decoder-smoke   # tiny shapes, seconds

The model (``large_decoder.CONFIG``: hidden 2048, 16 blocks, GQA 32/8 heads, MLP 8192, vocabulary 32,000,
1.04e9 parameters) is built by a child process (so its construction does not count in this process's peak
memory) into ``--folder`` (default: a temporary folder), with the tiny byte-level BPE tokenizer of
``tests/support/families.py``: texts tokenise into more tokens than with a real Llama vocabulary, which
changes tokens/s little and the token count a lot. Steps: the dry run from config.json alone (predicted
peak memory and its time lower bound), a warm-up extraction of a few rows, then the timed extraction
of ``--rows`` rows (all layers, poolings mean and last plus ``at``). Reported: tokens/s over the batch loop
(steady) and over the whole call, the peak memory (GPU: ``torch.cuda.max_memory_allocated``; CPU: the
process's peak RSS), and the share of the bf16 ``torch.matmul`` rate (``gpu.bf16_matmul_rate``, measured in
the same run) that the model's FLOPs per token x tokens/s reach. Writes decoder.json and decoder-table.md
to ``--out``. Nothing is asserted; ``tests/bench/test_gpu_smoke.py`` runs ``--smoke`` so it does not rot.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

TEMPLATE = "Review: {text}\nSentiment:"
TINY = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=128,
    vocab_size=1024,
    max_position_embeddings=512,
    bos_token_id=1,
    eos_token_id=2,
)


def corpus(source: Path, rows: int, out: Path) -> Path:
    """The first ``rows`` rows of ``source`` (its text column and first label column) as a CSV."""
    with open(source, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        label = next(name for name in reader.fieldnames or [] if name not in ("text", "split"))
        records = [(row["text"], row[label]) for _, row in zip(range(rows), reader, strict=False)]
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(records)
    return out


def default_source() -> Path:
    carried = HERE / ".gpu" / "sst2.csv"  # bench/gpu.py prepare: the SST-2 test split
    return carried if carried.exists() else ROOT / "data" / "demo.csv"


def template_options(args) -> dict:
    """``template`` and ``pool_at`` where this checkout's ``featx extract`` has them."""
    from featx.extraction import ExtractConfig

    names = {field.name for field in dataclasses.fields(ExtractConfig)}
    if args.no_template or "template" not in names:
        return {}
    return {"template": args.template, "pool_at": "last"}


def peak_memory(device) -> int:
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def measure(args, folder: Path, data: Path, log) -> dict:
    """The dry run, a warm-up, the timed extraction; the row of the table."""
    import torch
    from gpu import bf16_matmul_rate

    import featx
    from featx.extraction.model.size import model_size

    device = torch.device(args.device)
    config = json.loads((folder / "config.json").read_text())
    options = dict(model=str(folder), device=args.device, dtype=args.dtype, poolings="mean,last", overwrite=True)
    options.update(template_options(args))
    guess = featx.estimate(data, output=args.work / "dry.h5", from_config=True, **options)
    log(guess.format())
    warm = corpus(data, 8, args.work / "warm.csv")
    featx.extract(warm, output=args.work / "warm.h5", progress=False, **options)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    summary = featx.extract(data, output=args.work / "run.h5", progress=False, **options)
    peak = peak_memory(device)
    size = model_size(config)
    rate = bf16_matmul_rate(device, size.hidden, size.intermediate)
    flops = size.flops_per_token(size.layers, summary.tokens / max(1, summary.rows))
    steady = summary.tokens / summary.forward_seconds
    return {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "parameters": size.parameters,
        "dtype": args.dtype,
        "template": options.get("template"),
        "rows": summary.rows,
        "tokens": summary.tokens,
        "load_s": round(summary.load_seconds, 2),
        "forward_s": round(summary.forward_seconds, 2),
        "command_s": round(summary.seconds, 2),
        "tokens_per_s": steady,
        "tokens_per_s_command": summary.tokens / summary.seconds,
        "peak_bytes": peak,
        "peak_kind": "GPU max_memory_allocated" if device.type == "cuda" else "process peak RSS",
        "predicted_peak_bytes": guess.budget.needed_bytes,
        "predicted_seconds_lower_bound": guess.seconds,
        "matmul_rate": rate,
        "matmul_share": steady * flops / rate,
    }


def table(row: dict) -> str:
    lines = [
        f"Decoder ({row['parameters']:,} parameters, {row['dtype']}) on {row['device']}; template {row['template']!r}; "
        f"bf16 torch.matmul rate {row['matmul_rate'] / 1e12:.2f} TFLOP/s",
        "",
        "| rows | tokens | tokens/s (batch loop) | tokens/s (whole call) | share of bf16 matmul rate "
        "| peak memory | predicted by the dry run | load s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {row['rows']} | {row['tokens']:,} | {row['tokens_per_s']:,.0f} | {row['tokens_per_s_command']:,.0f} "
        f"| {100 * row['matmul_share']:.1f}% | {row['peak_bytes'] / 2**30:.2f} GiB ({row['peak_kind']}) "
        f"| {row['predicted_peak_bytes'] / 2**30:.2f} GiB | {row['load_s']} |",
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", nargs="?", default="run", choices=["run", "build"])
    parser.add_argument("--folder", type=Path, default=None, help="model folder (built there if missing)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rows", type=int, default=None, help="default: 872 on a GPU, 50 on CPU, 16 with --smoke")
    parser.add_argument("--corpus", type=Path, default=None, help="CSV with a text column (default: SST-2 or demo)")
    parser.add_argument("--template", default=TEMPLATE)
    parser.add_argument("--no-template", action="store_true", help="the raw texts, as before templates")
    parser.add_argument("--smoke", action="store_true", help="a tiny model on the CPU: only that it runs")
    parser.add_argument("--out", type=Path, default=HERE / ".cache" / "decoder")
    args = parser.parse_args(argv)
    import large_decoder

    shape = TINY if args.smoke else large_decoder.CONFIG
    if args.action == "build":
        large_decoder.build(args.folder, shape, "40KB" if args.smoke else "600MB")
        return
    args.device = "cpu" if args.smoke else args.device
    args.rows = args.rows or (16 if args.smoke else 50 if args.device == "cpu" else 872)
    args.out.mkdir(parents=True, exist_ok=True)
    args.work = Path(tempfile.mkdtemp(prefix="featx-decoder-"))
    folder = args.folder or args.work / "model"
    started = time.perf_counter()
    if args.smoke:  # tiny: built here (its memory is nothing)
        large_decoder.build(folder, shape, "40KB")
    else:  # in a child process, so the model's construction does not count in this process's peak memory
        subprocess.run([sys.executable, __file__, "build", "--folder", str(folder)], check=True)
    log = lambda line="": print(line, flush=True)  # noqa: E731
    log(f"model folder {folder} ready in {time.perf_counter() - started:.1f} s")
    data = corpus(args.corpus or default_source(), args.rows, args.work / "corpus.csv")
    row = measure(args, folder, data, log)
    text = table(row)
    log("\n" + text)
    (args.out / "decoder.json").write_text(json.dumps(row, indent=1))
    (args.out / "decoder-table.md").write_text(text + "\n")


if __name__ == "__main__":
    main()

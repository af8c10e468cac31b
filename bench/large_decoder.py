"""A ~1B-parameter decoder (random Llama weights, bf16, sharded safetensors) on one CPU machine:
build it once, estimate the extraction (``--dry-run``), then extract a small corpus and report.

    PYTHONPATH=$PWD .venv/bin/python bench/large_decoder.py --folder /tmp/llama-1b --rows 50

The weights are random (no download here), which changes nothing about memory or time. The tokenizer is
the tiny byte-level BPE of ``tests/support/families.py`` (Llama conventions: BOS added, no pad token, left
padding side), so texts tokenise into more tokens than with a real Llama vocabulary.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

# hidden 2048, 16 layers, GQA 32/8 heads, MLP 8192, vocabulary 32000: 1.04e9 parameters (2.1 GB in bf16).
CONFIG = dict(
    hidden_size=2048,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    intermediate_size=8192,
    vocab_size=32000,
    max_position_embeddings=2048,
    bos_token_id=1,
    eos_token_id=2,
)


def build(folder: Path, config: dict | None = None, shard: str = "600MB") -> None:
    """A seeded random Llama of ``config`` (default ``CONFIG``) in bf16 with the tiny BPE tokenizer, saved in shards."""
    import torch
    from support.families import BY_NAME, tokenizer_object
    from transformers import LlamaConfig, LlamaModel, PreTrainedTokenizerFast

    if (folder / "model.safetensors.index.json").exists():
        return
    family = BY_NAME["llama"]
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_object(family),
        model_max_length=2048,
        padding_side="left",
        model_input_names=["input_ids", "attention_mask"],
        **family.tokens,
    )
    tokenizer.save_pretrained(str(folder))
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    model = LlamaModel(LlamaConfig(**(config or CONFIG), dtype="bfloat16")).eval()
    torch.set_default_dtype(torch.float32)
    print(f"parameters: {sum(p.numel() for p in model.parameters()):,}")
    model.save_pretrained(str(folder), safe_serialization=True, max_shard_size=shard)


def corpus(rows: int, path: Path) -> Path:
    with open(ROOT / "data" / "demo.csv", newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        body = [row for _, row in zip(range(rows), reader, strict=False)]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(body)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", type=Path, default=Path("/tmp/featx-llama-1b"))
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()
    import featx
    from featx.extraction.dryrun.estimation import estimate

    started = time.perf_counter()
    build(args.folder)
    print(f"model folder ready in {time.perf_counter() - started:.1f} s")
    data = corpus(args.rows, args.folder / f"corpus-{args.rows}.csv")
    options = dict(
        model=str(args.folder),
        dtype=args.dtype,
        device="cpu",
        poolings="mean,last",
        output=args.folder / f"features-{args.rows}.h5",
        overwrite=True,
        progress=False,
    )
    print(estimate(data, **options).format())
    summary = featx.extract(data, **options)
    print(summary.line())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "load_s": round(summary.load_seconds, 1),
                "tokenize_s": round(summary.tokenize_seconds, 2),
                "forward_s": round(summary.forward_seconds, 1),
                "tokens": summary.tokens,
                "peak_rss_gb": round(peak / 2**30, 2),
            }
        )
    )


if __name__ == "__main__":
    main()

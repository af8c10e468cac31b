"""CPU time per token of featx's native BERT forward pass (all hidden states), under load: A/B and profile.

    FEATX_BENCH_DATA=/work/shared/data PYTHONPATH=$PWD python bench/native_cpu.py ab --model bert-base-random \
        --corpus sst2 --dtype float32 --rounds 4
    ... python bench/native_cpu.py profile --model bert-base-random --corpus agnews --dtype bfloat16 --rows 150
    ... python bench/native_cpu.py openvino --model bert-base-random --corpus sst2 --dtype float32 --rounds 3

On a machine shared with other work wall-clock rates mislead, so everything here runs on ONE thread
(``torch.set_num_threads(1)``; OpenVINO ``INFERENCE_NUM_THREADS=1``) and reports the process's CPU time
(``time.process_time``) per real token over a fixed set of featx-like batches: the first ``--rows`` rows of
the corpus, tokenised by featx's native tokenizer, sorted by length, cut at ``--max-tokens`` padded tokens.
``--threads 2`` for a run when the machine is quiet (then CPU time counts both threads).

``ab``:       the plain native model ("before": ``onednn.prepack_linears`` only, featx's default) against the
              same weights with ``native.fuse.fuse_bert`` applied as well ("after", ``--fused`` picks which
              fusions; what ``FEATX_FUSE=1`` does), interleaved round by round; each round runs every batch
              once, then each layer's pooling (cls, mean, max) as featx does it.
``profile``:  ``torch.profiler`` self-CPU shares by op of one pass over the batches (``--fused`` to profile
              the fused model).
``openvino``: OpenVINO with every hidden state as a graph output (exported once under bench/.cache/), the
              same batches and poolings in numpy, interleaved with featx's model (default path; ``--fused``).
``whole``:    ``featx.extraction.extract`` in process on the same rows against the forward + pooling alone.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import extract as bench_extract  # noqa: E402  (bench/extract.py: cached corpora and the bert-base-random folder)

from featx.extraction.fast import (  # noqa: E402
    bert,
    fuse,
    onednn,  # noqa: E402
)
from featx.extraction.fast.tokenizer import load_native_tokenizer  # noqa: E402

MAX_LENGTH = 256


def batches(folder: Path, corpus: str, rows: int, max_tokens: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Length-sorted padded batches of the corpus's first ``rows`` texts, <= ``max_tokens`` padded tokens each."""
    path = bench_extract.corpus_csv(corpus, bench_extract.ROWS[corpus])
    with open(path, encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)][:rows]
    tokenizer = load_native_tokenizer(folder)
    encoded = [tokenizer(text)["input_ids"] for text in texts]
    encoded = [ids if len(ids) <= MAX_LENGTH else [*ids[: MAX_LENGTH - 1], ids[-1]] for ids in encoded]
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
    groups: list[list[int]] = [[]]
    for index in order:
        if groups[-1] and len(encoded[groups[-1][0]]) * (len(groups[-1]) + 1) > max_tokens:
            groups.append([])
        groups[-1].append(index)
    out = []
    for group in groups:
        width = len(encoded[group[0]])
        ids = torch.zeros(len(group), width, dtype=torch.long)
        mask = torch.zeros(len(group), width, dtype=torch.long)
        for row, index in enumerate(group):
            ids[row, : len(encoded[index])] = torch.tensor(encoded[index])
            mask[row, : len(encoded[index])] = 1
        out.append((ids, mask))
    return out


def load(folder: Path, dtype: torch.dtype, fused: str = "both") -> torch.nn.Module:
    """The native model, prepacked, with ``fused`` fusions: "none", "qkv", "residual" or "both"."""
    model = bert.load_bert(folder, folder / "model.safetensors", dtype)
    onednn.prepack_linears(model, torch.device("cpu"), dtype)
    if fused != "none":
        count = fuse.fuse_bert(model, qkv=fused in ("qkv", "both"), residual=fused in ("residual", "both"))
        print(f"{fused}: fused {count} blocks")
    return model


def pool(states, mask: torch.Tensor) -> None:
    """featx's cls, mean and max of every layer (the work, not the storing)."""
    weights = mask[..., None].to(states[0].dtype)
    for layer in states:
        layer[:, 0].float()
        ((layer * weights).sum(1) / weights.sum(1)).float()
        layer.masked_fill(weights == 0, float("-inf")).amax(1).float()


def torch_pass(model, data) -> float:
    start = time.process_time()
    with torch.inference_mode():
        for ids, mask in data:
            out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            pool(out.hidden_states, mask)
    return time.process_time() - start


def ab(args, folder, dtype, data, tokens) -> None:
    models = {"before": load(folder, dtype, "none"), "after": load(folder, dtype, args.fused)}
    with torch.inference_mode():
        for ids, mask in data[:2]:
            got = models["after"](input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
            want = models["before"](input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
            real = mask.bool()
            diff = max(float((a[real].float() - b[real].float()).abs().max()) for a, b in zip(got, want, strict=True))
            print(f"largest difference after vs before (real tokens, all layers): {diff:.2e}")
    for model in models.values():
        torch_pass(model, data[:1])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in models}
    for round_ in range(args.rounds):
        for name in models if round_ % 2 == 0 else reversed(list(models)):
            times[name].append(torch_pass(models[name], data))
        print(f"round {round_}: " + ", ".join(f"{n} {1e6 * t[-1] / tokens:,.0f}" for n, t in times.items()), flush=True)
    report(times, tokens, args)


def report(times: dict[str, list[float]], tokens: int, args) -> None:
    base = None
    for name, values in times.items():
        per_token = 1e6 * float(np.median(values)) / tokens
        base = base or per_token
        print(
            f"{args.model} {args.corpus} {args.dtype} threads={args.threads}: {name}: {per_token:,.0f} us CPU/token "
            f"(median of {len(values)}; {base / per_token:.3f}x first) load {os.getloadavg()[0]:.1f}"
        )


def profile(args, folder, dtype, data, tokens) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    model = load(folder, dtype, args.fused)
    torch_pass(model, data[:1])
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        torch_pass(model, data)
    events = prof.key_averages()
    total = sum(event.self_cpu_time_total for event in events)
    print(f"{args.model} {args.corpus} {args.dtype} (fused: {args.fused}): {tokens} tokens")
    for event in sorted(events, key=lambda e: -e.self_cpu_time_total)[:18]:
        share = 100 * event.self_cpu_time_total / total
        print(f"  {share:5.1f}%  {event.count:6d} calls  {event.key}")


def whole(args, folder, dtype, data, tokens) -> None:
    """``extract`` in process on the same rows (all layers x featx's default poolings into HDF5): CPU time
    per token of the whole call and of its batch loop's wall time, to set against the forward pass alone."""
    import tempfile

    from featx.extraction import ExtractConfig, extract

    path = bench_extract.corpus_csv(args.corpus, bench_extract.ROWS[args.corpus])
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[: args.rows]
    model = load(folder, dtype, args.fused)
    with tempfile.TemporaryDirectory() as work:
        corpus = Path(work) / "corpus.csv"
        with open(corpus, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=["text", "label"])
            writer.writeheader()
            writer.writerows(rows)
        times: dict[str, list[float]] = {"forward+pool": [], "extract": []}
        for round_ in range(args.rounds):
            times["forward+pool"].append(torch_pass(model, data))
            start = time.process_time()
            summary = extract(
                ExtractConfig(
                    corpus=str(corpus),
                    output=str(Path(work) / "out.h5"),
                    model=str(folder),
                    device="cpu",
                    dtype=args.dtype,
                    max_length=MAX_LENGTH,
                    overwrite=True,
                    progress=False,
                )
            )
            times["extract"].append(time.process_time() - start)
            print(f"round {round_}: extract {summary.tokens} tokens, forward_seconds {summary.forward_seconds:.2f}")
    report(times, tokens, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["ab", "profile", "openvino", "whole"])
    parser.add_argument("--model", default="bert-base-random")
    parser.add_argument("--corpus", default="sst2")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--max-tokens", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--fused", default=None, help="none, qkv, residual or both (fuse.fuse_bert); default: ab both, else none"
    )
    parser.add_argument("--ov-precision", default=None, help="openvino: f32 or bf16 (default: from --dtype)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    folder = bench_extract.model_folder(args.model)
    dtype = getattr(torch, args.dtype)
    data = batches(folder, args.corpus, args.rows, args.max_tokens)
    tokens = int(sum(int(mask.sum()) for _, mask in data))
    print(f"{len(data)} batches, {tokens} tokens, mean length {tokens / args.rows:.1f}")
    args.fused = args.fused or ("both" if args.mode == "ab" else "none")
    args.ov_precision = args.ov_precision or ("bf16" if dtype == torch.bfloat16 else "f32")
    if args.mode == "openvino":
        from openvino_steady import compare

        compare(args, folder, data, tokens, lambda: load(folder, dtype, args.fused), torch_pass, report)
    else:
        {"ab": ab, "profile": profile, "whole": whole}[args.mode](args, folder, dtype, data, tokens)


if __name__ == "__main__":
    main()

"""Packing (``featx/extraction/fast/packing.py``) on and off in one process: featx's batch loop with each batch
run padded (``FEATX_PACK=0``) and packed in turn, back to back, so that the two see the same machine.

    PYTHONPATH=$PWD python bench/packing.py bench/.cache/sst2-400.csv bench/.cache/bert-base-random --passes 3

The batches are those ``featx extract`` plans (``--max-tokens`` padded tokens, length-sorted); each pass runs
every batch both ways through the same ``Runner`` (forward pass and pooling, no writing), and then the model's
forward pass alone both ways. The first pass is a warm-up; tokens/s counts real tokens over the other passes.
Besides the rates it prints the share of padded positions in the batches, and how many batches were packed
(those with at least ``packing.PACK_FROM`` of their positions padded).
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("model", nargs="?", default="default")
    parser.add_argument("--passes", type=int, default=3, help="passes over the batches, the first a warm-up")
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args(argv)

    import torch

    from featx.extraction import ExtractConfig
    from featx.extraction.fast import packing
    from featx.extraction.forward.runner import Runner
    from featx.extraction.inputs.corpus import read_corpus
    from featx.extraction.model.loading import load_model
    from featx.extraction.run.resolve import resolve_plan
    from featx.extraction.tokens.batching import collate, plan_batches
    from featx.extraction.tokens.tokenize import tokenize_texts

    loaded = load_model(args.model, "cpu", args.dtype, max_length=256, native=True)
    read = read_corpus(args.corpus, "text", None, False, "utf-8")
    tokens = tokenize_texts(loaded.tokenizer, read.texts, loaded.max_length)
    config = ExtractConfig(
        corpus=args.corpus, model=args.model, dtype=args.dtype, max_tokens=args.max_tokens, max_length=256,
        progress=False,
    )  # fmt: skip
    runner = Runner(loaded, resolve_plan(config, read.sha256, loaded))
    batches = [collate(tokens, rows, 0) for rows in plan_batches(tokens.lengths, args.max_tokens, 256)]
    padded = sum(mask.numel() for _, mask in batches)
    real = int(tokens.lengths.sum())
    packed = sum(mask.numel() - int(mask.count_nonzero()) >= packing.PACK_FROM * mask.numel() for _, mask in batches)
    seconds = {("loop", "0"): 0.0, ("loop", "1"): 0.0, ("forward", "0"): 0.0, ("forward", "1"): 0.0}
    for index in range(args.passes):
        for ids, mask in batches:
            for setting in ("0", "1"):
                os.environ[packing.ENV] = setting
                started = time.perf_counter()
                for value in runner(ids, mask)[0].values():
                    value.numpy()
                looped = time.perf_counter() - started
                started = time.perf_counter()
                with torch.inference_mode():
                    loaded.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
                if index:
                    seconds["loop", setting] += looped
                    seconds["forward", setting] += time.perf_counter() - started
    os.environ.pop(packing.ENV, None)
    counted = real * (args.passes - 1)
    rates = {f"{what} {'packed' if on == '1' else 'padded'}": counted / s for (what, on), s in seconds.items()}
    print(f"{len(batches)} batches, {real:,} tokens, {padded - real:,} of {padded:,} positions padded, {packed} packed")
    for name, rate in rates.items():
        print(f"{name}: {rate:,.0f} tokens/s")
    print(f"packed faster by: loop {rates['loop packed'] / rates['loop padded']:.3f}x, "
          f"forward {rates['forward packed'] / rates['forward padded']:.3f}x")  # fmt: skip
    print(json.dumps({"load": os.getloadavg(), **rates}))


if __name__ == "__main__":
    main()

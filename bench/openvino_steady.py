"""Would an OpenVINO execution path beat featx's PyTorch/oneDNN batch loop at steady state? (a prototype)

    PYTHONPATH=$PWD python bench/openvino_steady.py bench/.cache/sst2-872.csv 3      # corpus, rounds

Outside featx: the packaged MiniLM exported once to ONNX with every hidden state as a graph output
(bench/.cache/openvino-steady/all_hidden.onnx), compiled by OpenVINO (f32 and bf16 inference precision,
LATENCY hint, the torch thread count), run on featx-like batches (length-sorted, <= 8192 padded tokens),
with cls/mean/max pooling of all layers in numpy. featx's figure is ``ExtractSummary.forward_seconds``
(all layers x 5 poolings, HDF5 writing overlapped) of an in-process ``extract`` on the same corpus.
Alternating rounds, medians; real tokens per second.

``export_all_hidden``, ``compile_model`` and ``ov_pass`` serve ``bench/native_cpu.py openvino`` as well (any
BERT folder, e.g. bert-base-random; CPU time per token on one thread).
"""

import csv
import os
import sys
import time

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import openvino as ov
from transformers import AutoModel, AutoTokenizer

CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache", "openvino-steady")


def export_all_hidden(folder, name: str = "all_hidden") -> str:
    """The model of ``folder`` as ONNX with every hidden state a graph output (exported once, cached)."""
    os.makedirs(CACHE, exist_ok=True)
    onnx_path = os.path.join(CACHE, f"{name}.onnx")
    if os.path.exists(onnx_path):
        return onnx_path
    m = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    n_states = m.config.num_hidden_layers + 1

    class W(torch.nn.Module):
        def __init__(s, m):
            super().__init__()
            s.m = m

        def forward(s, input_ids, attention_mask, token_type_ids):
            return tuple(
                s.m(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                    output_hidden_states=True,
                ).hidden_states
            )

    ids = torch.ones(2, 8, dtype=torch.long)
    names = [f"h{i}" for i in range(n_states)]
    axes = {n: {0: "b", 1: "t"} for n in ["input_ids", "attention_mask", "token_type_ids", *names]}
    torch.onnx.export(
        W(m),
        (ids, ids, torch.zeros_like(ids)),
        onnx_path,
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=names,
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    return onnx_path


def compile_model(onnx_path: str, precision: str, threads: int):
    """An infer request of the model compiled for the CPU (``precision`` f32 or bf16, LATENCY hint)."""
    compiled = ov.Core().compile_model(
        onnx_path,
        "CPU",
        {"INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads},
    )
    return compiled.create_infer_request()


def ov_pass(req, padded, n_states: int) -> None:
    """Every batch through OpenVINO, then cls/mean/max pooling of every hidden state in numpy."""
    for ids, mask in padded:
        out = req.infer({"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        states = np.stack([out[k] for k in range(n_states)])  # (L, B, T, H)
        m = mask[None, :, :, None].astype(np.float32)
        _mean = (states * m).sum(2) / m.sum(2)  # the poolings' work, timed and dropped (featx does 5)
        _max = np.where(m > 0, states, -np.inf).max(2)
        _cls = states[:, :, 0]


def compare(args, folder, data, tokens, load_featx, torch_pass, report) -> None:
    """``bench/native_cpu.py openvino``: CPU time per token of OpenVINO and featx's model, interleaved."""
    import json

    n_states = json.loads((folder / "config.json").read_text())["num_hidden_layers"] + 1
    req = compile_model(export_all_hidden(folder, f"all_hidden-{args.model}"), args.ov_precision, args.threads)
    padded = [(ids.numpy(), mask.numpy()) for ids, mask in data]
    model = load_featx()
    ov_pass(req, padded[:1], n_states)
    torch_pass(model, data[:1])
    times: dict[str, list[float]] = {"featx": [], "openvino": []}
    for round_ in range(args.rounds):
        for name in ("featx", "openvino") if round_ % 2 == 0 else ("openvino", "featx"):
            start = time.process_time()
            torch_pass(model, data) if name == "featx" else ov_pass(req, padded, n_states)
            times[name].append(time.process_time() - start)
        print(f"round {round_}: " + ", ".join(f"{n} {1e6 * t[-1] / tokens:,.0f}" for n, t in times.items()), flush=True)
    report(times, tokens, args)


def main() -> None:
    from featx.extraction import ExtractConfig, extract
    from featx.extraction.model.files import default_model_path

    folder = default_model_path()
    corpus = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with open(corpus, encoding="utf-8") as handle:
        texts = [r["text"] for r in csv.DictReader(handle)]
    tok = AutoTokenizer.from_pretrained(str(folder))
    onnx_path = export_all_hidden(folder)
    threads = torch.get_num_threads()
    enc = tok(texts, truncation=True, max_length=256)
    padded = _batches(enc)
    tokens = int(sum(int(mask.sum()) for _, mask in padded))

    def ov_run(precision):
        req = compile_model(onnx_path, precision, threads)
        ov_pass(req, padded[:1], 7)
        start = time.perf_counter()
        ov_pass(req, padded, 7)
        return time.perf_counter() - start

    def featx_run(dtype):
        s = extract(
            ExtractConfig(
                corpus=corpus,
                output=os.path.join(CACHE, "steady.h5"),
                device="cpu",
                dtype=dtype,
                max_length=256,
                overwrite=True,
                progress=False,
            )
        )
        assert s.tokens == tokens, (s.tokens, tokens)
        return s.forward_seconds

    res = {}
    for r in range(rounds):
        for name, fn in (
            ("featx fp32 (all layers x 5 poolings, HDF5)", lambda: featx_run("float32")),
            ("openvino f32 (all layers, mean+max+cls in numpy)", lambda: ov_run("f32")),
            ("featx bf16", lambda: featx_run("bfloat16")),
            ("openvino bf16", lambda: ov_run("bf16")),
        ):
            sec = fn()
            res.setdefault(name, []).append(tokens / sec)
            print(f"round {r} {name}: {tokens / sec:,.0f} tokens/s (load {os.getloadavg()[0]:.1f})", flush=True)
    for name, v in res.items():
        print(f"median {name}: {np.median(v):,.0f} tokens/s")


def _batches(enc) -> list:
    """featx-like batches: length-sorted, padded tokens per batch <= 8192."""
    lengths = np.array([len(x) for x in enc["input_ids"]])
    order = np.argsort(-lengths, kind="stable")
    batches, cur, cur_max = [], [], 0
    for i in order:
        L = lengths[i]
        if cur and max(cur_max, L) * (len(cur) + 1) > 8192:
            batches.append(cur)
            cur, cur_max = [], 0
        cur.append(i)
        cur_max = max(cur_max, L)
    batches.append(cur)
    padded = []
    for b in batches:
        T = max(lengths[i] for i in b)
        ids = np.zeros((len(b), T), np.int64)
        mask = np.zeros((len(b), T), np.int64)
        for r, i in enumerate(b):
            ids[r, : lengths[i]] = enc["input_ids"][i]
            mask[r, : lengths[i]] = 1
        padded.append((ids, mask))
    return padded


if __name__ == "__main__":
    main()

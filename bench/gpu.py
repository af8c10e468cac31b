"""featx against sentence-transformers on a GPU: tokens/s, share of the bf16 matmul rate, GPU idle time, parity.

    python bench/gpu.py prepare                       # here (needs the packaged MiniLM and ../shared/data)
    python bench/gpu.py run --device cuda              # on the GPU machine (bench/gpu.sh does both steps' glue)
    python bench/gpu.py run --device cpu --quick       # the same code on CPU (needs prepare)
    python bench/gpu.py run --smoke                    # tiny models built in place, CPU, seconds (tests run it)

``prepare`` writes bench/.gpu/ (carried to the GPU machine, which has no internet and no featx extras): the
packaged MiniLM with its weights stored in bfloat16 (43 MB: the 87 MB fp32 file does not fit the 64 MiB
that travels; every run here, the CPU fp32 reference included, uses these same weights, so parity is
exact in meaning), its tokenizer files, the SST-2 test (872 rows) and AG News (first 2,000 test rows)
corpora, and sst2big (the first 20,000 SST-2 train rows) and agnewsbig (the 7,600 AG News test rows).
``run`` builds the bert-base-sized random model (BertConfig defaults, seed 0, MiniLM's vocabulary, as
bench/extract.py) and, for each model x corpus x dtype (float16, bfloat16):

  featx           ``featx.extract`` on the device, all layers x 5 poolings to HDF5: steady = tokens over the
                  batch loop's seconds (``forward_seconds``), cmd = tokens over the whole call (load included)
  featx compile   the same with the network compiled (``module.compile(dynamic=True)``) after featx loads it
  st (B)          sentence-transformers ``encode`` (batch B, last layer, mean pooling), the model in the dtype
  st compile (B)  the same with the transformer compiled

Columns: real tokens/s; the share of the bf16 ``torch.matmul`` rate measured in the same run (8192^3 on
the GPU, the model's linear shapes on CPU) that the model FLOPs/token x tokens/s reach; the GPU's idle
share during featx's batch loop (torch.profiler: 1 - union of kernel times / span from first to last
kernel; "n/a" on CPU); parity: featx's largest |difference| over all layers and poolings relative to the
largest |value| of the CPU fp32 run, and for sentence-transformers the smallest cosine to featx's CPU fp32
last-layer mean. Writes gpu-table.md and gpu.json to --out.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ASSETS = HERE / ".gpu"
MAX_LENGTH = 256
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def prepare(assets: Path) -> None:
    """The carried folder: MiniLM in bf16 with its tokenizer, and the two corpora."""
    import torch
    from safetensors.torch import load_file, save_file

    sys.path.insert(0, str(HERE))
    import extract as bench_extract

    from featx.extraction.model.files import default_model_path

    source = default_model_path()
    minilm = assets / "minilm-bf16"
    minilm.mkdir(parents=True, exist_ok=True)
    for file in (*TOKENIZER_FILES, "config.json"):
        shutil.copy(source / file, minilm / file)
    weights = {
        name: tensor.to(torch.bfloat16).contiguous() for name, tensor in load_file(source / "model.safetensors").items()
    }
    save_file(weights, str(minilm / "model.safetensors"), metadata={"format": "pt"})
    for name, rows in (("sst2", 872), ("agnews", 2000)):
        shutil.copy(bench_extract.corpus_csv(name, rows), assets / f"{name}.csv")
    # the larger corpora of the host-bound runs (bench/gpu_host.py, bench/gpu_loop.py, bench/probe_gpu.py): the
    # first 20,000 SST-2 train rows (short texts) and the whole AG News test split (7,600 rows)
    for name, split, rows in (("sst2", "train", 20000), ("agnews", "test", 7600)):
        with open(bench_extract.DATA / name / "data.csv", newline="", encoding="utf-8") as handle:
            records = [(r["text"], r["label"]) for r in csv.DictReader(handle) if r["split"] == split][:rows]
        with open(assets / f"{name}big.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows(records)
    (assets / "ud").mkdir(exist_ok=True)  # the word-probe predict run (bench/predict_gpu.py): 5.8 MB
    for part in ("dev", "test"):
        shutil.copy(bench_extract.DATA / "ud_gum" / f"en_gum-ud-{part}.conllu", assets / "ud")
    print(f"prepared {assets} ({sum(f.stat().st_size for f in assets.rglob('*') if f.is_file()) / 1e6:.1f} MB)")


def smoke_assets(work: Path) -> Path:
    """``--smoke``: a tiny random BERT in MiniLM's place, 32 rows of data/demo.csv as both corpora and as a
    two-file treebank, built in place (no ``prepare``, no ../shared): only that every step runs, in seconds,
    on the CPU."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from support.tiny import build_tiny_bert

    assets = work / "smoke-assets"
    build_tiny_bert(assets / "minilm-bf16", max_positions=MAX_LENGTH)
    with open(HERE.parent / "data" / "demo.csv", newline="", encoding="utf-8") as handle:
        records = [(row["text"], row["sentiment"]) for _, row in zip(range(32), csv.DictReader(handle), strict=False)]
    for name in ("sst2", "agnews"):
        with open(assets / f"{name}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows(records)
    (assets / "ud").mkdir()
    for part, texts in (("dev", records[:24]), ("test", records[24:])):  # a made-up upos: long or short words
        sentences = []
        for number, (text, _) in enumerate(texts):
            words = text.split()
            lines = [f"{i}\t{w}\t_\t{'LONG' if len(w) > 4 else 'SHORT'}" + "\t_" * 6 for i, w in enumerate(words, 1)]
            sentences.append(f"# sent_id = {part}-{number}\n" + "\n".join(lines) + "\n")
        (assets / "ud" / f"en_gum-ud-{part}.conllu").write_text("\n".join(sentences), encoding="utf-8")
    return assets


BERT_BASE: dict = {}  # BertConfig defaults: bert-base shapes; --smoke makes it tiny
SMOKE_BERT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)


def bert_base_random(assets: Path, work: Path) -> Path:
    """Built where the run works (never in the carried folder, which must stay under 64 MiB)."""
    folder = work / "bert-base-random"
    if not (folder / "model.safetensors").exists():
        import torch
        from transformers import BertConfig, BertModel

        folder.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(0)
        BertModel(BertConfig(**BERT_BASE)).save_pretrained(str(folder), safe_serialization=True)
        for file in TOKENIZER_FILES:
            if (assets / "minilm-bf16" / file).exists():
                shutil.copy(assets / "minilm-bf16" / file, folder / file)
    return folder


def flops_per_token(config, mean_length: float) -> float:
    h, i, n = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return 2 * n * (4 * h * h + 2 * h * i) + n * 4 * mean_length * h


def bf16_matmul_rate(device, hidden: int, intermediate: int, seconds: float = 1.0) -> float:
    """FLOP/s of a bf16 torch.matmul loop: 8192^3 on a GPU, the model's linear shapes (4096 rows) on CPU."""
    import torch

    if device.type == "cuda":
        shapes = [(8192, 8192, 8192)]
    else:
        shapes = [(4096, hidden, 3 * hidden), (4096, hidden, intermediate), (4096, intermediate, hidden)]
    flops, spent = 0.0, 0.0
    for m, k, n in shapes:
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=device, dtype=torch.bfloat16)
        for _ in range(3):
            torch.matmul(a, b)
        synchronize(device)
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / len(shapes):
            for _ in range(10 if device.type == "cuda" else 1):
                torch.matmul(a, b)
                count += 1
            synchronize(device)
        spent += time.perf_counter() - start
        flops += 2.0 * m * k * n * count
    return flops / spent


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Compiled:
    """While active, featx's loaded network is compiled right after featx loads it.

    featx's CPU path swaps linears for oneDNN prepacked ones, which dynamo cannot trace: off while compiling.
    """

    def __enter__(self):
        from featx.extraction.run import orchestrate

        self.onednn = os.environ.get("FEATX_ONEDNN")
        os.environ["FEATX_ONEDNN"] = "0"

        self.module, self.original = orchestrate, orchestrate.load_configured

        def load_and_compile(*args, **kwargs):
            loaded = self.original(*args, **kwargs)
            loaded.model.compile(dynamic=True)
            return loaded

        orchestrate.load_configured = load_and_compile
        return self

    def __exit__(self, *exc):
        self.module.load_configured = self.original
        if self.onednn is None:
            os.environ.pop("FEATX_ONEDNN", None)
        else:
            os.environ["FEATX_ONEDNN"] = self.onednn


def run_featx(folder: Path, corpus: Path, output: Path, device: str, dtype: str, compile_: bool = False):
    from featx.extraction import ExtractConfig, extract

    config = ExtractConfig(
        corpus=corpus,
        output=output,
        model=str(folder),
        device=device,
        dtype=dtype,
        max_length=MAX_LENGTH,
        overwrite=True,
        progress=False,
    )
    if compile_:
        with Compiled():
            return extract(config)
    return extract(config)


def idle_share(folder: Path, corpus: Path, output: Path, device: str, dtype: str) -> float | None:
    """1 - (union of GPU kernel intervals) / (first kernel start to last kernel end), over a featx run."""
    if device == "cpu":
        return None
    from torch.profiler import ProfilerActivity, profile

    # CUDA activity only: tracing every CPU op costs the host time per op, and in a host-bound loop that idles
    # the GPU itself (the figures of 27 Nov 2026 were taken with CPU tracing on; bench/gpu_loop.py's are not)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_featx(folder, corpus, output, device, dtype)
    busy, first_to_last = gpu_busy_time(prof)
    return None if first_to_last == 0 else 1.0 - busy / first_to_last


def gpu_busy_time(prof) -> tuple[float, float]:
    """The union of a profile's CUDA kernel and copy intervals, and the time from the first to the last of them
    (microseconds; (0, 0) when it holds none)."""
    from torch.profiler import DeviceType

    spans = sorted(
        (e.time_range.start, e.time_range.end)
        for e in prof.events()
        if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start
    )
    if not spans:
        return 0.0, 0.0
    busy, (current_start, current_end) = 0.0, spans[0]
    for start, end in spans[1:]:
        if start > current_end:
            busy += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    busy += current_end - current_start
    return busy, spans[-1][1] - spans[0][0]


def common_arguments(parser, dtype_help: str | None = None) -> None:
    """The options every GPU bench step takes: its assets, output folder, device and dtype."""
    parser.add_argument("--assets", type=Path, default=ASSETS)
    parser.add_argument("--out", type=Path, default=ASSETS / "out")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", help=dtype_help)


def read_all(path: Path) -> np.ndarray:
    import featx

    with featx.open(path) as features:
        layers, poolings = features.site_layers(), features.site_poolings()
        return np.stack([features.features(p, layer) for p in poolings for layer in layers])


def last_mean(path: Path) -> np.ndarray:
    import featx

    with featx.open(path) as features:
        return features.features("mean", features.site_layers()[-1])


def run_st(folder: Path, texts: list[str], device: str, dtype: str, batch: int, compile_: bool = False):
    import torch
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(folder), max_seq_length=MAX_LENGTH)
    model = SentenceTransformer(
        modules=[word, models.Pooling(word.get_word_embedding_dimension(), "mean")], device=device
    )
    model.to(getattr(torch, dtype))
    if compile_:
        word.model.compile(dynamic=True)
    model.encode(texts[:batch], batch_size=batch)  # warm-up (and compilation)
    synchronize(torch.device(device))
    start = time.perf_counter()
    embeddings = model.encode(texts, batch_size=batch, convert_to_numpy=True, show_progress_bar=False)
    seconds = time.perf_counter() - start
    return seconds, embeddings.astype(np.float32)


def cosine_min(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


def python_command() -> list[str]:
    """How a step starts the child Python whose run it times (``-c CODE ...`` or ``-m featx ...``): a fresh
    ``sys.executable``, or the command in ``FEATX_BENCH_PYTHON``, which tests/bench/test_gpu_smoke.py sets to the
    test run's fork server (tests/support/zygote.py: the same interpreter with this checkout's featx already
    imported, so that the smoke's ten children do not each import torch again; timings mean nothing there)."""
    return shlex.split(os.environ.get("FEATX_BENCH_PYTHON", "")) or [sys.executable]


def subset(corpus: Path, rows: int, out: Path) -> Path:
    with open(corpus, newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))[:rows]
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    return out


def bench_case(model_name, folder, corpus_name, corpus, args, rate, work, log):
    """Every method on one model x corpus; rows of the table."""
    import torch
    from transformers import AutoConfig

    from featx.extraction.model.loading import load_tokenizer
    from featx.extraction.tokens.tokenize import tokenize_texts

    with open(corpus, newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    lengths = tokenize_texts(load_tokenizer(str(folder)), texts, MAX_LENGTH).lengths
    tokens, flops = int(lengths.sum()), flops_per_token(AutoConfig.from_pretrained(str(folder)), float(lengths.mean()))
    reference_corpus = subset(corpus, args.parity_rows, work / f"{corpus_name}-parity.csv")
    run_featx(folder, reference_corpus, work / "cpu-fp32.h5", "cpu", "float32")
    reference_all, reference_mean = read_all(work / "cpu-fp32.h5"), last_mean(work / "cpu-fp32.h5")
    scale = float(np.abs(reference_all).max())
    rows = []

    def add(method, dtype, seconds, parity, idle=None):
        rate_tokens = tokens / seconds
        rows.append(
            {
                "model": model_name,
                "corpus": corpus_name,
                "method": method,
                "dtype": dtype,
                "tokens_per_s": rate_tokens,
                "matmul_share": rate_tokens * flops / rate,
                "idle": idle,
                "parity": parity,
            }
        )
        log(f"  {method} {dtype}: {rate_tokens:,.0f} tokens/s")

    for dtype in args.dtypes:
        for compile_ in args.compile:
            label = "featx compile" if compile_ else "featx"
            try:
                # the parity run first: it is also the warm-up (and compilation) before the timed run
                run_featx(folder, reference_corpus, work / "parity.h5", args.device, dtype, compile_)
                summary = run_featx(folder, corpus, work / "run.h5", args.device, dtype, compile_)
                parity = float(np.abs(read_all(work / "parity.h5") - reference_all).max() / scale)
                idle = None if compile_ else idle_share(folder, corpus, work / "idle.h5", args.device, dtype)
                add(f"{label} steady", dtype, summary.forward_seconds, f"max rel diff {parity:.1e}", idle)
                add(f"{label} cmd", dtype, summary.seconds, "")
            except Exception as err:  # a compile failure is a result, not a crash
                log(f"  {label} {dtype} failed: {type(err).__name__}: {err}")
            for batch in args.st_batch:
                name = f"st{' compile' if compile_ else ''} ({batch})"
                try:
                    seconds, _ = run_st(folder, texts, args.device, dtype, batch, compile_)
                    _, check = run_st(folder, texts[: args.parity_rows], args.device, dtype, batch)
                    add(name, dtype, seconds, f"min cosine {cosine_min(check, reference_mean):.5f}")
                except Exception as err:
                    log(f"  {name} {dtype} failed: {type(err).__name__}: {err}")
            if compile_:
                torch._dynamo.reset()
    return rows, tokens, flops


def table(rows: list[dict]) -> str:
    rates = {row["model"]: row["matmul_rate"] for row in rows}
    lines = [
        "bf16 torch.matmul rate measured: " + ", ".join(f"{m} {r / 1e12:.2f} TFLOP/s" for m, r in rates.items()),
        "",
        "| model | corpus | method | dtype | tokens/s | share of bf16 matmul rate | GPU idle | parity vs CPU fp32 |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        idle = "n/a" if row["idle"] is None else f"{100 * row['idle']:.0f}%"
        lines.append(
            f"| {row['model']} | {row['corpus']} | {row['method']} | {row['dtype']} | {row['tokens_per_s']:,.0f} "
            f"| {100 * row['matmul_share']:.1f}% | {idle} | {row['parity']} |"
        )
    return "\n".join(lines)


def run(args) -> None:
    import torch

    device = torch.device(args.device)
    work = Path(tempfile.mkdtemp(prefix="featx-gpu-"))  # features files stay out of $OUT
    assets = smoke_assets(work) if args.smoke else args.assets
    if not (assets / "minilm-bf16" / "model.safetensors").exists():
        raise SystemExit(f"{assets} is not prepared: run `python bench/gpu.py prepare` on the CPU machine first")
    models = {"minilm": lambda: assets / "minilm-bf16", "bert-base-random": lambda: bert_base_random(assets, work)}
    log = lambda line="": print(line, flush=True)  # noqa: E731
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    log(f"# bench/gpu.py {' '.join(sys.argv[1:])}: {name}, torch {torch.__version__}, load {os.getloadavg()}")
    all_rows, text = [], ""
    for model_name in args.models:
        folder = models[model_name]()
        config = json.loads((folder / "config.json").read_text())
        rate = bf16_matmul_rate(device, config["hidden_size"], config["intermediate_size"])
        log(f"{model_name}: bf16 matmul {rate / 1e12:.2f} TFLOP/s")
        for corpus_name in args.corpora:
            corpus = assets / f"{corpus_name}.csv"
            if args.quick:
                corpus = subset(corpus, 64, work / f"{corpus_name}-quick.csv")
            log(f"{model_name} x {corpus_name}")
            rows, _, _ = bench_case(model_name, folder, corpus_name, corpus, args, rate, work, log)
            for row in rows:
                row["matmul_rate"] = rate
            all_rows.extend(rows)
            text = table(all_rows)  # after every case: a run cut short keeps what it measured
            (args.out / "gpu-table.md").write_text(text + "\n")
            (args.out / "gpu.json").write_text(json.dumps(all_rows, indent=1))
    log("\n" + text)
    shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["prepare", "run"])
    parser.add_argument("--assets", type=Path, default=ASSETS)
    parser.add_argument("--out", type=Path, default=ASSETS / "out")
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--quick", action="store_true", help="64 rows per corpus, bf16, batch 32, MiniLM unless --models"
    )
    parser.add_argument("--models", default=None, help="minilm,bert-base-random (default; --quick: minilm)")
    parser.add_argument("--corpora", default="sst2,agnews")
    parser.add_argument("--dtypes", default="float16,bfloat16")
    parser.add_argument("--st-batch", default="32,256", help="sentence-transformers batch sizes")
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile runs")
    parser.add_argument("--parity-rows", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="tiny models and corpora built in place, CPU, no peers")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.action == "prepare":
        prepare(args.assets)
        return
    if args.quick:
        args.models, args.dtypes, args.st_batch, args.parity_rows = args.models or "minilm", "bfloat16", "32", 32
    if args.smoke:
        args.device, args.dtypes, args.st_batch, args.parity_rows, args.no_compile = "cpu", "bfloat16", "", 16, True
        args.corpora = "sst2"
        BERT_BASE.update(SMOKE_BERT)
    args.models = args.models or "minilm,bert-base-random"
    args.models, args.corpora, args.dtypes = args.models.split(","), args.corpora.split(","), args.dtypes.split(",")
    args.st_batch = [int(b) for b in args.st_batch.split(",") if b]  # empty: no sentence-transformers rows
    args.compile = [False] if args.no_compile else [False, True]
    args.out.mkdir(parents=True, exist_ok=True)
    run(args)


if __name__ == "__main__":
    main()

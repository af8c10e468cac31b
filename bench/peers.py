"""sentence-transformers' ONNX Runtime and OpenVINO backends as peers of featx (used by bench/extract.py).

    PYTHONPATH=$PWD python bench/peers.py export                  # export once (times printed apart)
    PYTHONPATH=$PWD python bench/peers.py check --rows 200        # every peer vs featx, cosine per row
    PYTHONPATH=$PWD python bench/peers.py encode --peer onnx-fp32 --corpus X.csv --out X.npy   # a whole command

``SentenceTransformer(folder, backend="onnx" | "openvino")`` wraps ``optimum``'s ``ORTModelForFeatureExtraction``
and ``optimum-intel``'s ``OVModelForFeatureExtraction``; each of those runs one ``onnxruntime.InferenceSession``
or one OpenVINO compiled model on (input_ids, attention_mask, token_type_ids) and returns the last hidden
state. With transformers 5.24 (this venv) neither optimum package imports (optimum-onnx 0.1.0 asks for
transformers < 4.58, optimum-intel 2.2.0 for < 5.6), so here the same runtime call is put in place of the
torch network inside an ordinary ``SentenceTransformer`` (the module ``RuntimeModel`` below): tokenising,
length sorting, batching and mean pooling are sentence-transformers' own ``encode``; only the network
runs in ONNX Runtime or OpenVINO, as with the backends.

Variants (exported once from the packaged MiniLM folder into bench/.cache/peers/<model>/):
  onnx-fp32         torch.onnx.export of the model (what optimum's export produces: last_hidden_state)
  onnx-O3           the same after onnxruntime.transformers' BERT fusions (attention, GELU, LayerNorm),
                    what ``export_optimized_onnx_model(..., "O3")`` runs
  onnx-qint8        dynamic int8 quantisation (per channel, as ST's ``avx512_vnni`` config), what
                    ``export_dynamic_quantized_onnx_model`` runs: ONNX Runtime's fastest CPU precision
  openvino-f32      OpenVINO from the ONNX file, ``INFERENCE_PRECISION_HINT=f32``
  openvino-bf16     the same, ``INFERENCE_PRECISION_HINT=bf16`` (OpenVINO's default on a bf16 CPU)
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(__file__).resolve().parent / ".cache" / "peers"
MAX_LENGTH = 256
PEERS = ("onnx-fp32", "onnx-O3", "onnx-qint8", "openvino-f32", "openvino-bf16")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def peer_folder(model_folder: Path) -> Path:
    folder = Path(model_folder).resolve()
    return CACHE / f"{folder.parent.name}-{folder.name}"


def export(model_folder: Path, threads: int | None = None) -> dict[str, float]:
    """Write every variant's file (once); the seconds each export took (0 for files already there)."""
    import torch
    from transformers import AutoConfig, AutoModel

    out = peer_folder(model_folder)
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    plain = out / "model.onnx"
    if not plain.exists():
        start = time.perf_counter()
        model = AutoModel.from_pretrained(str(model_folder), attn_implementation="eager").eval()

        class LastHidden(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.inner(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                ).last_hidden_state

        ids = torch.ones(2, 8, dtype=torch.long)
        axes = {name: {0: "batch", 1: "sequence"} for name in (*INPUTS, "last_hidden_state")}
        torch.onnx.export(
            LastHidden(model),
            (ids, ids, torch.zeros_like(ids)),
            str(plain),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
        seconds["onnx-fp32"] = time.perf_counter() - start
    fused = out / "model_O3.onnx"
    if not fused.exists():
        from onnxruntime.transformers.optimizer import optimize_model

        config = AutoConfig.from_pretrained(str(model_folder))
        start = time.perf_counter()
        optimized = optimize_model(
            str(plain),
            model_type="bert",
            num_heads=config.num_attention_heads,
            hidden_size=config.hidden_size,
            opt_level=1,
        )
        optimized.save_model_to_file(str(fused))
        seconds["onnx-O3"] = time.perf_counter() - start
    quantized = out / "model_qint8.onnx"
    if not quantized.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        start = time.perf_counter()
        quantize_dynamic(str(plain), str(quantized), per_channel=True, reduce_range=False, weight_type=QuantType.QInt8)
        seconds["onnx-qint8"] = time.perf_counter() - start
    ov_file = out / "openvino_model.xml"
    if not ov_file.exists():
        import openvino as ov

        start = time.perf_counter()
        ov.save_model(ov.convert_model(str(plain)), str(ov_file), compress_to_fp16=False)  # weights stay fp32
        seconds["openvino"] = time.perf_counter() - start
    return seconds


class RuntimeModel:
    """One ONNX Runtime session or OpenVINO compiled model, called like the torch network ST wraps."""

    def __init__(self, model_folder: Path, peer: str, threads: int):
        folder = peer_folder(model_folder)
        self.peer = peer
        if peer.startswith("onnx"):
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            name = {"onnx-fp32": "model.onnx", "onnx-O3": "model_O3.onnx", "onnx-qint8": "model_qint8.onnx"}[peer]
            self.session = ort.InferenceSession(str(folder / name), options, providers=["CPUExecutionProvider"])
            self.wanted = {i.name for i in self.session.get_inputs()}
            self.run = lambda feed: self.session.run(["last_hidden_state"], feed)[0]
        else:
            import openvino as ov

            precision = peer.split("-")[1]
            core = ov.Core()
            compiled = core.compile_model(
                str(folder / "openvino_model.xml"),
                "CPU",
                {
                    "INFERENCE_PRECISION_HINT": precision,
                    "PERFORMANCE_HINT": "LATENCY",
                    "INFERENCE_NUM_THREADS": threads,
                },
            )
            self.request = compiled.create_infer_request()
            self.wanted = {name for port in compiled.inputs for name in port.get_names()}
            self.run = lambda feed: self.request.infer(feed)[0]

    def __call__(self, input_ids, attention_mask, token_type_ids=None, **_):
        import torch

        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        feed = {
            name: value.numpy().astype(np.int64)
            for name, value in (
                ("input_ids", input_ids),
                ("attention_mask", attention_mask),
                ("token_type_ids", token_type_ids),
            )
            if name in self.wanted
        }
        return {"last_hidden_state": torch.from_numpy(np.ascontiguousarray(self.run(feed), dtype=np.float32))}


def sentence_transformer(model_folder: Path, peer: str, threads: int):
    """A ``SentenceTransformer`` of the folder whose network runs in the peer's runtime ("torch": unchanged)."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(str(model_folder), device="cpu")
    model.max_seq_length = MAX_LENGTH
    if peer != "torch":
        transformer = model[0]
        runtime = RuntimeModel(model_folder, peer, threads)

        class Network(torch.nn.Module):  # what transformer.model was; forward runs the runtime
            def __init__(self, config):
                super().__init__()
                self.config = config

            def forward(self, **features):
                return runtime(**features)

        transformer.model = Network(transformer.model.config)
        transformer.model_forward_params = None
    return model


def encode(model, texts: list[str], batch_size: int = 32) -> np.ndarray:
    return model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)


def read_texts(corpus: Path) -> list[str]:
    with open(corpus, newline="", encoding="utf-8") as handle:
        return [row["text"] for row in csv.DictReader(handle)]


def featx_last_mean(model_folder: Path, corpus: Path, workdir: Path) -> np.ndarray:
    """featx's last-layer mean pooling of the corpus, fp32 compute, read back from the features file."""
    import featx
    from featx.extraction import ExtractConfig, extract

    output = workdir / "peers-check.h5"
    extract(
        ExtractConfig(
            corpus=corpus,
            output=output,
            model=str(model_folder),
            device="cpu",
            dtype="float32",
            max_length=MAX_LENGTH,
            overwrite=True,
            progress=False,
            poolings="mean",
        )
    )
    with featx.open(output) as features:
        layer = features.site_layers()[-1]
        return features.features("mean", layer)


def check(model_folder: Path, corpus: Path, rows: int, threads: int, workdir: Path, peers=PEERS) -> dict[str, float]:
    """The smallest cosine between each peer's embedding and featx's last-layer mean pooling, over ``rows``."""
    texts = read_texts(corpus)[:rows]
    small = workdir / f"peers-check-{rows}.csv"
    with open(small, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text"])
        writer.writerows([text] for text in texts)
    reference = featx_last_mean(model_folder, small, workdir).astype(np.float64)
    smallest = {}
    for peer in ("torch", *peers):
        got = encode(sentence_transformer(model_folder, peer, threads), texts).astype(np.float64)
        if got.shape != reference.shape:
            raise SystemExit(f"{peer}: shape {got.shape} vs featx {reference.shape} (does the ST model normalise?)")
        cosine = (got * reference).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(reference, axis=1)
        smallest[peer] = float(cosine.min())
    return smallest


def run_peer_steady(folder, texts, batch_size, peer, threads):
    """Seconds of one ``encode`` of ``texts`` (after a warm-up), the network in the peer's runtime."""
    model = sentence_transformer(folder, peer, threads)
    encode(model, texts[:8], batch_size)  # warm-up, as for bench/extract.py's st
    start = time.perf_counter()
    embeddings = encode(model, texts, batch_size)
    seconds = time.perf_counter() - start
    assert embeddings.shape[0] == len(texts)
    return seconds


def run_peer_command(folder, corpus, peer, workdir, threads):
    """Seconds of the whole ``python bench/peers.py encode`` command (imports, load, encode, save)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}  # a whole command
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "encode",
        "--peer",
        peer,
        "--model",
        str(folder),
        "--corpus",
        str(corpus),
        "--threads",
        str(threads),
        "--out",
        str(workdir / "peer.npy"),
    ]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(f"{peer} failed:\n{result.stderr[-3000:]}")
    return seconds


FP32_PEERS = ("sentence-transformers", "st torch", "st onnx-fp32", "st onnx-O3", "st openvino-f32")
BF16_PEERS = ("st openvino-bf16",)


def log_ratios(results: dict[str, float], log) -> None:
    """featx over the fastest sentence-transformers peer at the same precision, steady and whole command."""
    for dtype, prefixes in (("float32", FP32_PEERS), ("bfloat16", BF16_PEERS)):
        for kind in ("steady", "cmd"):
            mine = results.get(f"featx {dtype} {kind}")
            theirs = {
                name: rate
                for name, rate in results.items()
                if name.startswith(prefixes)
                and (f" {kind} " in name or (kind == "steady" and name.startswith("sentence-transformers")))
            }
            if mine and theirs:
                best = max(theirs, key=theirs.get)
                log(f"featx {dtype} {kind} / fastest peer at that precision ({best}): {mine / theirs[best]:.2f}x")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["export", "check", "encode"])
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: the packaged MiniLM)")
    parser.add_argument("--peer", default="onnx-fp32", help=f"one of torch, {', '.join(PEERS)}")
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.model is None:
        from featx.extraction.model.files import default_model_path

        args.model = default_model_path()
    import torch

    threads = args.threads or torch.get_num_threads()
    if args.action == "export":
        for name, seconds in export(args.model).items():
            print(f"export {name}: {seconds:.1f} s")
        print(f"files in {peer_folder(args.model)}")
    elif args.action == "check":
        export(args.model)
        corpus = args.corpus or Path(__file__).resolve().parent.parent / "data" / "demo.csv"
        workdir = CACHE / "work"
        workdir.mkdir(parents=True, exist_ok=True)
        for peer, cosine in check(args.model, corpus, args.rows, threads, workdir).items():
            print(f"{peer}: smallest cosine to featx's last-layer mean over {args.rows} rows = {cosine:.6f}")
    else:
        texts = read_texts(args.corpus)
        embeddings = encode(sentence_transformer(args.model, args.peer, threads), texts)
        if args.out:
            np.save(args.out, embeddings)
        print(f"{args.peer}: {embeddings.shape}", file=sys.stderr)


if __name__ == "__main__":
    main()

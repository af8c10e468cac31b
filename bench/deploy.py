"""featx predict / featx extract --layers 0:K against sentence-transformers plus scikit-learn, whole commands.

    PYTHONPATH=$PWD python bench/deploy.py                          # 2,000 AG News texts, 3 alternating rounds
    PYTHONPATH=$PWD python bench/deploy.py --rows 40 --rounds 1     # a smoke run

On N AG News test texts (``$FEATX_BENCH_DATA/agnews``, default ``../shared/data``), the default model (MiniLM,
6 layers), each a whole command as users run it (start-up, model load, reading and writing files included):

  (a) ``featx predict`` with a bundle whose head reads layer 3 of 6 (the forward pass stops after block 3)
      vs the peer: a script that loads the same MiniLM with sentence-transformers, ``encode``s the texts (its
      last-layer mean-pooled, normalised embedding) and calls a scikit-learn ``LogisticRegression.predict``
      (``python bench/deploy.py peer ...``, a subprocess too);
  (b) the same with the head at the top layer (6);
  (c) ``featx extract --layers 0:2`` vs the full ``featx extract`` (all 7 hidden-state layers);
  (d) tokens/s (the texts' tokens at max length 256, as every method cuts them) and peak RSS of each command's
      process tree (psutil, sampled every 0.2 s), at float32 and at bfloat16 (featx ``--dtype bfloat16``: the
      bundles are fitted on bfloat16 features, so predict runs in bfloat16; the peer with
      ``model_kwargs={"torch_dtype": torch.bfloat16}``).

Setup, not timed: the training features (``--train-rows`` AG News training texts, mean pooling), the bundles
(``featx.fit`` at layer 3 and at the top), the peer's head (fitted on sentence-transformers embeddings of the
same training texts, saved as plain arrays in an .npz, never pickled). Every round runs every command once,
alternating; the medians count. ``uptime`` is printed before and after. Never a test: timings are taken on a
quiet machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract import DATA, MAX_LENGTH, corpus_csv, count_tokens, model_folder  # noqa: E402
from probe_scale import peak_rss  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(__file__).resolve().parent / ".cache" / "deploy"
DTYPES = ("float32", "bfloat16")


def train_csv(rows: int) -> Path:
    """``rows`` AG News training texts with their topic (text,label), cached."""
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"agnews-train-{rows}.csv"
    if not path.exists():
        with open(DATA / "agnews" / "data.csv", newline="", encoding="utf-8") as handle:
            records = [(r["text"], r["label"]) for r in csv.DictReader(handle) if r["split"] == "train"][:rows]
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows(records)
    return path


def read_column(corpus: Path, column: str) -> list[str]:
    with open(corpus, newline="", encoding="utf-8") as handle:
        return [row[column] for row in csv.DictReader(handle)]


def sentence_transformer(folder: Path, dtype: str):
    """The peer's encoder: the MiniLM folder as sentence-transformers loads it, cut at 256 tokens."""
    import torch
    from sentence_transformers import SentenceTransformer

    kwargs = {"torch_dtype": torch.bfloat16} if dtype == "bfloat16" else {}
    model = SentenceTransformer(str(folder), device="cpu", model_kwargs=kwargs)
    model.max_seq_length = MAX_LENGTH
    return model


def peer_head(folder: Path, train: Path, dtype: str) -> Path:
    """The peer's scikit-learn head on its own embeddings of the training texts, as plain arrays (.npz)."""
    from sklearn.linear_model import LogisticRegression

    path = WORK / f"peer-head-{train.stem}-{dtype}.npz"
    if not path.exists():
        embeddings = sentence_transformer(folder, dtype).encode(read_column(train, "text"), convert_to_numpy=True)
        head = LogisticRegression(max_iter=1000).fit(embeddings.astype(np.float32), read_column(train, "label"))
        np.savez(path, coef=head.coef_, intercept=head.intercept_, classes=np.asarray(head.classes_, dtype=str))
    return path


def peer(folder: Path, corpus: Path, head: Path, output: Path, dtype: str) -> None:
    """The peer as its user would write it: encode, predict, write a CSV of predictions."""
    from sklearn.linear_model import LogisticRegression

    texts = read_column(corpus, "text")
    embeddings = sentence_transformer(folder, dtype).encode(texts, batch_size=64, convert_to_numpy=True)
    arrays = np.load(head, allow_pickle=False)
    classifier = LogisticRegression()
    classifier.coef_, classifier.intercept_ = arrays["coef"], arrays["intercept"]
    classifier.classes_ = arrays["classes"]
    predicted = classifier.predict(embeddings.astype(np.float32))
    with open(output, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["row", "prediction"])
        writer.writerows(enumerate(predicted))


def featx_bundles(folder: Path, train: Path, dtype: str) -> dict[str, Path]:
    """Bundles of the topic at layer 3 and at the top, fitted on ``dtype`` features of the training texts."""
    import featx

    features = WORK / f"{train.stem}-{dtype}.h5"
    if not features.exists():
        featx.extract(train, model=str(folder), output=features, poolings="mean", dtype=dtype,
                      max_length=MAX_LENGTH, device="cpu", progress=False)  # fmt: skip
    bundles = {}
    for name, layer in (("layer 3", "3"), ("top layer", "-1")):
        path = WORK / f"{train.stem}-{dtype}-layer{layer}.featx"
        if not path.exists():
            featx.fit(features, label="label", layer=layer, pooling="mean", output=path, n_bootstrap=10)
        bundles[name] = path
    return bundles


def commands(folder: Path, corpus: Path, train: Path, out: Path) -> dict[str, list[str]]:
    """Every command timed, by name."""
    python, featx_cmd = sys.executable, [sys.executable, "-m", "featx"]
    runs = {}
    for dtype in DTYPES:
        bundles = featx_bundles(folder, train, dtype)
        for name, bundle in bundles.items():
            runs[f"featx predict, {name}, {dtype}"] = [
                *featx_cmd, "predict", str(bundle), str(corpus), "-o", str(out / "featx.csv"), "--overwrite",
                "--device", "cpu",
            ]  # fmt: skip
        head = peer_head(folder, train, dtype)
        runs[f"sentence-transformers + sklearn, {dtype}"] = [
            python, str(Path(__file__).resolve()), "peer", "--corpus", str(corpus), "--head", str(head),
            "--out", str(out / "peer.csv"), "--dtype", dtype,
        ]  # fmt: skip
        extract = [
            *featx_cmd, "extract", str(corpus), "--model", str(folder), "-o", str(out / "x.h5"), "--overwrite", "-q",
            "--device", "cpu", "--dtype", dtype, "--max-length", str(MAX_LENGTH), "--pooling", "mean",
        ]  # fmt: skip
        runs[f"featx extract --layers 0:2, {dtype}"] = [*extract, "--layers", "0:2"]
        runs[f"featx extract (all layers), {dtype}"] = extract
    return runs


RATIOS = [  # (what, numerator, denominator) by name prefix, at each dtype
    ("featx predict (layer 3) / peer", "featx predict, layer 3", "sentence-transformers + sklearn"),
    ("featx predict (top layer) / peer", "featx predict, top layer", "sentence-transformers + sklearn"),
    ("extract --layers 0:2 / full extract", "featx extract --layers 0:2", "featx extract (all layers)"),
]


def report(results: dict[str, dict[str, float]], tokens: int, rounds: int) -> None:
    print(f"\n| command | seconds (median of {rounds}) | tokens/s | peak RSS, process tree (MiB) |")
    print("|---|---:|---:|---:|")
    for name, values in results.items():
        print(f"| {name} | {values['seconds']:.2f} | {tokens / values['seconds']:,.0f} | {values['rss']:,.0f} |")
    print("\n| ratio (whole commands) | dtype | speed (x) | peak RSS (x) |")
    print("|---|---|---:|---:|")
    for what, top, bottom in RATIOS:
        for dtype in DTYPES:
            a, b = results.get(f"{top}, {dtype}"), results.get(f"{bottom}, {dtype}")
            if a and b:
                print(f"| {what} | {dtype} | {b['seconds'] / a['seconds']:.2f} | {a['rss'] / b['rss']:.2f} |")


def run(args) -> None:
    print(f"# bench/deploy.py {' '.join(sys.argv[1:])}")
    print("uptime before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    folder = model_folder("minilm")
    corpus, train = corpus_csv("agnews", args.rows), train_csv(args.train_rows)
    out = WORK / "out"
    out.mkdir(parents=True, exist_ok=True)
    runs = commands(folder, corpus, train, out)  # the setup: features, bundles, peer heads
    tokens = int(np.sum(count_tokens(folder, read_column(corpus, "text"))))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    measured: dict[str, list[tuple[float, float]]] = {}
    for number in range(args.rounds):
        order = list(runs) if number % 2 == 0 else list(reversed(runs))  # alternate which goes first
        for name in order:
            _, tree_mib, seconds = peak_rss(runs[name], env)
            measured.setdefault(name, []).append((seconds, tree_mib))
            print(f"round {number + 1}: {name}: {seconds:.2f} s, {tree_mib:,.0f} MiB", flush=True)
    results = {
        name: {"seconds": float(np.median([s for s, _ in values])), "rss": float(np.median([m for _, m in values]))}
        for name, values in measured.items()
    }
    print(f"\n{args.rows} AG News texts, {tokens:,} tokens (max length {MAX_LENGTH}), MiniLM, CPU")
    report(results, tokens, args.rounds)
    print("uptime after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    peer_args = sub.add_parser("peer", help="the peer script: sentence-transformers encode + sklearn predict")
    peer_args.add_argument("--corpus", type=Path, required=True)
    peer_args.add_argument("--head", type=Path, required=True)
    peer_args.add_argument("--out", type=Path, required=True)
    peer_args.add_argument("--dtype", choices=DTYPES, default="float32")
    parser.add_argument("--rows", type=int, default=2000, help="AG News test texts predicted")
    parser.add_argument("--train-rows", type=int, default=1000, help="AG News training texts the heads fit on")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians count")
    args = parser.parse_args(argv)
    if args.command == "peer":
        peer(model_folder("minilm"), args.corpus, args.head, args.out, args.dtype)
    else:
        run(args)


if __name__ == "__main__":
    main()

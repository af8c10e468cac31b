"""Word-level extraction and probing at treebank scale: wall time and peak RSS against the sentence count.

    PYTHONPATH=$PWD python bench/words_scale.py                                  # 2,000 and 20,000 sentences
    PYTHONPATH=$PWD python bench/words_scale.py --sentences 500 --model minilm   # a smoke run
    PYTHONPATH=$PWD python bench/words_scale.py --sentences 20000 --keep \
        --probes "--layer 12 --pooling first|--layer 0,6,12 --pooling first"       # other probes, file kept

The treebank is UD English GUM (``$FEATX_BENCH_DATA/ud_gum``, default ``../shared/data``): its sentences
cycled to N with fresh ids, the first 80% written as ``scale-train.conllu`` and the rest as
``scale-test.conllu`` (so the probe trains on one file's sentences and tests on the other's). The model is
``bert-base-random`` by default: bert-base shapes (12 layers + embeddings, 768 wide, 30,522-token uncased
vocabulary) with seeded random weights, the issue's "bert-base-sized model"; ``minilm`` is the default model.

Each stage runs the real CLI in its own process, its peak RSS and that of its process tree (joblib workers
included) sampled with psutil: ``featx extract`` (all layers, the three word poolings, float16), then
``featx probe --label upos`` on the last layer only and on ``--layer all`` (``--probes``: other option
sets, ``|``-separated; ``--keep``: keep the features file and reuse it next time). Memory-flat means the extract's
peak does not grow with the sentence count (words stream to the file) and the probe's does not grow with the
number of layers probed (one layer x pooling is read at a time). Everything lives in bench/.cache/words-scale/.

``--featx DIR`` runs the probes with another checkout's featx (e.g. the main branch's, on the same kept
features file) and ``--compare DIR`` runs each probe with both, this checkout's first, then prints the
largest difference of accuracy, control accuracy and selectivity over the (layer, pooling) rows:

    PYTHONPATH=$PWD python bench/words_scale.py --sentences 20000 --keep --probes "--layer all" --compare ../main
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(__file__).resolve().parent / ".cache" / "words-scale"
sys.path.insert(0, str(ROOT / "bench"))


def gum_sentences() -> list[str]:
    """The sentence blocks (comment lines included) of GUM's dev and test files, in order."""
    data = Path(os.environ.get("FEATX_BENCH_DATA", ROOT.parent / "shared" / "data")) / "ud_gum"
    files = sorted(data.glob("*.conllu"))
    if not files:
        raise SystemExit(f"no .conllu files in {data}: set FEATX_BENCH_DATA to the folder holding ud_gum/")
    blocks = []
    for file in files:
        blocks += [block for block in file.read_text(encoding="utf-8").split("\n\n") if block.strip()]
    return blocks


def treebank(n_sentences: int) -> tuple[Path, Path, int]:
    """``scale-train.conllu`` and ``scale-test.conllu`` of ``n_sentences`` in all, and their word count."""
    folder = CACHE / f"treebank-{n_sentences}"
    train, test = folder / "scale-train.conllu", folder / "scale-test.conllu"
    blocks = gum_sentences()
    chosen = [blocks[index % len(blocks)] for index in range(n_sentences)]
    n_words = sum(
        1
        for block in chosen
        for line in block.splitlines()
        if line and not line.startswith("#") and line.split("\t", 1)[0].isdigit()
    )
    if train.exists() and test.exists():
        return train, test, n_words
    folder.mkdir(parents=True, exist_ok=True)
    renamed = []
    for index, block in enumerate(chosen):
        lines = [line for line in block.splitlines() if not line.startswith("# sent_id")]
        renamed.append("\n".join([f"# sent_id = scale-{index}", *lines]))
    cut = int(round(0.8 * n_sentences))
    train.write_text("\n\n".join(renamed[:cut]) + "\n\n", encoding="utf-8")
    test.write_text("\n\n".join(renamed[cut:]) + "\n\n", encoding="utf-8")
    return train, test, n_words


def main(argv=None) -> None:
    from extract import model_folder
    from probe_scale import peak_rss

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", default="2000,20000", help="comma-separated sentence counts")
    parser.add_argument("--model", default="bert-base-random", help="bert-base-random or minilm")
    parser.add_argument("--probes", default="--layer -1|--layer all", help="featx probe option sets, '|'-separated")
    parser.add_argument("--label", default="upos")
    parser.add_argument("--keep", action="store_true", help="keep the features file (and reuse a kept one)")
    parser.add_argument("--featx", type=Path, default=ROOT, help="the checkout whose featx runs the probes")
    parser.add_argument("--compare", type=Path, default=None, help="also probe with this checkout; print the gaps")
    args = parser.parse_args(argv)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    model = model_folder(args.model)
    print(f"# bench/words_scale.py {' '.join(sys.argv[1:])}  (model {args.model}, load {os.getloadavg()})", flush=True)
    print("| sentences | words | stage | file MB | peak RSS (MiB) | peak tree RSS (MiB) | wall s | load after |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for n_sentences in (int(part) for part in args.sentences.split(",")):
        train, test, n_words = treebank(n_sentences)
        features = CACHE / f"{args.model}-{n_sentences}.h5"
        if not (args.keep and features.exists()):
            features.unlink(missing_ok=True)
            command = [
                sys.executable,
                "-m",
                "featx",
                "extract",
                str(train),
                str(test),
                "--model",
                str(model),
                "-o",
                str(features),
            ]
            rss, tree, seconds = peak_rss(command, env)
            _row(
                n_sentences,
                n_words,
                "extract (all layers, first/last/mean)",
                features.stat().st_size / 1e6,
                rss,
                tree,
                seconds,
            )
        size = features.stat().st_size / 1e6
        for index, options in enumerate(args.probes.split("|")):
            outputs = []
            for checkout in [args.featx.resolve()] + ([args.compare.resolve()] if args.compare else []):
                output = CACHE / f"probe-{args.model}-{n_sentences}-{index}-{checkout.name}"
                command = [
                    sys.executable,
                    "-m",
                    "featx",
                    "probe",
                    str(features),
                    "--label",
                    args.label,
                    *options.split(),
                    "-o",
                    str(output),
                ]
                # run from the checkout: ``python -m featx`` imports featx from the working directory first
                rss, tree, seconds = peak_rss(command, {**env, "PYTHONPATH": str(checkout)}, cwd=checkout)
                stage = f"probe --label {args.label} {options}" + (f" ({checkout.name})" if args.compare else "")
                _row(n_sentences, n_words, stage, size, rss, tree, seconds)
                outputs.append(output)
            if args.compare:
                _gaps(*outputs)
        if not args.keep:
            features.unlink()  # tens of GB at 20,000 sentences of bert-base
    print(
        f"extract: featx extract scale-train.conllu scale-test.conllu --model {args.model}; "
        f"probe: featx probe FEATURES --label {args.label} OPTIONS"
    )


def _gaps(first: Path, second: Path) -> None:
    """The largest |difference| of each score column over the probes (layer, pooling) the two runs share."""
    import pandas as pd

    key = ["layer", "pooling"]
    tables = [pd.read_csv(f"{prefix}.csv") for prefix in (first, second)]  # featx probe -o PREFIX
    tables = [table[table["kind"] == "single"].set_index(key) for table in tables]
    joined = tables[0].join(tables[1], lsuffix="_a", rsuffix="_b", how="inner")
    for column in ("accuracy", "control_accuracy", "selectivity"):
        gap = (joined[f"{column}_a"] - joined[f"{column}_b"]).abs()
        layer, pooling = gap.idxmax()
        where = f"layer {int(layer)}, {pooling}"
        print(f"{column}: largest gap {gap.max():.4f} ({where}), mean {gap.mean():.4f} over {len(gap)} probes")


def _row(n_sentences, n_words, stage, size, rss, tree, seconds) -> None:
    print(
        f"| {n_sentences:,} | {n_words:,} | {stage} | {size:,.0f} | {rss:,.0f} | {tree:,.0f} | {seconds:.1f} "
        f"| {os.getloadavg()[0]:.1f} |",
        flush=True,
    )


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - started:.0f} s")

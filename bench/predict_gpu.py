"""``featx predict`` on the device: a probe bundle fitted on MiniLM features of SST-2 (``featx fit``), then the
whole ``featx predict BUNDLE CORPUS`` command timed (start-up, encoder load, forward passes, the probe); and
the same for a word probe (upos, fitted on UD English GUM's dev part, predicting every word of its test
part), with the accuracy predict prints beside fit's test score.

    PYTHONPATH=$PWD python bench/predict_gpu.py --device cuda --out OUT      # bench/gpu.sh runs it
    PYTHONPATH=$PWD .venv/bin/python bench/predict_gpu.py --smoke --out /tmp/predict-smoke

Where this checkout has no ``featx predict`` (or ``featx fit``) it says so, writes that line as its table
and exits 0: the GPU run goes on. A command that fails is reported the same way, with its last line.
Writes predict-table.md and predict.json to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import gpu  # noqa: E402  (bench/gpu.py: the smoke's assets, how a child Python starts)


def featx_command(*args: str, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    command = [*gpu.python_command(), "-m", "featx", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - started, done


def run(args, work: Path) -> dict:
    """Features, a bundle, then the timed predict; a dict of the figures (or of what went wrong)."""
    import featx
    from featx.cli import main as cli

    missing = [name for name in ("fit", "predict") if name not in cli.commands]
    if missing:
        named = " and ".join(f"featx {name}" for name in missing)
        return {"skipped": f"skipped: {named} {'does' if len(missing) == 1 else 'do'} not exist in this checkout"}
    assets = gpu.smoke_assets(work) if args.smoke else args.assets
    model, corpus = assets / "minilm-bf16", assets / "sst2.csv"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    features = work / "sst2.h5"
    featx.extract(corpus, model=str(model), device=args.device, output=features, poolings="mean", progress=False)
    bundle = work / "bundle"
    fit_args = ["fit", str(features), "--label", "label", "-o", str(bundle), "--quiet", "--overwrite"]
    _, fitted = featx_command(*fit_args, env=env)
    if fitted.returncode:
        return {"failed": "featx fit: " + (fitted.stderr or fitted.stdout).strip().splitlines()[-1:][0]}
    predict_args = ["predict", str(bundle), str(corpus), "-o", str(work / "p.csv"), "--device", args.device]
    seconds, done = featx_command(*predict_args, "--overwrite", "--no-progress", env=env)
    if done.returncode:
        return {"failed": "featx predict: " + (done.stderr or done.stdout).strip().splitlines()[-1:][0]}
    with open(corpus, newline="", encoding="utf-8") as handle:
        rows = sum(1 for _ in csv.reader(handle)) - 1
    result = {"device": args.device, "rows": rows, "seconds": round(seconds, 2), "rows_per_s": rows / seconds}
    result["words"] = word_run(args, assets / "ud", model, work, env)
    return result


def word_run(args, treebank: Path, model: Path, work: Path, env: dict) -> dict:
    """A word probe (upos, layer 2, mean) fitted on the treebank's dev part, then the whole ``featx predict``
    of its test part timed: words/s, and the accuracy predict prints against fit's test score."""
    import featx

    dev, test = treebank / "en_gum-ud-dev.conllu", treebank / "en_gum-ud-test.conllu"
    if not test.exists():
        return {"skipped": f"skipped: no {test} (run `bench/gpu.py prepare` again)"}
    features = work / "ud.h5"
    featx.extract(dev, more_corpora=(str(test),), model=str(model), device=args.device, output=features, progress=False)
    bundle = work / "upos"
    fit_args = ["fit", str(features), "--label", "upos", "--layer", "2", "--pooling", "mean", "-o", str(bundle)]
    _, fitted = featx_command(*fit_args, "--quiet", "--overwrite", env=env)
    if fitted.returncode:
        return {"failed": "featx fit: " + (fitted.stderr or fitted.stdout).strip().splitlines()[-1:][0]}
    test_line = next(line for line in fitted.stdout.splitlines() if line.startswith("test accuracy"))
    predict_args = ["predict", str(bundle), str(test), "-o", str(work / "w.csv"), "--device", args.device]
    seconds, done = featx_command(*predict_args, "--label", "upos", "--overwrite", "--no-progress", env=env)
    if done.returncode:
        return {"failed": "featx predict: " + (done.stderr or done.stdout).strip().splitlines()[-1:][0]}
    scored = next(line for line in done.stdout.splitlines() if line.startswith("accuracy"))
    words = int(scored.split(" on ")[1].split()[0])
    return {
        "words": words,
        "seconds": round(seconds, 2),
        "words_per_s": words / seconds,
        "predict": scored,
        "fit": test_line.split(";")[0],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--assets", type=Path, default=HERE / ".gpu")
    parser.add_argument("--smoke", action="store_true", help="a tiny model and 32 rows on the CPU")
    parser.add_argument("--out", type=Path, default=HERE / ".cache" / "predict")
    args = parser.parse_args(argv)
    args.device = "cpu" if args.smoke else args.device
    args.out.mkdir(parents=True, exist_ok=True)
    result = run(args, Path(tempfile.mkdtemp(prefix="featx-predict-")))
    if "rows" in result:
        text = (
            "| command | device | rows | seconds (whole command) | rows/s |\n|---|---|---:|---:|---:|\n"
            f"| featx predict | {result['device']} | {result['rows']} | {result['seconds']} "
            f"| {result['rows_per_s']:,.0f} |"
        )
        words = result["words"]
        if "words" in words:
            text += (
                f"\n| featx predict, word probe (GUM test, upos) | {result['device']} | {words['words']} words "
                f"| {words['seconds']} | {words['words_per_s']:,.0f} words/s |\n\n"
                f"word probe: predict's {words['predict']}; fit's {words['fit']}"
            )
        else:
            text += "\n\nword probe: " + (words.get("skipped") or f"failed: {words['failed']}")
    else:
        text = result.get("skipped") or f"featx predict failed: {result['failed']}"
    print(text, flush=True)
    (args.out / "predict-table.md").write_text(text + "\n")
    (args.out / "predict.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

"""The terminal table of a word-level probing run: the sentence-probe table with word-level header lines,
the lexical baseline, and a footer with the layer summaries (scalar mix, expected layer)."""

from __future__ import annotations

import math

import pandas as pd

from .format import num, row_interval
from .probe import class_counts_text, split_test
from .probe import format_table as format_probe_table


def _what(meta: dict) -> str:
    if meta.get("level") == "arc":
        return "word pairs (gold arcs and non-arc pairs)" if meta.get("label") == "head" else "(head, dependent) arcs"
    return "words"


def header(meta: dict) -> list[str]:
    counts = class_counts_text(meta.get("class_counts", {}))
    test = "bootstrap over the test sentences" if meta.get("evaluation") == "split" else "t-intervals over folds"
    return [
        f"probing {meta.get('features_file')} ({meta.get('model')})",
        f"word-level label '{meta.get('label')}'"
        + (" (arc probe)" if meta.get("level") == "arc" else "")
        + f": {meta.get('n_labelled')} {_what(meta)} in {meta.get('n_sentences')} sentences ({counts})",
        f"evaluation: {meta.get('evaluation')} by sentence (no sentence on both sides), seed {meta.get('seed')}; "
        f"intervals are 95% {test}",
    ]


def _weights_text(summary: dict) -> str:
    return " ".join(
        f"{layer}:{weight:.2f}" for layer, weight in zip(summary["layers"], summary["weights"], strict=False)
    )


def footer(meta: dict) -> list[str]:
    summaries = meta.get("layer_summary") or {}
    if not summaries:
        return []
    fitted = (
        "the training part, scored on the test part"
        if meta.get("evaluation") == "split"
        else "the first fold's training part, scored on its test part"
    )
    lines = ["", f"layer summaries (Tenney et al. 2019; scalar-mix probe on {fitted}):"]
    for pooling, summary in summaries.items():
        expected = summary.get("expected_layer")
        expected_text = (
            "-" if expected is None or (isinstance(expected, float) and math.isnan(expected)) else f"{expected:.2f}"
        )
        lines.append(
            f"  {pooling:<6} center of gravity {summary['center_of_gravity']:.2f}, expected layer {expected_text}; "
            f"mix accuracy {summary['mix_accuracy']:.3f}; weights {_weights_text(summary)}"
        )
        layers = summary.get("layers") or range(len(summary["cumulative_accuracy"]))
        lines.append(
            "         cumulative accuracy (the probed layers up to l mixed), l: "
            + "  ".join(
                f"{layer}: {value:.3f}" for layer, value in zip(layers, summary["cumulative_accuracy"], strict=False)
            )
            + (" (sentences sampled to fit memory)" if summary.get("sampled") else "")
        )
    lines.append(
        "  center of gravity = sum of l x mix weight; expected layer = sum of l x gain(l) / sum of gains, "
        "gain(l) = accuracy(up to l) - accuracy(up to the probed layer before l)"
    )
    return lines


def format_table(table: pd.DataFrame, meta: dict) -> str:
    probes = table[table.kind != "lexical"]
    body = format_probe_table(probes, meta).split("\n")[3:]  # the generic header speaks of rows
    lines = header(meta)
    lexical = table[table.kind == "lexical"]
    majority_at = next((i for i, line in enumerate(body) if line.startswith("majority class")), None)
    extra = []
    key = (  # what the lexical baseline and the control task key their labels by
        "word type" if meta.get("level") != "arc" else "dependent type" if meta.get("label") != "head" else "type pair"
    )
    if not lexical.empty:
        row = lexical.iloc[0]
        extra.append(
            f"most frequent label per {key} (train only; unseen: majority): accuracy {row_interval(row)}, "
            f"macro-F1 {num(row.macro_f1)}"
        )
    if majority_at is not None:
        body[majority_at + 1 : majority_at + 1] = extra
    else:
        lines += extra
    body = [
        line.replace(
            "control = same probe on permuted labels",
            f"control = same probe on the {key.replace(' ', '-')} control task",
        )
        .replace("McNemar's exact test over the test rows", split_test("accuracy", "sentences"))
        .replace("over the test rows (", "over the test sentences (")
        .replace("labels (Voita & Titov 2020)", "labels, sent sentence by sentence (Voita & Titov 2020)")
        for line in body
    ]
    return "\n".join(lines + body + footer(meta))

"""The parts of the HTML report: the run's meta as rows, the layer table, and each figure as SVG with a
short "how to read this"."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..figures.curves import plot_layer_curves, plot_mdl, plot_per_class_f1
from ..figures.heatmap import plot_heatmap
from ..figures.learning import plot_learning_curves, read_curve
from ..figures.plot import has_mdl
from ..figures.style import RC, svg_text
from ..load import layer_rows, model_name
from ..text.format import interval, missing, num

HOW = {
    "curves": "Accuracy on held-out rows against the layer (0 = the embeddings), one line per pooling, with its 95% "
    "interval as a band. Dashed and dotted horizontal lines are the references (the majority class and, with "
    "a baseline, the best baseline features, whose per-layer curve has grey crosses); the grey dash-dot "
    "curve with + markers is the control task at the best pooling (the same probe trained on control "
    "labels: what probe capacity alone reaches), so selectivity is the gap to it. The star is the best "
    "(layer, pooling); hollow markers are layers not significantly below their pooling's best.",
    "heatmap": "The same accuracies as a layer × pooling grid, the value written in each cell and the best cell "
    "outlined. The colour scale spans the informative cells (median ± 3 IQR): a cell at chance, such as "
    "the [CLS] vector at layer 0, takes the lowest colour (arrow on the colour bar) instead of flattening "
    "the differences between the cells worth comparing.",
    "per_class": "F1 of each class against the layer for the best pooling: which classes become separable where. "
    "With many classes only the lowest-F1 ones are coloured and named, the others are grey.",
    "mdl": "Minimum description length of the labels given the features (online code, Voita & Titov 2020), as "
    "compression over the uniform code: 1 (dashed) means the features say nothing about the label; higher "
    "means more label information that a probe can extract from few examples.",
    "learning": "Accuracy against the number of training rows (log scale) for a few layers: a layer whose curve "
    "rises earlier holds the label in a form that needs less data to read out.",
}


def run_rows(meta: dict) -> list[tuple[str, str]]:
    """What the run was: features, model, corpus, label and its classes, rows, evaluation, versions."""
    counts = meta.get("class_counts") or {}
    classes = ", ".join(f"{name} {count}" for name, count in list(counts.items())[:12])
    if len(counts) > 12:
        classes += f", … ({len(counts)} classes in all)"
    rows = [
        ("model", model_name(meta)),
        ("features file", meta.get("features_file") or meta.get("features")),
        ("corpus", meta.get("corpus_path")),
        ("label", meta.get("label")),
        ("classes", classes or None),
        ("rows", meta.get("n_rows")),
        ("evaluation", meta.get("evaluation")),
        ("seed", meta.get("seed")),
        ("classifiers", ", ".join(meta.get("classifiers") or []) or None),
        ("poolings", ", ".join(meta.get("poolings") or []) or None),
        ("baseline", meta.get("baseline_model") or meta.get("baseline_file")),
        ("featx version", meta.get("featx_version")),
        ("seconds", meta.get("seconds")),
    ]
    return [(name, str(value)) for name, value in rows if value not in (None, "")]


def layer_table(frame: pd.DataFrame, classifier: str) -> tuple[pd.DataFrame, list[bool]]:
    """The main features' single-layer rows of one classifier, and which rows are the best of their pooling."""
    rows = layer_rows(frame, classifier)
    records, best = [], []
    for pooling, part in rows.groupby("pooling", sort=False):
        top = part["accuracy"].astype(float).idxmax()
        for index, row in part.iterrows():
            p = row.get("p_vs_best_holm")
            records.append(
                {
                    "pooling": pooling,
                    "layer": int(row["layer"]),
                    "accuracy [95% CI]": interval(row["accuracy"], row.get("accuracy_low"), row.get("accuracy_high")),
                    "macro-F1": num(row.get("macro_f1")),
                    "control": num(row.get("control_accuracy")),
                    "selectivity": num(row.get("selectivity"), signed=True),
                    "p vs best": "-"
                    if missing(p)
                    else num(p) + ("!" if row.get("significant_vs_best") is True else ""),
                }
            )
            best.append(index == top)
    return pd.DataFrame.from_records(records), best


def _svg(draw, size=(8, 4.8)) -> str:
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=size, layout="constrained")
        try:
            draw(ax)
            return svg_text(fig)
        finally:
            plt.close(fig)


def figure_sections(frame: pd.DataFrame, meta: dict, classifier: str, results_path: Path) -> list[tuple[str, str, str]]:
    """``(title, svg, how to read it)`` for every figure the results allow."""
    sections = [
        (
            "Accuracy by layer",
            _svg(lambda ax: plot_layer_curves(frame, meta, ax=ax, classifier=classifier)),
            HOW["curves"],
        ),
        ("Layer × pooling", _svg(lambda ax: plot_heatmap(frame, meta, ax=ax, classifier=classifier)), HOW["heatmap"]),
    ]
    if "per_class_f1" in frame.columns and any(bool(value) for value in frame["per_class_f1"]):
        sections.append(
            (
                "Per-class F1 by layer",
                _svg(lambda ax: plot_per_class_f1(frame, meta, ax=ax, classifier=classifier)),
                HOW["per_class"],
            )
        )
    if has_mdl(frame):
        sections.append(
            (
                "MDL compression by layer",
                _svg(lambda ax: plot_mdl(frame, meta, ax=ax, classifier=classifier)),
                HOW["mdl"],
            )
        )
    curve_file = meta.get("curve_file")
    if curve_file and (results_path.with_name(curve_file)).exists():
        curve = read_curve(results_path.with_name(curve_file))
        sections.append(("Learning curves", _svg(lambda ax: plot_learning_curves(curve, ax=ax)), HOW["learning"]))
    return sections

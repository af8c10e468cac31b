"""The figures of a probe report, each as SVG with a short "how to read this": the layer curves and heatmap
in the report's metric, per-class F1, MDL, learning curves, the scalar mix of a word-level run, and from the
per-row predictions the confusion matrix (class labels) or the residual plot (regression)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..figures.classes import plot_per_class_f1
from ..figures.curves import plot_layer_curves, plot_mdl
from ..figures.diagnostics import plot_confusion, plot_residuals, read_regression_predictions
from ..figures.heatmap import SCALE_NOTES, plot_heatmap
from ..figures.learning import plot_learning_curves, read_curve
from ..figures.plot import has_mdl
from ..figures.word_panels import layer_summaries, plot_mix_weights
from ..load import METRIC_NAMES
from .parts import svg_of, svg_of_figure

Section = tuple[str, str, str]


def curves_how(metric: str, meta: dict) -> str:
    """How to read the layer curves in ``metric``."""
    name = METRIC_NAMES.get(metric, metric)
    chosen_in = meta.get("metric") or metric
    if meta.get("selected") and chosen_in == metric:
        star = "The star is the (layer, pooling) selected on the training part (never on the test rows); "
    elif meta.get("selected"):
        chose = METRIC_NAMES.get(chosen_in, chosen_in)
        star = f"The star is the best (layer, pooling) on these test rows in {name} (the run chose in {chose}); "
    else:
        star = "The star is the best (layer, pooling) on these test rows; "
    extra = ""
    if meta.get("cosine_baseline"):
        extra = (
            " The grey dotted curve with + markers is the cosine baseline: cos(u, v) of the pair's two vectors "
            "with no trained probe (drawn in the metrics it is scored in)."
        )
    if meta.get("level") in ("word", "arc"):
        extra += (
            " Vertical lines mark the scalar mix's center of gravity and the expected layer; the lexical reference "
            "is the most frequent label per word type on the training words."
        )
    return (
        f"{name} on held-out rows against the layer (0 = the embeddings), one line per pooling, with its 95% "
        "interval as a band. Horizontal lines are the references (majority class or training mean, the lexical "
        "baseline, baseline features); the grey dash-dot curve with + markers is the control task at the chosen "
        "pooling, or a flat dash-dot line its maximum over layers when the legend says so (the same probe on "
        "control labels: what probe capacity alone reaches), so selectivity is the gap to it. "
        f"{star}hollow markers are layers not significantly different from their pooling's chosen layer (paired test "
        f"on the test rows, Holm-adjusted); a triangle marks a layer significantly above it.{extra}"
    )


HOW = {
    "heatmap": "The same values as a layer × pooling grid, each value written in its cell and the chosen cell "
    f"outlined. {SCALE_NOTES['full'].capitalize()}: equal steps in value look equally different, so no two distant "
    "values share a colour. A dash marks a cell without a score (a constant vector, such as cls or pooler at "
    "layer 0).",
    "per_class": "F1 of each class against the layer for the chosen pooling: which classes become separable "
    "where. With many classes only the lowest-F1 ones are coloured and named, the others are grey.",
    "mdl": "Minimum description length of the labels given the features (online code, Voita & Titov 2020), as "
    "compression over the uniform code: 1 (dashed) means the features say nothing about the label. The dotted line "
    "in each pooling's colour is the control task's compression (the same code on control labels, Hewitt & Liang): "
    "what the probe's capacity alone reaches, the baseline the real labels' compression must beat.",
    "learning": "The metric against the number of training rows (log scale) for a few layers: a layer whose curve "
    "rises earlier holds the label in a form that needs less data to read out. The grey dashed line with + markers "
    "is each size's baseline (the majority class, for a number the training mean) fitted on the same training rows.",
    "mix": "Scalar mix (Tenney et al. 2019): softmax weights of one probe over all layers; the dotted line is "
    "the center of gravity (sum of layer × weight), the dashed line the uniform weight.",
    "confusion": "Rows are the true classes, columns the predicted ones, at the layer named in the title; each "
    "cell holds a count and is coloured by its share of the true class's rows, so the diagonal reads as per-class "
    "recall and an off-diagonal dark cell is a systematic confusion.",
    "residuals": "Left: each test row's prediction against its true value; on the dashed identity line the probe "
    "is right. Right: the residual against the truth; a slope means the probe shrinks towards the mean (it "
    "over-predicts low values and under-predicts high ones).",
}


def figure_sections(
    frame: pd.DataFrame, meta: dict, classifier: str, results_path: Path, metric: str, found=None
) -> list[Section]:
    """``(title, svg, how to read it)`` for every figure the results allow; ``found`` is the run's
    ``featx explain`` result (confusion matrix or residuals) when its predictions file is there."""
    name = METRIC_NAMES.get(metric, metric)
    sections = [
        (
            f"{name[:1].upper()}{name[1:]} by layer",
            svg_of(lambda ax: plot_layer_curves(frame, meta, ax=ax, metric=metric, classifier=classifier)),
            curves_how(metric, meta),
        )
    ]
    if metric != "spearman" and "spearman" in frame.columns and frame["spearman"].notna().any():
        sections.append(
            (
                "Spearman rho by layer",
                svg_of(lambda ax: plot_layer_curves(frame, meta, ax=ax, metric="spearman", classifier=classifier)),
                curves_how("spearman", meta),
            )
        )
    sections.append(
        (
            "Layer × pooling",
            svg_of(lambda ax: plot_heatmap(frame, meta, ax=ax, metric=metric, classifier=classifier)),
            HOW["heatmap"],
        )
    )
    return sections + _more_sections(frame, meta, classifier, results_path) + prediction_sections(meta, found)


def _more_sections(frame: pd.DataFrame, meta: dict, classifier: str, results_path: Path) -> list[Section]:
    sections = []
    if "per_class_f1" in frame.columns and any(bool(value) for value in frame["per_class_f1"]):
        draw = lambda ax: plot_per_class_f1(frame, meta, ax=ax, classifier=classifier)  # noqa: E731
        sections.append(("Per-class F1 by layer", svg_of(draw), HOW["per_class"]))
    if has_mdl(frame):
        draw = lambda ax: plot_mdl(frame, meta, ax=ax, classifier=classifier)  # noqa: E731
        sections.append(("MDL compression by layer", svg_of(draw), HOW["mdl"]))
    curve_file = meta.get("curve_file")
    if curve_file and (results_path.with_name(Path(str(curve_file)).name)).exists():
        curve = read_curve(results_path.with_name(Path(str(curve_file)).name))
        sections.append(("Learning curves", svg_of(lambda ax: plot_learning_curves(curve, ax=ax)), HOW["learning"]))
    if layer_summaries(meta):
        how = HOW["mix"] + _mix_rows(meta)
        sections.append(("Scalar mix weights", svg_of(lambda ax: plot_mix_weights(meta, ax=ax)), how))
    return sections


def chosen_layer(meta: dict, layers: list[str], scores: pd.Series) -> tuple[str, str]:
    """The layer of the predictions to draw and how it was chosen: the run's selection on the training part
    when it is among the predictions' layers (and of their pooling and probe), else the best of ``scores`` on
    the test rows; the rule of ``featx explain`` (``featx.probing.choice.chosen_layer``)."""
    from ...probing import chosen_layer as choose

    return choose(meta, layers, scores)


def prediction_sections(meta: dict, found) -> list[Section]:
    """The confusion matrix (class labels) or the residual plot (regression) of the chosen layer."""
    import matplotlib.pyplot as plt

    from ..figures.style import RC

    confusion = getattr(found, "confusion", None)
    if confusion is not None:
        layer, how = found.confusion_layer, found.confusion_how
        size = (7.5, 6) if len(confusion) <= 10 else (11, 9.5)
        svg = svg_of(lambda ax: plot_confusion(confusion, ax, layer, how), size=size)
        return [(f"Confusion matrix (layer {layer})", svg, HOW["confusion"])]
    by_layer = getattr(found, "by_layer", None)
    if by_layer is None:
        return []
    layer, how = chosen_layer(meta, [str(name) for name in by_layer.index], by_layer["r2"])
    truth, predicted = read_regression_predictions(found.predictions_path, layer)
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
        plot_residuals(truth, predicted, axes, layer, how)
    return [(f"Predictions and residuals (layer {layer})", svg_of_figure(fig), HOW["residuals"])]


def _mix_rows(meta: dict) -> str:
    """What the scalar mix was scored on: the split's test part, or under cross-validation one fold only."""
    if meta.get("evaluation") == "split":
        return " It is fitted on the training part and scored on the test part."
    return " It is fitted on the first fold's training part and scored on its test part only (not cross-validated)."


__all__ = ["HOW", "chosen_layer", "curves_how", "figure_sections", "prediction_sections"]

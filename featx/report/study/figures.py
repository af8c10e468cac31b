"""The study report's plotly figures: the task x model heatmaps (best score, relative depth of that row), every
model's layer curve per task with its 95% band, and the expected layer per task. Each figure holds one set of
traces per (metric, pooling) pair, ``meta.combo`` naming the pair; the page's controls show one pair at a time.

Every string from the study table goes through ``label`` before it reaches a figure: plotly draws text as a
small HTML dialect (``<b>``, ``<a href>``, ``$...$`` for MathJax), so a model named ``<a href=...>`` would be
drawn as a link; escaped, it reads as its own name."""

from __future__ import annotations

import html
import math

import pandas as pd

from ..figures.style import CYCLE
from .table import StudyView, better, curve, expected_layer

__all__ = ["Summary", "curves_figure", "expected_figure", "heatmap_figure", "label", "number", "row_hover"]

FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 13}
Summary = dict  # (model, corpus, label, seed or None) -> that row of the study's summary, as a dict


def label(text) -> str:
    """A string from the table as plotly text: HTML-escaped, ``$`` as an entity (no MathJax)."""
    return html.escape(str(text), quote=False).replace("$", "&#36;")


def number(value, digits: int = 3) -> str:
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


def _layer(value) -> str:
    return "?" if value != value else str(int(value)) if float(value).is_integer() else f"{value:g}"


def _plain(values) -> list:
    """Numbers as a JSON-ready list, NaN as None (a gap), never a typed array."""
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


def _colour(index: int) -> str:
    return CYCLE[index % len(CYCLE)]


def _summary_row(summary: Summary, row) -> dict | None:
    seed = None if row["seed"] != row["seed"] else int(row["seed"])
    return summary.get((row["model"], row["corpus"], row["label"], seed)) or summary.get(
        (row["model"], row["corpus"], row["label"], None)
    )


def row_hover(row) -> str:
    """The hover text of a picked row: model and task, the score with its 95% interval, where it sits, how it
    was picked, and the references."""
    interval = (
        f" [{number(row['ci_low'])}, {number(row['ci_high'])}] 95%"
        if row["ci_low"] == row["ci_low"] or row["ci_high"] == row["ci_high"]
        else " (no interval)"
    )
    lines = [
        f"<b>{label(row['model_key'])}</b> · {label(row['task'])}"
        + (" · random-init weights" if row["random_init"] else ""),
        f"{label(row['metric'])}: {number(row['score'])}{interval}",
        f"layer {_layer(row['layer'])} of {_layer(row['n_layers'])} (relative depth {number(row['depth'], 2)})",
        f"pooling {label(row['pooling'])}" + (f" · probe {label(row['classifier'])}" if row["classifier"] else ""),
        str(row["how"]),
    ]
    references = [
        f"{name} {number(row[name])}"
        for name in ("majority", "lexical", "control", "selectivity")
        if row[name] == row[name]
    ]
    if references:
        lines.append(" · ".join(references))
    return "<br>".join(lines)


def _depth_hover(row, summary: Summary) -> str:
    text = row_hover(row)
    found = _summary_row(summary, row) if row["how"] == "chosen on the training part" else None
    layers = str((found or {}).get("layers_not_below") or "")
    numbers = [float(part) for part in layers.replace(";", ",").split(",") if part.strip().lstrip("-").isdigit()]
    if numbers and row["n_layers"] == row["n_layers"] and row["n_layers"] > 0:
        low, high = min(numbers) / row["n_layers"], max(numbers) / row["n_layers"]
        text += f"<br>layers not significantly below: {label(layers)} (relative depth {low:.2f} to {high:.2f})"
    return text


def _layout(title: str, height: int, **more) -> dict:
    return {
        "template": "plotly_white",
        "font": FONT,
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "title": {"text": title, "x": 0},
        "hoverlabel": {"align": "left"},
        **more,
    }


def heatmap_figure(view: StudyView, what: str, summary: Summary):
    """Task x model heatmap of the picked row's score (``what="score"``) or its relative depth (``"depth"``)."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for combo, (metric, pooling) in enumerate(view.combos):
        rows = view.picks[(view.picks["metric"] == metric) & (view.picks["pooling"] == pooling)]
        cells = {(row["task"], row["model_key"]): row for _, row in rows.iterrows()}
        z, text = [], []
        for task in view.tasks:
            found = [cells.get((task, model)) for model in view.models]
            z.append(
                _plain([math.nan if row is None else row["score" if what == "score" else "depth"] for row in found])
            )
            text.append(
                [
                    "no row" if row is None else row_hover(row) if what == "score" else _depth_hover(row, summary)
                    for row in found
                ]
            )
        figure.add_trace(
            go.Heatmap(
                z=z,
                x=[label(model) for model in view.models],
                y=[label(task) for task in view.tasks],
                text=text,
                hovertemplate="%{text}<extra></extra>",
                texttemplate="%{z:.2f}",
                hoverongaps=False,
                colorscale="Viridis",
                reversescale=what == "score" and better(metric) < 0,
                zmin=0 if what == "depth" else None,
                zmax=1 if what == "depth" else None,
                colorbar={"title": {"text": "relative depth" if what == "depth" else label(metric)}},
                visible=combo == view.default,
                meta={"combo": combo, "metric": label(metric), "pooling": label(pooling)},
            )
        )
    height = 160 + 44 * len(view.tasks)
    figure.update_layout(
        _layout("", height, xaxis={"type": "category"}, yaxis={"type": "category", "autorange": "reversed"})
    )
    return figure


def _band(go, points: pd.DataFrame, colour: str, combo: int, visible: bool, model: str):
    bounded = points[points["ci_low"].notna() & points["ci_high"].notna()]
    if bounded.empty:
        return None
    return go.Scatter(
        x=_plain(list(bounded["depth"]) + list(bounded["depth"])[::-1]),
        y=_plain(list(bounded["ci_high"]) + list(bounded["ci_low"])[::-1]),
        fill="toself",
        fillcolor=colour + "33",
        line={"width": 0},
        hoverinfo="skip",
        showlegend=False,
        legendgroup=model,
        visible=visible,
        meta={"combo": combo, "band": True},
    )


def _point_hover(row) -> str:
    interval = f" [{number(row['ci_low'])}, {number(row['ci_high'])}]"
    return (
        f"<b>{label(row['model_key'])}</b> · {label(row['task'])}<br>layer {_layer(row['layer'])} of "
        f"{_layer(row['n_layers'])} (relative depth {number(row['depth'], 2)})<br>"
        f"{label(row['metric'])}: {number(row['score'])}{interval} 95%"
    )


def _subplots(view: StudyView):
    from plotly.subplots import make_subplots

    columns = min(2, len(view.tasks))
    rows = math.ceil(len(view.tasks) / columns)
    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[label(task) for task in view.tasks],
        vertical_spacing=min(0.12, 0.5 / rows),
        horizontal_spacing=0.08,
    )
    places = [{"row": 1 + i // columns, "col": 1 + i % columns} for i in range(len(view.tasks))]
    figure.update_xaxes(range=[-0.03, 1.03], title_text="relative depth (layer / layers)")
    figure.update_layout(_layout("", 120 + 300 * rows, hovermode="closest"))
    return figure, places


def _lexical(go, rows: pd.DataFrame, combo: int, visible: bool, shown: set):
    lexical = rows["lexical"].dropna()
    if lexical.empty:
        return None
    first = "lexical" not in shown
    shown.add("lexical")
    return go.Scatter(
        x=[0.0, 1.0],
        y=[float(lexical.iloc[0])] * 2,
        mode="lines",
        line={"color": "#555555", "dash": "dot", "width": 1.5},
        name="lexical baseline",
        legendgroup="lexical",
        showlegend=first,
        hovertemplate=f"lexical baseline: {number(lexical.iloc[0])}<extra></extra>",
        visible=visible,
        meta={"combo": combo},
    )


def curves_figure(view: StudyView):
    """Per task, every model's score by relative depth with its 95% band (and the lexical baseline)."""
    import plotly.graph_objects as go

    figure, places = _subplots(view)
    for combo, (metric, pooling) in enumerate(view.combos):
        visible, shown = combo == view.default, set()
        picks = view.picks[(view.picks["metric"] == metric) & (view.picks["pooling"] == pooling)]
        for task, place in zip(view.tasks, places, strict=True):
            rows = picks[picks["task"] == task]
            for model_index, model in enumerate(view.models):
                pick = rows[rows["model_key"] == model]
                if pick.empty:
                    continue
                points = curve(view.frame, pick.iloc[0])
                colour = _colour(model_index)
                band = _band(go, points, colour, combo, visible, model)
                traces = [band] if band is not None else []
                traces.append(
                    go.Scatter(
                        x=_plain(points["depth"]),
                        y=_plain(points["score"]),
                        text=[_point_hover(row) for _, row in points.iterrows()],
                        hovertemplate="%{text}<extra></extra>",
                        mode="lines+markers",
                        line={"color": colour, "width": 2},
                        marker={"size": 6, "color": colour},
                        name=label(model),
                        legendgroup=model,
                        showlegend=model not in shown,
                        visible=visible,
                        meta={"combo": combo},
                    )
                )
                shown.add(model)
                for trace in traces:
                    figure.add_trace(trace, **place)
            lexical = _lexical(go, rows, combo, visible, shown)
            if lexical is not None:
                figure.add_trace(lexical, **place)
    return figure


def _expected_hover(row, value: float, summary: Summary) -> str:
    depth = value / row["n_layers"] if row["n_layers"] == row["n_layers"] and row["n_layers"] > 0 else math.nan
    text = (
        f"<b>{label(row['model_key'])}</b> · {label(row['task'])}<br>"
        + (
            f"E[l] = {number(value, 2)} of {_layer(row['n_layers'])} layers (relative {number(depth, 2)})"
            if value == value
            else "E[l] undefined: no layer improves on the first"
        )
        + f"<br>curve: {label(row['metric'])}, pooling {label(row['pooling'])}"
    )
    found = _summary_row(summary, row)
    if found is not None and found.get("expected_layer") == found.get("expected_layer") and "expected_layer" in found:
        text += f"<br>study summary: E[l] = {label(found['expected_layer'])}"
    return text


def expected_figure(view: StudyView, summary: Summary):
    """Per task, each model's expected layer E[l] over its number of layers (``table.expected_layer``)."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for combo, (metric, pooling) in enumerate(view.combos):
        picks = view.picks[(view.picks["metric"] == metric) & (view.picks["pooling"] == pooling)]
        for model_index, model in enumerate(view.models):
            rows = picks[picks["model_key"] == model]
            if rows.empty:
                continue
            values = [expected_layer(*_layers_scores(view, row), metric) for _, row in rows.iterrows()]
            relative = [v / r if r == r and r > 0 else math.nan for v, r in zip(values, rows["n_layers"], strict=True)]
            figure.add_trace(
                go.Scatter(
                    x=_plain(relative),
                    y=[label(task) for task in rows["task"]],
                    text=[
                        _expected_hover(row, v, summary) for (_, row), v in zip(rows.iterrows(), values, strict=True)
                    ],
                    hovertemplate="%{text}<extra></extra>",
                    mode="markers",
                    marker={"color": _colour(model_index), "size": 12, "line": {"width": 1, "color": "white"}},
                    name=label(model),
                    visible=combo == view.default,
                    meta={"combo": combo},
                )
            )
    figure.update_layout(
        _layout(
            "",
            160 + 44 * len(view.tasks),
            xaxis={"range": [-0.03, 1.03], "title": {"text": "expected layer E[l] / number of layers"}},
            yaxis={"type": "category", "categoryorder": "array", "categoryarray": [label(t) for t in view.tasks]},
        )
    )
    return figure


def _layers_scores(view: StudyView, row) -> tuple[list, list]:
    points = curve(view.frame, row)
    return list(points["layer"]), list(points["score"])

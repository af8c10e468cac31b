"""The study report's plotly figures: the task x model heatmaps (best score, relative depth of that row), every
model's layer curve per task with its 95% band, and the expected layer per task. Each figure holds one set of
traces per (metric, pooling) pair, ``meta.combo`` naming the pair; the page's controls show one pair at a time.

Figures are plain plotly specs, ``{"data": [trace dicts], "layout": {...}}``: the layout goes through plotly's
``go.Layout`` (validated, its template resolved), the traces stay dicts, since validating a study's thousand
traces one by one takes seconds (the tests validate every trace of a page with ``go.Figure``).

Every string from the study table goes through ``label`` before it reaches a figure: plotly draws text as a
small HTML dialect (``<b>``, ``<a href>``, ``$...$`` for MathJax), so a model named ``<a href=...>`` would be
drawn as a link; escaped, it reads as its own name."""

from __future__ import annotations

import html
import math

from ...checks import parse_whole
from ..figures.style import CYCLE
from .table import StudyView, better, expected_layer

__all__ = ["Summary", "curves_figure", "expected_figure", "heatmap_figure", "label", "number", "row_hover"]

FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 13}
Summary = dict  # (model, corpus, label, seed or None) -> that row of the study's summary (or that cell's link)


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


def _summary_row(summary: Summary, row):
    """What ``summary`` holds for the row's model, corpus, label and seed (else for no seed), or None."""
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
    references = _references(row)
    if references:
        lines.append(references)
    return "<br>".join(lines)


def _references(row) -> str:
    """The row's baselines as hover text, ``majority 0.550 · lexical 0.558 · ...``, those the table has."""
    names = ("majority", "lexical", "control", "selectivity")
    return " · ".join(f"{name} {number(row[name])}" for name in names if row[name] == row[name])


def _same_curve(found: dict, row) -> bool:
    """Whether a summary line was computed on the row's curve: its pooling, classifier and metric, where the
    summary names them."""
    named = [key for key in ("pooling", "classifier", "metric") if isinstance(found.get(key), str)]
    return all(found[key] == row[key] for key in named)


def _span_bounds(spans: str) -> tuple[int, int] | None:
    """The lowest and highest layer of a summary's ``tied_layers`` text ("0-2,4" -> (0, 4)); None for anything
    else. The summary is a file: its spans are read in ASCII digits (``parse_whole``), never expanded."""
    bounds: list[int] = []
    for part in spans.replace(";", ",").split(","):
        low_text, dash, high_text = part.strip().partition("-")
        low, high = parse_whole(low_text), parse_whole(high_text) if dash else parse_whole(low_text)
        if low is None or high is None or high < low:
            return None
        bounds += (low, high)
    return min(bounds), max(bounds)


def _depth_hover(row, summary: Summary) -> str:
    text = row_hover(row)
    found = _summary_row(summary, row) if row["how"] == "chosen on the training part" else None
    layers = str((found or {}).get("tied_layers") or "")
    bounds = _span_bounds(layers)
    if bounds and row["n_layers"] == row["n_layers"] and row["n_layers"] > 0:
        low, high = bounds[0] / row["n_layers"], bounds[1] / row["n_layers"]
        text += f"<br>layers not significantly different: {label(layers)} (relative depth {low:.2f} to {high:.2f})"
    above = str((found or {}).get("above_layers") or "")
    if _span_bounds(above):
        text += f"<br>layers significantly above it on the test rows: {label(above)}"
    return text


def _layout(height: int, **more) -> dict:
    import plotly.graph_objects as go

    layout = {
        "template": "plotly_white",
        "font": FONT,
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "hoverlabel": {"align": "left"},
        **more,
    }
    return go.Layout(layout).to_plotly_json()


def _cells(view: StudyView, combo: int) -> dict:
    """(task, model) -> the picked row (a dict) at the ``combo``-th (metric, pooling) pair."""
    metric, pooling = view.combos[combo]
    rows = view.picks[(view.picks["metric"] == metric) & (view.picks["pooling"] == pooling)]
    return {(row["task"], row["model_key"]): row for row in rows.to_dict("records")}


def _cell_link(links: Summary, row) -> str:
    return "" if row is None else _summary_row(links, row) or ""


def heatmap_figure(view: StudyView, what: str, summary: Summary, links: Summary | None = None) -> dict:
    """Task x model heatmap of the picked row's score (``what="score"``) or its relative depth (``"depth"``);
    ``links`` ((model, corpus, label, seed or None) -> URL) go in each cell's ``customdata``, for a click."""
    data, links = [], links or {}
    for combo, (metric, pooling) in enumerate(view.combos):
        cells = _cells(view, combo)
        found = [[cells.get((task, model)) for model in view.models] for task in view.tasks]

        def hover(row):
            text = row_hover(row) if what == "score" else _depth_hover(row, summary)
            return text + ("<br><i>click: this cell's own report</i>" if _cell_link(links, row) else "")

        data.append(
            {
                "type": "heatmap",
                "z": [_plain([math.nan if row is None else row[what] for row in line]) for line in found],
                "x": [label(model) for model in view.models],
                "y": [label(task) for task in view.tasks],
                "text": [["no row" if row is None else hover(row) for row in line] for line in found],
                "customdata": [[_cell_link(links, row) for row in line] for line in found],
                "hovertemplate": "%{text}<extra></extra>",
                "texttemplate": "%{z:.2f}",
                "hoverongaps": False,
                "colorscale": "Viridis",
                "reversescale": what == "score" and better(metric) < 0,
                **({"zmin": 0, "zmax": 1} if what == "depth" else {}),
                "colorbar": {"title": {"text": "relative depth" if what == "depth" else label(metric)}},
                "visible": combo == view.default,
                "meta": {"combo": combo, "metric": label(metric), "pooling": label(pooling)},
            }
        )
    axes = {"xaxis": {"type": "category"}, "yaxis": {"type": "category", "autorange": "reversed"}}
    return {"data": data, "layout": _layout(160 + 44 * len(view.tasks), **axes)}


def _band(points: list[dict], colour: str, model: str) -> dict | None:
    bounded = [p for p in points if p["ci_low"] == p["ci_low"] and p["ci_high"] == p["ci_high"]]
    if not bounded:
        return None
    return {
        "type": "scatter",
        "x": _plain([p["depth"] for p in bounded] + [p["depth"] for p in bounded[::-1]]),
        "y": _plain([p["ci_high"] for p in bounded] + [p["ci_low"] for p in bounded[::-1]]),
        "mode": "lines",
        "fill": "toself",
        "fillcolor": colour + "33",
        "line": {"width": 0},
        "hoverinfo": "skip",
        "showlegend": False,
        "legendgroup": model,
        "meta": {"band": True},
    }


def _point_hover(row) -> str:
    interval = f" [{number(row['ci_low'])}, {number(row['ci_high'])}]"
    references = _references(row)
    return (
        f"<b>{label(row['model_key'])}</b> · {label(row['task'])}<br>layer {_layer(row['layer'])} of "
        f"{_layer(row['n_layers'])} (relative depth {number(row['depth'], 2)})<br>"
        f"{label(row['metric'])}: {number(row['score'])}{interval} 95%" + (f"<br>{references}" if references else "")
    )


def _line(points: list[dict], colour: str, model: str, legend: bool) -> dict:
    return {
        "type": "scatter",
        "x": _plain([p["depth"] for p in points]),
        "y": _plain([p["score"] for p in points]),
        "text": [_point_hover(p) for p in points],
        "hovertemplate": "%{text}<extra></extra>",
        "mode": "lines+markers",
        "line": {"color": colour, "width": 2},
        "marker": {"size": 6, "color": colour},
        "name": label(model),
        "legendgroup": model,
        "showlegend": legend,
    }


BASELINES = {  # the table's column -> the dotted line's name, colour and dash, and its hover
    "lexical": ("lexical baseline", "#555555", "dot", "lexical baseline"),
    "majority": ("majority baseline", "#999999", "dash", "majority class (for a number, the training mean)"),
}


def _baseline(cells: dict, task: str, column: str, legend: bool) -> dict | None:
    """The task's ``column`` baseline (the same for every model of a task) as a dotted line across the panel."""
    values = [row[column] for (t, _), row in cells.items() if t == task and row[column] == row[column]]
    if not values:
        return None
    name, colour, dash, said = BASELINES[column]
    return {
        "type": "scatter",
        "x": [0.0, 1.0],
        "y": [float(values[0])] * 2,
        "mode": "lines",
        "line": {"color": colour, "dash": dash, "width": 1.5},
        "name": name,
        "legendgroup": column,
        "showlegend": legend,
        "hovertemplate": f"{said}: {number(values[0])}<extra></extra>",
    }


def _grid(view: StudyView) -> tuple[dict, list[tuple[str, str]]]:
    """The layout of one panel per task (two columns) and each task's (x axis, y axis) names."""
    from plotly.subplots import make_subplots

    columns = min(2, len(view.tasks))
    rows = math.ceil(len(view.tasks) / columns)
    grid = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[label(task) for task in view.tasks],
        vertical_spacing=min(0.12, 0.5 / rows),
        horizontal_spacing=0.08,
    )
    grid.update_xaxes(range=[-0.03, 1.03], title_text="relative depth (layer / layers)")
    axes = [
        ("x" + ("" if i == 0 else str(i + 1)), "y" + ("" if i == 0 else str(i + 1))) for i in range(len(view.tasks))
    ]
    layout = grid.layout.to_plotly_json()
    layout.pop("template", None)
    return _layout(120 + 300 * rows, hovermode="closest", **layout), axes


def curves_figure(view: StudyView) -> dict:
    """Per task, every model's score by relative depth with its 95% band (and the lexical and majority
    baselines)."""
    layout, axes = _grid(view)
    data = []
    for combo in range(len(view.combos)):
        cells, shown = _cells(view, combo), set()
        for task, (xaxis, yaxis) in zip(view.tasks, axes, strict=True):
            traces = []
            for index, model in enumerate(view.models):
                pick = cells.get((task, model))
                points = view.curve(pick) if pick is not None else []
                if not points:
                    continue
                traces += [
                    _band(points, _colour(index), model),
                    _line(points, _colour(index), model, model not in shown),
                ]
                shown.add(model)
            for column in BASELINES:
                traces.append(_baseline(cells, task, column, column not in shown))
                shown.add(column)
            for trace in filter(None, traces):
                meta = {**trace.pop("meta", {}), "combo": combo}
                data.append({**trace, "xaxis": xaxis, "yaxis": yaxis, "visible": combo == view.default, "meta": meta})
    return {"data": data, "layout": layout}


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
    if found is not None and _same_curve(found, row) and found.get("expected_layer") == found.get("expected_layer"):
        text += f"<br>study summary: E[l] = {number(found['expected_layer'], 2)}"
    return text


def expected_figure(view: StudyView, summary: Summary) -> dict:
    """Per task, each model's expected layer E[l] over its number of layers (``table.expected_layer``)."""
    data = []
    for combo, (metric, _) in enumerate(view.combos):
        cells = _cells(view, combo)
        for index, model in enumerate(view.models):
            rows = [cells[task, model] for task in view.tasks if (task, model) in cells]
            if not rows:
                continue
            curves = [view.curve(row) for row in rows]
            values = [expected_layer([p["layer"] for p in c], [p["score"] for p in c], metric) for c in curves]
            relative = [v / r["n_layers"] if r["n_layers"] > 0 else math.nan for v, r in zip(values, rows, strict=True)]
            data.append(
                {
                    "type": "scatter",
                    "x": _plain(relative),
                    "y": [label(row["task"]) for row in rows],
                    "text": [_expected_hover(row, v, summary) for row, v in zip(rows, values, strict=True)],
                    "hovertemplate": "%{text}<extra></extra>",
                    "mode": "markers",
                    "orientation": "h",  # with the layout's scattermode "group": one row per task, models side by side
                    "offsetgroup": str(index),
                    "marker": {"color": _colour(index), "size": 12, "line": {"width": 1, "color": "white"}},
                    "name": label(model),
                    "visible": combo == view.default,
                    "meta": {"combo": combo},
                }
            )
    axes = {
        "xaxis": {"range": [-0.03, 1.03], "title": {"text": "expected layer E[l] / number of layers"}},
        "yaxis": {
            "type": "category",
            "categoryorder": "array",
            "categoryarray": [label(t) for t in view.tasks],
            "autorange": "reversed",
        },
    }
    return {"data": data, "layout": _layout(160 + 44 * len(view.tasks), scattermode="group", **axes)}

"""``featx report`` of the analyses beyond accuracy: a concept erasure (``featx erase``: ``X.erase.csv`` /
``.erase.json``), a neuron ranking (``featx neurons``: ``PREFIX.csv`` / ``.json`` / ``.ranking.csv``) and a
probe-complexity sweep (``featx probe --sweep``: ``PREFIX.sweep.csv`` / ``.json``). Each page holds the run's
settings, its figures and the tables ``featx`` prints for it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...errors import InputError, StoreError
from ...io import read_csv
from ...options import on_command_line
from ...safe_files import loads_json
from ..load import model_name
from ..text.erase import format_erase
from ..text.neurons import format_neurons
from ..text.sweep import format_sweep
from .parts import FIGURES, notes_html, page_html, pre_html, svg_of, svg_of_figure, table_html
from .sections import grouping

FORMATS = {"erase": format_erase, "neurons": format_neurons, "sweep": format_sweep}  # the printout of each kind

KINDS = ("probe", "erase", "neurons", "sweep")
REQUIRED = {
    "erase": ("pooling", "layer", "before", "after", "majority"),
    "neurons": ("layer", "fraction", "k", "selection", "ranking", "accuracy"),
    "sweep": ("pooling", "layer", "task", "family", "setting", "params", "accuracy"),
}
HOW = {
    "erase": "The erased label's probe accuracy by layer before (solid) and after (dashed) the erasure, with 95% "
    "bands; the eraser is fitted on each training part only. Erased layers should fall to the majority class "
    "(dotted grey), and well below the accuracy after removing as many random directions (faint dotted, the "
    "control): a drop the random removal shows too is the rank, not the label.",
    "amnesic": "The other label columns before (solid) and after (dashed) the erasure, and after removing as many "
    "random directions (dotted): a label that drops more than with random directions used the erased one.",
    "neurons": "Accuracy of a logreg probe retrained on only the top, bottom or random share of a layer's neurons "
    "(log scale), for both rankings; the black line and band is the probe on all neurons. Top neurons near it "
    "and bottom neurons far below mean the ranking found where the label lives.",
    "sweep": "Accuracy against the number of probe parameters (log scale) for every probe family, real labels "
    "(blue) and the control task (orange), with their Pareto fronts: the gap between the fronts is what the "
    "representation holds beyond what probe capacity alone reaches.",
}


def json_path(path: Path) -> Path:
    """The JSON beside an analysis CSV (``X.erase.csv``, ``X.amnesic.csv``, ``P.ranking.csv``, ``P.csv``)."""
    name = path.name
    if name.endswith(".amnesic.csv"):
        return path.with_name(name[: -len(".amnesic.csv")] + ".erase.json")
    if name.endswith(".ranking.csv"):
        return path.with_name(name[: -len(".ranking.csv")] + ".json")
    return path if path.suffix == ".json" else path.with_suffix(".json")


def _payload(path: Path) -> dict:
    target = json_path(path)
    if not target.exists():
        return {}
    try:
        payload = loads_json(target.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return {}
    return payload if isinstance(payload, dict) else {}


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def analysis_kind(path: Path) -> str:
    """Which command wrote ``path``: ``probe``, ``erase``, ``neurons`` or ``sweep`` (from its JSON)."""
    if not path.exists():
        raise StoreError(f"results file {path} does not exist", "give a results file written by featx")
    payload = _payload(path)
    meta = _dict(payload.get("meta"))
    settings = _dict(meta.get("settings"))
    if "amnesic" in payload or settings.get("kind") == "erasure":
        return "erase"
    if "selection" in payload and "width" in meta:
        return "neurons"
    if "ranks" in meta and "widths" in meta:
        return "sweep"
    return "probe"


def _command(kind: str) -> str:
    """What writes results of ``kind``, as the caller runs it: ``featx probe --sweep``, ``featx.probing.sweep``."""
    if on_command_line():
        return f"featx {kind if kind != 'sweep' else 'probe --sweep'}"
    return f"featx.probing.{kind}"


def _table(records, path: Path, kind: str) -> pd.DataFrame:
    table = pd.DataFrame(records if isinstance(records, list) else [])
    missing = [column for column in REQUIRED[kind] if column not in table.columns]
    if missing or table.empty:
        raise StoreError(
            f"{path} is not a complete featx {kind} results file"
            + (f": columns {', '.join(missing)} are missing" if missing else ": it has no rows"),
            f"run {_command(kind)} again to rewrite it",
        )
    return table


def load_analysis(path: Path, kind: str):
    """The result object of an erase, neurons or sweep run, rebuilt from its files (``FORMATS[kind]`` prints
    what the command printed)."""
    payload = _payload(path)
    meta = _dict(payload.get("meta"))
    if kind == "erase":
        from ...probing import EraseResult

        amnesic = pd.DataFrame(payload.get("amnesic") or [])
        return EraseResult(_table(payload.get("results"), path, kind), amnesic, meta, notes=meta.get("notes") or [])
    if kind == "neurons":
        from ...probing import NeuronResult

        ranking_path = json_path(path).with_suffix(".ranking.csv")
        try:
            ranking = read_csv(ranking_path)
        except (ValueError, OSError) as err:
            raise StoreError(f"cannot read {ranking_path} beside {path.name} ({err})") from None
        per_class = pd.DataFrame(payload.get("per_class") or [], columns=["layer", "class", "neurons", "weights"])
        selection = _table(payload.get("selection"), path, kind)
        return NeuronResult(ranking, selection, per_class, meta, notes=[str(note) for note in meta.get("notes") or []])
    from ...probing import SweepResult

    return SweepResult(_table(payload.get("results"), path, kind), meta)


def _settings_rows(meta: dict) -> pd.DataFrame:
    settings = _dict(meta.get("settings"))
    rows = [
        ("model", model_name(meta)),
        ("features file", meta.get("features_file")),
        ("label", meta.get("label")),
        ("classes", ", ".join(map(str, meta.get("classes") or [])) or None),
        ("rows", meta.get("n_rows")),
        ("evaluation", meta.get("evaluation")),
        ("grouped by", grouping(meta)),
        ("method", settings.get("method")),
        ("eraser fitted on", settings.get("fit_rows")),
        ("pooling", meta.get("pooling") or ", ".join(meta.get("poolings") or settings.get("poolings") or [])),
        ("layers", ", ".join(map(str, meta.get("layers") or settings.get("layers") or [])) or None),
        ("other label columns", ", ".join(meta.get("amnesic_labels") or []) or None),
        ("seed", meta.get("seed", settings.get("seed"))),
        ("seconds", meta.get("seconds")),
    ]
    return pd.DataFrame([(k, str(v)) for k, v in rows if v not in (None, "")], columns=["", "value"])


def _figures(result, kind: str) -> list[tuple[str, str, str]]:
    from ..figures.analyses import pareto_figure, plot_amnesic, plot_erasure, selection_figure

    if kind == "erase":
        figures = [("Before and after the erasure", svg_of(lambda ax: plot_erasure(result.table, ax)), HOW["erase"])]
        if not result.amnesic.empty:
            draw = lambda ax: plot_amnesic(result.amnesic, ax)  # noqa: E731
            figures.append(("Amnesic probing: the other labels", svg_of(draw), HOW["amnesic"]))
        return figures
    if kind == "neurons":
        return [("Neuron selection curves", svg_of_figure(selection_figure(result.selection, result.meta)), HOW[kind])]
    poolings = list(dict.fromkeys(result.table.pooling))
    return [
        (f"Pareto fronts ({pooling})", svg_of_figure(pareto_figure(result.table, result.meta, pooling)), HOW[kind])
        for pooling in poolings
    ]


def render_analysis(path: Path, kind: str, metric: str | None = None) -> str:
    """The report page of an erase, neurons or sweep results file."""
    if metric not in (None, "accuracy"):
        raise InputError(
            f"metric '{metric}' is not in these {kind} results; they have: accuracy",
            "leave --metric out for this file",
        )
    result = load_analysis(path, kind)
    meta = result.meta
    title = {"erase": "erasing", "neurons": "neurons for", "sweep": "probe-complexity sweep of"}[kind]
    try:  # a file edited by hand (a text where a number belongs, a missing setting) is refused in one line
        printed, figures = FORMATS[kind](result), _figures(result, kind)
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise StoreError(
            f"{path} is not a complete featx {kind} results file ({type(err).__name__}: {err})",
            f"run {_command(kind)} again to rewrite it",
        ) from None
    sections = [
        "<h2>The run</h2>",
        table_html(_settings_rows(meta)),
        notes_html([str(note) for note in meta.get("notes") or []]),
        "<h2>Figures</h2>",
        FIGURES,
        f"<h2>Tables (as featx {kind if kind != 'sweep' else 'probe --sweep'} prints them)</h2>",
        pre_html(printed),
    ]
    heading = f"{model_name(meta)} · {title} '{meta.get('label', '?')}'"
    return page_html(heading, f"{path.name} · featx {kind}", sections, figures)


__all__ = ["KINDS", "analysis_kind", "json_path", "load_analysis", "render_analysis"]

"""The ``featx intervene`` section of a probe report: when the results of ``featx intervene`` (``STEM.intervene-LABEL
.json``, ``STEM.steer-CLASS.json``) sit beside the probed features file, the report shows each one's figure and
table after the probe's own sections (read from the JSON files; nothing of featx.interventions is imported)."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ...safe_files import loads_json
from ..figures.intervene import intervention_figure
from ..text.format import interval, num, p_value
from .parts import embeddable_svg, notes_html, svg_of_figure, table_html
from .sections import grouping

HOW = {
    "intervene": "The edited label's probe accuracy at every stored layer from the edit up: before the edit (solid), "
    "after it (dashed) and after removing as many random directions instead (dotted), with 95% bands. After near the "
    "majority line at the edited layer is the eraser's guarantee; after rising again above it means the layers above "
    "re-derive the label; the control staying near before means the fall is the label's, not any edit's.",
    "steer": "The share of rows the bundle, read above the edit, moves toward the class as alpha grows, along the "
    "probe's direction and along a random direction of the same norm, with 95% bands.",
}
SHOWN = {
    "intervene": [
        "edit_layer",
        "name",
        "role",
        "layer",
        "majority",
        "before",
        "after",
        "control",
        "p after",
        "p control",
        "after at chance",
    ],
    "steer": ["alpha", "direction", "moved", "flipped", "score_change", "n_rows"],
}
WHOLE = ("edit_layer", "layer", "rank", "n_rows", "read_at", "alpha")  # layers, counts, alphas: 2, not 2.000
# a value with its 95% interval, as the printout gives it (a dose-response's moved, flipped and score change too)
INTERVALS = ("before", "after", "control", "moved", "flipped", "score_change")


def _with_p_values(table: pd.DataFrame) -> pd.DataFrame:
    """``p after`` and ``p control`` as the printout gives them: a probe's Holm-adjusted paired tests, the loss
    row's paired t-tests (which have no Holm column)."""
    if "p_after" not in table.columns:
        return table
    probe = table["kind"] == "probe" if "kind" in table.columns else pd.Series(True, index=table.index)
    table = table.copy()
    for name, key in (("p after", "p_after"), ("p control", "p_control")):
        adjusted = table[f"{key}_holm"] if f"{key}_holm" in table.columns else table[key]
        table[name] = adjusted.where(probe, table[key])
    return table


def intervene_files(meta: dict) -> list[Path]:
    """The intervene results beside the probed features file (none when it is gone)."""
    features = meta.get("features_file") or meta.get("features")
    if not features or not Path(str(features)).exists():
        return []
    path = Path(str(features))
    stem = path.name[: -len(".features.h5")] if path.name.endswith(".features.h5") else path.stem
    found = sorted(path.parent.glob(f"{stem}.intervene-*.json")) + sorted(path.parent.glob(f"{stem}.steer-*.json"))
    return [item for item in found if item.is_file()]


def _cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as text, as the printout writes it: layers and counts whole, ``before``, ``after`` and ``control``
    (a dose-response's ``moved``, ``flipped`` and ``score_change``) with their intervals, p-values as ``<.001``
    below 0.001, ``after at chance`` as yes or blank (a probe row's, read against its ``majority``), other numbers
    to three decimals; ``-`` where missing."""
    out = frame.copy()
    for column in frame.columns:
        if column in WHOLE:
            out[column] = frame[column].map(lambda v: "-" if v != v else f"{v:g}")
        elif column in INTERVALS and f"{column}_low" in frame.columns:
            out[column] = [
                num(v) if low != low else interval(v, low, high)
                for v, low, high in zip(frame[column], frame[f"{column}_low"], frame[f"{column}_high"], strict=True)
            ]
        elif column.startswith("p "):
            out[column] = frame[column].map(p_value)
        elif frame[column].dtype.kind == "f":
            out[column] = frame[column].map(num)
    if "at_chance" in frame.columns:
        probe = frame["kind"] == "probe" if "kind" in frame.columns else pd.Series(True, index=frame.index)
        chance = zip(probe, frame["at_chance"], strict=True)
        out["after at chance"] = ["yes" if is_probe and value is True else "" for is_probe, value in chance]
    return out


def _one(path: Path, index: int) -> str:
    try:
        payload = loads_json(path.read_text(encoding="utf-8"))
        meta, table = payload["meta"], pd.DataFrame(payload["results"])
        kind = "steer" if meta.get("kind") == "steer" else "intervene"
        table = table.astype(
            {
                column: float
                for column in table.columns
                if column not in ("edit", "kind", "name", "role", "direction", "at_chance", "significant")
            }
        )
    except (OSError, ValueError, KeyError, TypeError):
        return f'<p class="muted">{html.escape(path.name)} is not a readable featx intervene result.</p>'
    caption, cells = html.escape(HOW[kind]), _cells(_with_p_values(table))
    svg = embeddable_svg(svg_of_figure(intervention_figure(table, meta)), f"iv{index}-")
    title = (
        f"steering toward {meta.get('toward')} at layer {meta.get('at')}"
        if kind == "steer"
        else (f"{meta.get('edit')} of '{meta.get('label')}' at layers {meta.get('at')}")
    )
    grouped = grouping(meta)
    return "\n".join(
        [
            f"<h3>{html.escape(title)} ({html.escape(path.name)})</h3>",
            *([f'<p class="muted">grouped by {html.escape(grouped)}</p>'] if grouped else []),
            f"<figure>{svg}<figcaption><strong>How to read this.</strong> {caption}</figcaption></figure>",
            table_html(cells[[c for c in SHOWN[kind] if c in cells.columns]]),
            notes_html([str(note) for note in meta.get("notes") or []] + _old_control(meta, kind)),
        ]
    )


def _old_control(meta: dict, kind: str) -> list[str]:
    """A note for a result of an earlier featx intervene, whose random control was uncentred (``x - Q Q^T x``) where
    the eraser is centred: its control moved the states further than the edit's centring would."""
    if kind == "steer" or "control_centring" in meta:
        return []
    return [
        "written by an earlier featx intervene: its random control was uncentred, not centred on the edit's mean as "
        "the eraser is (rerun featx intervene for the control of today's featx)"
    ]


def intervene_sections(meta: dict) -> list[str]:
    """The section (a heading, then each result's figure and table), or nothing without results."""
    files = intervene_files(meta)
    if not files:
        return []
    return ["<h2>Inside the model (featx intervene)</h2>", *(_one(path, i) for i, path in enumerate(files))]


__all__ = ["intervene_files", "intervene_sections"]

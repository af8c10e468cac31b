"""What ``featx intervene`` returns and writes: one table (``PREFIX.csv`` through ``featx.io.write_csv``, and
``PREFIX.json`` with the run's settings), printed by ``format_table``; the figure is ``featx.report``'s."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

TABLE_COLUMNS = [
    "edit",
    "edit_layer",
    "rank",
    "kind",
    "name",
    "role",
    "layer",
    "majority",
    "before",
    "before_low",
    "before_high",
    "after",
    "after_low",
    "after_high",
    "control",
    "control_low",
    "control_high",
    "p_after",
    "p_after_holm",
    "p_control",
    "p_control_holm",
    "at_chance",
    "significant",
]
STEER_COLUMNS = [
    "alpha",
    "direction",
    "layer",
    "read_at",
    "moved",
    "moved_low",
    "moved_high",
    "score_change",
    "score_change_low",
    "score_change_high",
    "n_rows",
]


def _safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _safe(value.item())
    return value


@dataclass
class InterveneResult:
    """The table (``TABLE_COLUMNS``, or ``STEER_COLUMNS`` for a dose-response), the run's settings and notes."""

    table: pd.DataFrame
    meta: dict
    prefix: Path
    notes: list[str] = field(default_factory=list)

    @property
    def csv_path(self) -> Path:
        return self.prefix.with_name(self.prefix.name + ".csv")

    @property
    def json_path(self) -> Path:
        return self.prefix.with_name(self.prefix.name + ".json")

    @property
    def figure_path(self) -> Path:
        return self.prefix.with_name(self.prefix.name + ".png")

    def write(self) -> list[Path]:
        """Write the CSV and the JSON beside the prefix; returns their paths."""
        from ..io import write_csv
        from ..safe_files import atomic_write_text

        write_csv(self.table, self.csv_path)
        rows = [{key: _safe(value) for key, value in row.items()} for row in self.table.to_dict("records")]
        payload = {"meta": self.meta, "results": rows}
        atomic_write_text(self.json_path, json.dumps(payload, indent=1, allow_nan=False, default=str))
        return [self.csv_path, self.json_path]


def _interval(row, key: str) -> str:
    value, low, high = row[key], row[f"{key}_low"], row[f"{key}_high"]
    if value != value:
        return "-"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]" if low == low else f"{value:.3f}"


def _p_values(row) -> str:
    """``  p AFTER / CONTROL``: a probe's Holm-adjusted paired tests, the loss's paired t-tests; "" for the rest."""
    adjusted = row.kind == "probe"
    after, control = (row[f"{key}_holm" if adjusted else key] for key in ("p_after", "p_control"))
    if after != after:
        return ""
    return f"  p {_p(after)} / {_p(control)}"


def _p(value: float) -> str:
    """A p-value as every featx table writes it: three decimals, ``<.001`` below 0.001 (not ``0.00999``)."""
    return "-" if value != value else "<.001" if value < 0.001 else f"{value:.3f}"


def _majority(row) -> str:
    """``  majority M`` beside a probe row (``: after at chance`` when the after interval reaches it); "" else."""
    if row.kind != "probe" or row.majority != row.majority:
        return ""
    return f"  majority {row.majority:.3f}" + (": after at chance" if bool(row.at_chance) else "")


def _format_steering(result: InterveneResult) -> str:
    """The dose-response as printed: where the direction came from and which rows are measured, then per alpha and
    direction the moved share, the share flipped (read through contrast answers) and the score change, then the
    run's notes."""
    table, meta = result.table, result.meta
    reader = meta.get("reader") or f"the bundle at layer {meta.get('read_at')}"
    measured = f"; measured on {meta['measured_rows']}" if meta.get("measured_rows") else ""
    by = f"; by whole groups of {meta['group']}" if meta.get("group") else ""  # as erase's header says it
    lines = [
        f"steering toward {meta.get('toward')} at layer {meta.get('at')}, read by {reader} "
        f"({meta.get('direction_source')}){measured}; probe / random direction, 95% intervals{by}"
    ]
    for _, row in table.iterrows():
        flipped = f"  flipped {_interval(row, 'flipped')}" if "flipped" in table.columns else ""
        lines.append(
            f"  alpha {row.alpha:g} {row.direction:<7} moved {_interval(row, 'moved')}{flipped}  "
            f"score change {_interval(row, 'score_change')}"
        )
    return "\n".join(lines + [f"note: {note}" for note in result.notes])


def format_table(result: InterveneResult) -> str:
    """The table as ``featx intervene`` prints it."""
    table = result.table
    if "alpha" in table.columns:
        return _format_steering(result)
    grouped = result.meta.get("group")
    by = f"; by whole groups of {grouped}" if grouped else ""  # --group: every interval and test takes whole groups
    lines = [
        f"{result.meta.get('edit')} of '{result.meta.get('label')}' ({result.meta.get('pooling')} pooling); "
        "before / after / random control, 95% intervals; p: after vs before / after vs control, Holm-adjusted "
        f"(the loss: paired t-tests); majority: the majority class on the probes' test rows{by}"
    ]
    for layer, group in table.groupby("edit_layer", sort=False):
        lines.append(f"edit at layer {layer} (rank {group['rank'].iloc[0]}):")
        for _, row in group.iterrows():
            p = _p_values(row) + _majority(row)
            lines.append(
                f"  {row['name'][:28]:<28} L{row.layer:<3} {_interval(row, 'before'):<24} "
                f"{_interval(row, 'after'):<24} {_interval(row, 'control'):<24}{p}"
            )
    return "\n".join(lines + [f"note: {note}" for note in result.notes])


__all__ = ["STEER_COLUMNS", "TABLE_COLUMNS", "InterveneResult", "format_table"]

"""The printout of ``featx probe --structural``: the baseline, one row per (pooling, layer), and the layer chosen
on the training sentences beside the best on the test sentences."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..structural import no_choice_reason
from .format import grid, num, row_interval

NAMES = {"uuas": "UUAS", "dspr": "DSpr", "root_accuracy": "root acc.", "nspr": "NSpr"}


def _header(meta: dict) -> list[str]:
    folds = meta["evaluation"]
    return [
        f"structural probe: {meta['structural']} (rank {meta['rank']}), {folds} over {meta['n_sentences']} "
        f"sentences ({meta['n_words']} words); {meta['punctuation']}",
    ]


def _measures(row: Any, metrics: list[str]) -> str:
    return ", ".join(f"{NAMES[name]} {row_interval(row, name)}" for name in metrics)


def _choice_line(table: pd.DataFrame, meta: dict, baseline: pd.Series) -> list[str]:
    metrics = meta["metrics"]
    chosen, best = table[table.is_best], table[table.is_best_on_test]
    if chosen.empty:
        return [no_choice_reason(str(meta.get("structural")))]
    row = chosen.iloc[0]
    lines = [
        f"chosen on the training sentences ({meta['selected_by']}): layer {row.layer}, {row.pooling}: "
        f"{_measures(row, metrics)} on the test sentences; baseline {_measures(baseline, metrics)}"
    ]
    if not best.empty and best.index[0] != chosen.index[0]:
        other = best.iloc[0]
        name = meta["selection_metric"]
        lines.append(
            f"best on the test sentences (not a fair choice): layer {other.layer}, {other.pooling}, "
            f"{NAMES.get(name, name)} {num(other[name])}"
        )
    return lines


def format_structural(result: Any) -> str:
    """The terminal table of a ``StructuralResult``."""
    table, meta = result.table, result.meta
    metrics = meta["metrics"]
    baseline = table[table.kind != "probe"].iloc[0]
    lines = _header(meta)
    lines.append(f"baseline, {meta['baseline']}: {_measures(baseline, metrics)}")
    lines.append("")
    probes = table[table.kind == "probe"]
    header = ["pooling", "layer", *(f"{NAMES[name]} [95% CI]" for name in metrics), "selection", "epochs", "fit s"]
    rows = []
    for row in probes.itertuples():
        layer = f"{row.layer}{' *' if row.is_best else ''}"
        cells = [row_interval(row, name) for name in metrics]
        fit = [num(row.selection_score), f"{row.epochs:.0f}", f"{row.fit_seconds:.1f}"]
        rows.append([row.pooling, layer, *cells, *fit])
    lines += grid(header, rows)
    lines.append("")
    lines += _choice_line(table, meta, baseline)
    return "\n".join(lines)

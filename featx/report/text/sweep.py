"""The summary and files of ``featx probe --sweep``: which layers stay best across probe complexities,
which layer rankings flip, and the Pareto fronts. Every pick (a layer's best and simplest probe, a probe's best
layer, the control task's best, the reference C) compares the rows' ``selection_score``, the accuracy on each
training part's held-out rows, never the test rows (``best_index``; results written without the column fall back
to the test accuracy and say so)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pandas as pd

from ..figures.analyses import pareto_front
from .format import best_index, chosen_how, grid, num, row_interval

FLIP_MARGIN = 0.01  # a pair of layers flips only if both orders are by more than this accuracy
SIMPLEST_MARGIN = 0.01  # the simplest probe is the one with fewest parameters within this of the best's score
PER_LAYER = ["layer", "best [95% CI]", "select.", "best probe", f"simplest within {SIMPLEST_MARGIN} (params)"]
PER_LAYER += ["front", "control best"]


def score_column(rows: pd.DataFrame) -> str:
    """The column the sweep's picks compare: ``selection_score`` (each training part's held-out rows) when the
    rows hold one, else ``accuracy`` on the test rows (results written before it); as ``best_index`` picks."""
    return "selection_score" if "selection_score" in rows and rows.selection_score.notna().any() else "accuracy"


def reference_setting(real: pd.DataFrame) -> str:
    """The logreg C with the best mean selection score over layers (chosen on the training part, as ``featx
    probe``'s C search is; the best mean test accuracy in results written without it)."""
    logreg = real[real.family == "logreg"]
    return logreg.groupby("setting")[score_column(logreg)].mean().idxmax()


def flips(real: pd.DataFrame, reference: str) -> dict[str, list[tuple[int, int]]]:
    """Per setting, the layer pairs ordered the other way round than under ``reference`` (both by > margin)."""
    by_setting = {setting: part.set_index("layer").accuracy for setting, part in real.groupby("setting", sort=False)}
    base = by_setting[reference]
    out = {}
    for setting, accuracy in by_setting.items():
        pairs = [
            (a, b)
            for a, b in combinations(base.index, 2)
            if abs(base[a] - base[b]) > FLIP_MARGIN
            and abs(accuracy[a] - accuracy[b]) > FLIP_MARGIN
            and (base[a] - base[b]) * (accuracy[a] - accuracy[b]) < 0
        ]
        out[setting] = pairs
    return out


def simplest_within(real: pd.DataFrame, margin: float = SIMPLEST_MARGIN) -> pd.Series:
    """The probe with the fewest parameters whose score (``score_column``: the selection score when the rows hold
    one) is within ``margin`` of the best row's (``best_index``); the first in table order among equals."""
    key = score_column(real)
    best = real.loc[best_index(real), key]
    return real[real[key] >= best - margin].sort_values("params", kind="stable").iloc[0]


def _per_layer(rows: pd.DataFrame) -> list[list[str]]:
    table = []
    for layer, part in rows.groupby("layer", sort=True):
        real, control = part[part.task == "real"], part[part.task == "control"]
        best = real.loc[best_index(real)]
        simplest = simplest_within(real)
        front = pareto_front(real)
        table.append(
            [
                str(layer),
                row_interval(best),
                num(best.get("selection_score")),
                f"{best.family} {best.setting}",
                f"{simplest.family} {simplest.setting} ({int(simplest.params):,})",
                str(len(front)),
                num(control.loc[best_index(control)].accuracy) if not control.empty else "-",
            ]
        )
    return table


def _per_setting(real: pd.DataFrame, reference: str, flipped: dict) -> list[list[str]]:
    table = []
    for (family, setting), part in real.groupby(["family", "setting"], sort=False):
        best = part.loc[best_index(part)]
        pairs = flipped[setting]
        shown = ", ".join(f"{a}/{b}" for a, b in pairs[:4]) + (" ..." if len(pairs) > 4 else "")
        table.append(
            [
                family,
                setting,
                f"{int(best.params):,}",
                str(best.layer),
                row_interval(best),
                num(best.get("selection_score")),
                "reference" if setting == reference else (f"{len(pairs)}: {shown}" if pairs else "0"),
            ]
        )
    return table


def format_sweep(result) -> str:
    meta, table = result.meta, result.table
    lines = [
        f"probe-complexity sweep of '{meta['label']}' on {meta['features_file']} ({meta['model']}); "
        f"evaluation: {meta['evaluation']}; control task = permuted labels, same probes"
    ]
    for pooling, rows in table.groupby("pooling", sort=False):
        real = rows[rows.task == "real"]
        reference = reference_setting(real)
        flipped = flips(real, reference)
        how, score = chosen_how(real), "selection score" if score_column(real) == "selection_score" else "accuracy"
        lines += [
            "",
            f"pooling {pooling}: per layer, the best probe ({how}) with its test accuracy"
            + (" and selection score" if score != "accuracy" else "")
            + f", the simplest probe whose {score} is within {SIMPLEST_MARGIN} of it, the Pareto front's size and "
            "the control task's best (its test accuracy, picked the same way)",
        ]
        lines += grid(PER_LAYER, _per_layer(rows))
        lines += [
            "",
            f"pooling {pooling}: the best layer of each probe ({how}), and the layer pairs whose test accuracies' "
            f"order flips against the reference (logreg {reference}, the C with the best mean {score} over layers) "
            f"by more than {FLIP_MARGIN} both ways",
        ]
        lines += grid(
            ["family", "setting", "params", "best layer", "accuracy [95% CI]", "select.", "flipped pairs"],
            _per_setting(real, reference, flipped),
        )
        bests = real.loc[[best_index(part) for _, part in real.groupby("setting", sort=False)]].layer.value_counts()
        lines.append(
            "layers best across complexities: "
            + ", ".join(f"layer {layer} for {count} of {bests.sum()} probes" for layer, count in bests.items())
        )
        changed = [setting for setting, pairs in flipped.items() if pairs]
        lines.append(
            f"rankings that flip: {len(changed)} of {len(flipped)} probes reorder some layers"
            + (f" ({', '.join(changed)})" if changed else "")
        )
    notes = [str(note) for note in meta.get("notes") or []]  # the labels file joined, the groups kept whole
    lines += [""] + [f"note: {note}" for note in notes] if notes else []
    if result.paths:
        lines += ["", "wrote " + ", ".join(str(path) for path in result.paths)]
    return "\n".join(lines)


def save_sweep_figures(result) -> list[Path]:
    """The Pareto figures of a written ``SweepResult`` (``PREFIX.png``, or one per pooling), added to its
    ``paths``; ``featx probe --sweep`` writes them after the data files."""
    from ..figures.analyses import save_pareto_figure

    if result.prefix is None:
        return []
    poolings = result.meta["poolings"]
    figures = [
        save_pareto_figure(
            result.table,
            result.meta,
            Path(f"{result.prefix}.png" if len(poolings) == 1 else f"{result.prefix}.{pooling}.png"),
            pooling,
        )
        for pooling in poolings
    ]
    figures = [path for figure in figures for path in (figure, figure.with_suffix(".svg"))]  # both formats
    result.paths.extend(figures)
    return figures

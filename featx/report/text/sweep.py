"""The summary and files of ``featx probe --sweep``: which layers stay best across probe complexities,
which layer rankings flip, and the Pareto fronts."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pandas as pd

from ..figures.analyses import pareto_front
from .format import best_index, chosen_how, grid, num, row_interval

FLIP_MARGIN = 0.01  # a pair of layers flips only if both orders are by more than this accuracy


def reference_setting(real: pd.DataFrame) -> str:
    """The logreg C with the best mean accuracy over layers: what ``featx probe``'s C search aims at."""
    logreg = real[real.family == "logreg"]
    return logreg.groupby("setting").accuracy.mean().idxmax()


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


def _per_layer(rows: pd.DataFrame) -> list[list[str]]:
    table = []
    for layer, part in rows.groupby("layer", sort=True):
        real, control = part[part.task == "real"], part[part.task == "control"]
        best = real.loc[best_index(real)]
        simplest = real[real.accuracy >= best.accuracy - 0.01].sort_values("params").iloc[0]
        front = pareto_front(real)
        table.append(
            [
                str(layer),
                row_interval(best),
                f"{best.family} {best.setting}",
                f"{simplest.family} {simplest.setting} ({int(simplest.params):,})",
                str(len(front)),
                num(control.accuracy.max()) if not control.empty else "-",
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
        lines += [
            "",
            f"pooling {pooling}: per layer, the best probe ({chosen_how(real)}), the simplest probe within 0.01 "
            "of it, the Pareto front's size and the control task's best",
        ]
        lines += grid(
            ["layer", "best [95% CI]", "best probe", "simplest within 0.01 (params)", "front", "control best"],
            _per_layer(rows),
        )
        lines += [
            "",
            f"pooling {pooling}: the best layer of each probe ({chosen_how(real)}), and the layer pairs whose "
            "order flips "
            f"against the reference (logreg {reference}) by more than {FLIP_MARGIN} both ways",
        ]
        lines += grid(
            ["family", "setting", "params", "best layer", "accuracy [95% CI]", "flipped pairs"],
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

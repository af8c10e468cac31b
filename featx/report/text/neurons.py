"""Tables and files of ``featx neurons``: the rankings side by side, their overlap, the selection table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .format import best_index, chosen_how, grid, num, p_value, row_interval

CHOICES = [("top", "probe"), ("top", "anova"), ("random", "-"), ("bottom", "probe"), ("bottom", "anova")]


def _cell(selection: pd.DataFrame, layer, fraction, choice) -> pd.Series | None:
    rows = selection[
        (selection.layer == layer)
        & np.isclose(selection.fraction, fraction)
        & (selection.selection == choice[0])
        & (selection.ranking == choice[1])
    ]
    return None if rows.empty else rows.iloc[0]


def _all(selection: pd.DataFrame, layer) -> pd.Series:
    return selection[(selection.layer == layer) & (selection.selection == "all")].iloc[0]


def best_layer(selection: pd.DataFrame) -> int:
    """The layer whose neurons are listed: the probe on all neurons chosen on the training part when the
    selection table holds ``selection_score``, else the one best on the test rows (``chosen_how`` says which)."""
    full = selection[selection.selection == "all"]
    return int(full.loc[best_index(full)].layer)


def overlap(ranking: pd.DataFrame, layer, k: int) -> int:
    rows = ranking[ranking.layer == layer]
    return len(set(rows[rows.probe_rank <= k].neuron) & set(rows[rows.anova_rank <= k].neuron))


def _ranking_lines(result, layer) -> list[str]:
    rows = result.ranking[result.ranking.layer == layer]
    listed = result.meta["listed"]
    by_probe = rows.sort_values("probe_rank").head(listed)
    by_anova = rows.sort_values("anova_rank").head(listed)
    table = [
        [
            str(i + 1),
            str(p.neuron),
            num(p.probe_score, 4),
            str(p.anova_rank),
            str(a.neuron),
            f"{a.anova_f:.1f}",
            str(a.probe_rank),
        ]
        for i, (p, a) in enumerate(zip(by_probe.itertuples(), by_anova.itertuples(), strict=False))
    ]
    lines = [f"top {listed} neurons of layer {layer}: elastic-net probe (summed |weight|) and ANOVA F, side by side"]
    lines += grid(["rank", "probe: neuron", "|w|", "its F rank", "anova: neuron", "F", "its probe rank"], table)
    width = result.meta["width"]
    shares = [
        f"top {f:g} ({max(1, int(round(f * width)))}): {overlap(result.ranking, layer, max(1, int(round(f * width))))}"
        for f in result.meta["fractions"]
    ]
    lines.append(
        f"overlap of the two rankings (neurons in both top sets): {'; '.join(shares)}; "
        f"top {listed}: {overlap(result.ranking, layer, listed)}"
    )
    classes = result.per_class[result.per_class.layer == layer]
    if len(classes) > 2:  # multi-class labels; a binary label's two classes mirror each other
        lines.append("top neurons per class (probe weight of the class minus the mean over classes):")
        lines += [f"  {row['class']}: {', '.join(map(str, row.neurons))}" for _, row in classes.iterrows()]
    return lines


def _p_cell(cell: pd.Series | None) -> str:
    """The Holm-adjusted p of a top k against the random k (``!``: significant); ``-`` in results without it."""
    if cell is None or "p_vs_random_holm" not in cell:
        return "-"
    return p_value(cell["p_vs_random_holm"], cell.get("significant_vs_random"))


def _random_header(result, name: str = "random") -> str:
    """``name`` of the random baseline, with the number of draws it is the mean of (``--draws``)."""
    draws = result.meta.get("random_draws")
    return f"{name} (mean of {draws})" if draws and draws > 1 else name


def _selection_lines(result, layer) -> list[str]:
    selection = result.selection
    names = [_random_header(result) if s == "random" else f"{s} ({r})" for s, r in CHOICES]
    header = ["fraction", "k", *names, "p vs random (probe)", "p vs random (anova)"]
    table = []
    for fraction in result.meta["fractions"]:
        cells = [_cell(selection, layer, fraction, choice) for choice in CHOICES]
        k = next(int(c.k) for c in cells if c is not None)
        intervals = [row_interval(c) if c is not None else "-" for c in cells]
        table.append([f"{fraction:g}", str(k), *intervals, _p_cell(cells[0]), _p_cell(cells[1])])
    full = _all(selection, layer)
    return (
        [
            f"selection at layer {layer}: logreg retrained on only k neurons (rankings refitted on each training "
            "part) [95% CI]"
        ]
        + grid(header, table)
        + [f"all {int(full.k)} neurons: {row_interval(full)}{_majority(full)}"]
        + _p_note(result)
    )


def _p_note(result, layers: bool = False) -> list[str]:
    """What the p columns test: of the layer's table, or (``layers``) of the across-layers table."""
    if "p_vs_random_holm" not in result.selection:
        return []
    test = result.meta.get("test_vs_random")  # results written before it: the Monte Carlo test of a split
    if test is None:
        test = (
            "corrected resampled t-test over the folds"
            if "cv" in result.meta["evaluation"]
            else "paired sign-flip test"
        )
    draws = result.meta.get("random_draws")
    random = f"the random k (mean of {draws} draws)" if draws and draws > 1 else "the random k"
    over = "each layer's top-k tests, as in the layer's table" if layers else "the layer's top-k tests"
    return [f"p: top k against {random} on the same test rows ({test}), Holm over {over}; ! = significant at 0.05"]


def _majority(row: pd.Series) -> str:
    """The majority class beside the probes (results written before it have no such column)."""
    value = row.get("majority")
    return "" if value is None or pd.isna(value) else f"; majority class: {num(value)}"


def _layers_lines(result) -> list[str]:
    selection, ranking = result.selection, result.ranking
    fraction = 0.05 if 0.05 in result.meta["fractions"] else result.meta["fractions"][0]
    table = []
    for layer in result.meta["layers"]:
        cells = [_cell(selection, layer, fraction, choice) for choice in CHOICES[:3]]
        top = ranking[ranking.layer == layer].sort_values("probe_rank").neuron.head(5)
        table.append(
            [
                str(layer),
                row_interval(_all(selection, layer)),
                *[row_interval(c) for c in cells],
                _p_cell(cells[0]),
                _p_cell(cells[1]),
                ", ".join(map(str, top)),
            ]
        )
    header = [
        "layer",
        "all neurons",
        f"top {fraction:g} (probe)",
        f"top {fraction:g} (anova)",
        _random_header(result, f"random {fraction:g}"),
        "p vs random (probe)",
        "p vs random (anova)",
        "top 5 neurons (probe)",
    ]
    lines = ["across layers (selection curve per layer in the figure):"] + grid(header, table)
    majority = _majority(_all(selection, result.meta["layers"][0])).removeprefix("; ")
    return lines + ([majority] if majority else []) + _p_note(result, layers=True)


def format_neurons(result) -> str:
    meta = result.meta
    best = best_layer(result.selection)
    lines = [
        f"neurons of {meta['features_file']} ({meta['model']}) for '{meta['label']}': pooling {meta['pooling']}, "
        f"width {meta['width']}, classes {', '.join(meta['classes'])}",
        f"evaluation: {meta['evaluation']}; rankings and probes are fitted on training parts only",
        "",
    ]
    if len(meta["layers"]) > 1:
        how = chosen_how(result.selection[result.selection.selection == "all"])
        lines += _layers_lines(result) + ["", f"best layer (all neurons): {best} ({how})", ""]
    lines += _ranking_lines(result, best) + [""] + _selection_lines(result, best)
    lines += [""] + [f"note: {note}" for note in result.notes] if result.notes else []
    if result.paths:
        lines += ["", "wrote " + ", ".join(str(path) for path in result.paths)]
    return "\n".join(lines)


def save_neurons_figure(result) -> list[Path]:
    """The selection-curve figure of a written ``NeuronResult`` (``PREFIX.png`` and ``.svg``, beside its CSV and JSON),
    added to its ``paths``; ``featx neurons`` writes it after the data files."""
    from ..figures.analyses import save_selection_figure

    if result.prefix is None:
        return []
    figure = save_selection_figure(result.selection, result.meta, Path(f"{result.prefix}.png"))
    written = [figure, figure.with_suffix(".svg")]  # both formats, as every featx figure
    result.paths.extend(written)
    return written

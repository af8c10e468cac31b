"""The terminal table of a regression probing run: one block per features file, site and probe."""

from __future__ import annotations

import pandas as pd

from .format import general, grid, interval, num, p_value
from .probe import (
    LEXICAL_NAME,
    block_title,
    control_value,
    left_out,
    metric_label,
    pooling_rows,
    split_test,
    versus_best,
)


def _cells(row, metric: str) -> list[str]:
    return [
        row.pooling,
        f"{row.layer_spec}{' *' if row.is_best else ''}",
        interval(row.r2, row.r2_low, row.r2_high),
        interval(row.spearman, row.spearman_low, row.spearman_high),
        num(row.pearson),
        num(row.mae),
        num(control_value(row, metric, "r2")),
        num(row.selectivity, signed=True),
        general(row.alpha),
        f"{row.fit_seconds:.1f}",
        p_value(row.p_vs_best_holm, row.significant_vs_best),
        p_value(row.p_vs_prev_holm, row.significant_vs_prev),
    ]


def _lexical_scores(row, metric: str) -> str:
    """The lexical row's score in the chosen metric (with its interval) first, then R² or Spearman."""
    first = f"{metric_label(metric)} {interval(row[metric], row[f'{metric}_low'], row[f'{metric}_high'])}"
    other = "spearman" if metric == "r2" else "r2"
    return f"{first}, {metric_label(other)} {num(row[other])}"


HEADER = [
    "pooling",
    "layer",
    "R² [95% CI]",
    "Spearman [95% CI]",
    "Pearson",
    "MAE",
    "control",
    "select.",
    "alpha",
    "fit s",
    "p vs best",
    "p vs prev",
]


def _block(block: pd.DataFrame, metric: str) -> list[str]:
    header = [*HEADER]
    if metric != "r2":  # the control column is in the chosen metric, as selectivity is
        header[HEADER.index("control")] = f"control {metric_label(metric)}"
    return grid(header, pooling_rows(block, lambda row: _cells(row, metric)))


def format_table(table: pd.DataFrame, meta: dict) -> str:
    """The terminal table of a regression run: the target's spread, the training mean, one block per probe."""
    target = meta.get("target") or {}
    lines = [
        f"probing {meta.get('features_file')} ({meta.get('model')})",
        f"label '{meta.get('label')}' (regression): {meta.get('n_labelled')} rows, mean {num(target.get('mean'))}, "
        f"sd {num(target.get('std'))}, range {num(target.get('min'))}-{num(target.get('max'))}"
        + left_out(meta, "a value"),
        f"evaluation: {meta.get('evaluation')}, seed {meta.get('seed')}; intervals are 95% "
        + ("bootstrap over the test rows" if meta.get("evaluation") == "split" else "t-intervals over folds"),
    ]
    baseline = table[table.kind == "baseline"]
    if not baseline.empty:
        row = baseline.iloc[0]
        lines.append(f"training mean: R² {interval(row.r2, row.r2_low, row.r2_high)}, MAE {num(row.mae)}")
    metric = meta.get("metric") or "r2"
    lexical = table[table.kind == "lexical"]
    if not lexical.empty:
        row = lexical.iloc[0]
        lines.append(
            f"{LEXICAL_NAME} ({row.classifier}): {_lexical_scores(row, metric)}, alpha {general(row.alpha)}; "
            f"{versus_best(row, table, metric, meta)}"
        )
    probes = table[~table.kind.isin(["baseline", "lexical"])]
    for (features, site, classifier), block in probes.groupby(["features", "site", "classifier"], sort=False):
        lines += ["", block_title(features, site, classifier, {}), *_block(block, metric)]
    on_errors = metric == "r2"  # on the same rows R² differences are squared-error differences
    test = (
        split_test(metric, "groups" if meta.get("group") else "rows")
        if meta.get("evaluation") == "split"
        else f"corrected resampled t-test of per-fold {'MSE' if on_errors else metric_label(metric)} (Nadeau & Bengio)"
    )
    lines += [
        "",
        f"* best layer of each pooling, chosen on the training part (selection_score, {meta.get('metric') or 'r2'}); "
        "the columns score the test rows; control = same probe on permuted targets, select. = "
        f"{meta.get('metric') or 'r2'} - control",
        f"p vs best / p vs prev: {test}, Holm-adjusted; ! = significant at 0.05 after Holm",
    ]
    return "\n".join(lines)

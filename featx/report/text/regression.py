"""The terminal table of a regression probing run: one block per features file, site and probe."""

from __future__ import annotations

import pandas as pd

from .probe import _c, _num, _p


def _interval(value, low, high) -> str:
    return f"{_num(value)} [{_num(low)}, {_num(high)}]"


def _cells(row) -> list[str]:
    return [
        row.pooling,
        f"{row.layer_spec}{' *' if row.is_best else ''}",
        _interval(row.r2, row.r2_low, row.r2_high),
        _interval(row.spearman, row.spearman_low, row.spearman_high),
        _num(row.pearson),
        _num(row.mae),
        _num(row.control_r2),
        _num(row.selectivity, signed=True),
        _c(row.alpha),
        f"{row.fit_seconds:.1f}",
        _p(row.p_vs_best_holm, row.significant_vs_best),
        _p(row.p_vs_prev_holm, row.significant_vs_prev),
    ]


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


def _block(block: pd.DataFrame) -> list[str]:
    rows, previous = [], None
    for row in block.itertuples():
        if previous is not None and row.pooling != previous:
            rows.append(None)
        previous = row.pooling
        rows.append(_cells(row))
    widths = [max(len(HEADER[i]), *(len(r[i]) for r in rows if r)) for i in range(len(HEADER))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=False)).rstrip(), "  ".join("-" * w for w in widths)]
    return lines + ["" if r is None else "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]


def format_table(table: pd.DataFrame, meta: dict) -> str:
    target = meta.get("target") or {}
    lines = [
        f"probing {meta.get('features_file')} ({meta.get('model')})",
        f"label '{meta.get('label')}' (regression): {meta.get('n_labelled')} rows, mean {_num(target.get('mean'))}, "
        f"sd {_num(target.get('std'))}, range {_num(target.get('min'))}-{_num(target.get('max'))}"
        + (f", {meta['n_missing_labels']} without a value left out" if meta.get("n_missing_labels") else ""),
        f"evaluation: {meta.get('evaluation')}, seed {meta.get('seed')}; intervals are 95% "
        + ("bootstrap over the test rows" if meta.get("evaluation") == "split" else "t-intervals over folds"),
    ]
    baseline = table[table.kind == "baseline"]
    if not baseline.empty:
        row = baseline.iloc[0]
        lines.append(f"training mean: R² {_interval(row.r2, row.r2_low, row.r2_high)}, MAE {_num(row.mae)}")
    probes = table[table.kind != "baseline"]
    for (features, site, classifier), block in probes.groupby(["features", "site", "classifier"], sort=False):
        title = (
            f"{classifier} probe"
            + (f" on site {site}" if site != "hidden" else "")
            + (" on the baseline features" if features == "baseline" else "")
        )
        lines += ["", title, *_block(block)]
    test = (
        "paired bootstrap of squared errors over the test rows"
        if meta.get("evaluation") == "split"
        else "corrected resampled t-test of per-fold MSE (Nadeau & Bengio)"
    )
    lines += [
        "",
        "* best layer of each pooling (by R²); control = same probe on permuted targets, select. = R² - control R²",
        f"p vs best / p vs prev: {test}, Holm-adjusted; ! = significant at 0.05 after Holm",
    ]
    return "\n".join(lines)

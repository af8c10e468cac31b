"""The terminal table of a probing run: one block per features file and classifier, grouped by pooling."""

from __future__ import annotations

import math

import pandas as pd


def _num(value, digits: int = 3, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _interval(row) -> str:
    return f"{_num(row.accuracy)} [{_num(row.accuracy_low)}, {_num(row.accuracy_high)}]"


def _c(value) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:g}"


def _p(value, significant) -> str:
    """A Holm-adjusted p-value, with '!' when the difference holds after the correction."""
    if value is None or pd.isna(value):
        return "-"
    text = "<.001" if value < 0.001 else f"{value:.3f}"
    return text + ("!" if significant is True else "")


def _bits(value) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:,.0f}"


MAX_LISTED_CLASSES = 10


def class_counts_text(counts: dict) -> str:
    """Class counts for the header line; many classes are summarised (largest, smallest, range) not listed."""
    if len(counts) <= MAX_LISTED_CLASSES:
        return ", ".join(f"{name} {count}" for name, count in counts.items())
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    largest = ", ".join(f"{name} {count}" for name, count in ranked[:3])
    smallest = ", ".join(f"{name} {count}" for name, count in ranked[-2:])
    return f"{len(counts)} classes, {ranked[-1][1]}-{ranked[0][1]} rows each; largest {largest}; smallest {smallest}"


def format_table(table: pd.DataFrame, meta: dict) -> str:
    counts = class_counts_text(meta.get("class_counts", {}))
    lines = [
        f"probing {meta.get('features_file')} ({meta.get('model')})",
        f"label '{meta.get('label')}': {meta.get('n_labelled')} rows ({counts})"
        + (f", {meta['n_missing_labels']} without a label left out" if meta.get("n_missing_labels") else ""),
        f"evaluation: {meta.get('evaluation')}, seed {meta.get('seed')}; intervals are 95% "
        + ("bootstrap over the test rows" if meta.get("evaluation") == "split" else "t-intervals over folds"),
    ]
    majority = table[table.kind == "majority"]
    if not majority.empty:
        lines.append(
            f"majority class: accuracy {_interval(majority.iloc[0])}, macro-F1 {_num(majority.iloc[0].macro_f1)}"
        )
    header = ["pooling", "layer", "accuracy [95% CI]", "macro-F1", "bal.acc", "control", "select.", "C", "fit s"]
    with_mdl = "mdl_bits" in table and table.mdl_bits.notna().any()
    with_tests = "p_vs_best_holm" in table and (table.p_vs_best_holm.notna() | table.p_vs_prev_holm.notna()).any()
    if with_mdl:
        header += ["MDL bits", "compr."]
    if with_tests:
        header += ["p vs best", "p vs prev"]
    probes = table[table.kind != "majority"]
    group_by = ["features", "site", "classifier"] if "site" in probes else ["features", "classifier"]
    for key, block in probes.groupby(group_by, sort=False):
        features, classifier = key[0], key[-1]
        site = key[1] if len(key) == 3 else "hidden"
        title = (
            f"{classifier} probe"
            + (f" on site {site}" if site != "hidden" else "")
            + (" on the baseline features" if features == "baseline" else "")
        )
        if features == "baseline" and meta.get("baseline_model"):
            title += f" ({meta['baseline_model']})"
        rows = []
        previous = None
        for row in block.itertuples():
            if previous is not None and row.pooling != previous:
                rows.append(None)
            previous = row.pooling
            cells = [
                row.pooling,
                f"{row.layer_spec}{' *' if row.is_best else ''}",
                _interval(row),
                _num(row.macro_f1),
                _num(row.balanced_accuracy),
                _num(row.control_accuracy),
                _num(row.selectivity, signed=True),
                _c(row.C),
                f"{row.fit_seconds:.1f}",
            ]
            if with_mdl:
                cells += [_bits(row.mdl_bits), _num(row.mdl_compression, 2)]
            if with_tests:
                cells += [
                    _p(row.p_vs_best_holm, row.significant_vs_best),
                    _p(row.p_vs_prev_holm, row.significant_vs_prev),
                ]
            rows.append(cells)
        widths = [max(len(header[i]), *(len(r[i]) for r in rows if r)) for i in range(len(header))]
        lines += [
            "",
            title,
            "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip(),
            "  ".join("-" * w for w in widths),
        ]
        for r in rows:
            lines.append("" if r is None else "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)).rstrip())
        if "p_pooling_vs_best" in block and block.p_pooling_vs_best.notna().any():
            top = block[
                block.significant_pooling_vs_best.map(lambda v: v is False)
                & block.p_pooling_vs_best.isna()
                & block.is_best
            ]
            others = block[block.p_pooling_vs_best.notna()]
            if not top.empty:
                lines.append(
                    f"poolings: best {top.iloc[0].pooling} (layer {top.iloc[0].layer_spec}) vs the best layer of "
                    + ", ".join(
                        f"{r.pooling} p={_p(r.p_pooling_vs_best, r.significant_pooling_vs_best)}"
                        for r in others.itertuples()
                    )
                    + " (Holm-adjusted)"
                )
    lines += [
        "",
        "* best layer of each pooling (by accuracy); control = same probe on permuted labels, "
        "select. = accuracy - control",
    ]
    if with_mdl:
        lines.append(
            "MDL bits = online codelength of the labels (Voita & Titov 2020); compr. = uniform code / MDL bits"
        )
    if with_tests:
        test = (
            "paired bootstrap over the test rows"
            if meta.get("evaluation") == "split"
            else "corrected resampled t-test over the folds (Nadeau & Bengio)"
        )
        lines.append(f"p vs best / p vs prev: {test}, Holm-adjusted; ! = significant at 0.05 after Holm")
    return "\n".join(lines)

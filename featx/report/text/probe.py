"""The terminal table of a probing run: one block per features file and classifier, grouped by pooling."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .format import count, general, grid, missing, num, p_value, row_interval

MAX_LISTED_CLASSES = 10
STACK_C_DIGITS = 2  # a stack row's C is the geometric mean of its layers' chosen C: printed as short as a grid value


def class_counts_text(counts: dict) -> str:
    """Class counts for the header line; many classes are summarised (largest, smallest, range) not listed."""
    if len(counts) <= MAX_LISTED_CLASSES:
        return ", ".join(f"{name} {count}" for name, count in counts.items())
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    largest = ", ".join(f"{name} {count}" for name, count in ranked[:3])
    smallest = ", ".join(f"{name} {count}" for name, count in ranked[-2:])
    return f"{len(counts)} classes, {ranked[-1][1]}-{ranked[0][1]} rows each; largest {largest}; smallest {smallest}"


def left_out(meta: dict, what: str) -> str:
    """``, N without a label left out``: the stored rows not probed (``n_missing_labels``). Of these, ``n_unlabelled``
    have no label; the others were left out for a reason a note gives (a split value featx does not use, a class
    ``--min-class-rows`` drops), where these words once called every such row one without a label. A results file
    written before ``n_unlabelled`` does not say which: with notes, both are named."""
    n = meta.get("n_missing_labels")
    if not n:
        return ""
    unlabelled = meta.get("n_unlabelled")
    if unlabelled is None:
        return (
            f", {n} left out (without {what}, or as a note above says)"
            if meta.get("notes")
            else f", {n} without {what} left out"
        )
    if unlabelled >= n:
        return f", {n} without {what} left out"
    if not unlabelled:
        return f", {n} left out as a note above says"
    return f", {n} left out ({unlabelled} without {what}, {n - unlabelled} as a note above says)"


def header_lines(table: pd.DataFrame, meta: dict) -> list[str]:
    """The run's lines above the blocks: features and model, label and classes, evaluation, majority class."""
    counts = class_counts_text(meta.get("class_counts", {}))
    lines = [
        f"probing {meta.get('features_file')} ({meta.get('model')})",
        f"label '{meta.get('label')}': {meta.get('n_labelled')} rows ({counts}){left_out(meta, 'a label')}",
        f"evaluation: {meta.get('evaluation')}, seed {meta.get('seed')}; intervals are 95% "
        + ("bootstrap over the test rows" if meta.get("evaluation") == "split" else "t-intervals over folds"),
    ]
    majority, metric = table[table.kind == "majority"], _metric(meta)
    if not majority.empty:
        row = majority.iloc[0]
        first = (
            f"{metric_label(metric)} {row_interval(row, metric)}, " if metric != "accuracy" and metric in row else ""
        )
        macro_f1 = f", macro-F1 {num(row.macro_f1)}" if metric != "macro_f1" else ""  # not twice
        lines.append(f"majority class: {first}accuracy {row_interval(row)}{macro_f1}")
    lexical = table[table.kind == "lexical"]
    if not lexical.empty:
        row = lexical.iloc[0]
        scores = f"{metric_label(metric)} {row_interval(row, metric)}" if metric in row else ""
        if metric != "accuracy":
            scores += f", accuracy {num(row.accuracy)}"
        elif "macro_f1" in row:
            scores += f", macro-F1 {num(row.macro_f1)}"
        lines.append(
            f"{LEXICAL_NAME} ({row.classifier}): {scores}, C {general(row.C)}; {versus_best(row, table, metric, meta)}"
        )
    return lines


METRIC_LABELS = {
    "accuracy": "accuracy",
    "macro_f1": "macro-F1",
    "balanced_accuracy": "balanced accuracy",
    "r2": "R²",
    "spearman": "Spearman",
    "pearson": "Pearson",
}


def metric_label(metric: str) -> str:
    """How a metric is named in the terminal tables (``macro_f1`` reads ``macro-F1``)."""
    return METRIC_LABELS.get(metric, metric)


def control_value(row, metric: str, fallback: str) -> float | None:
    """The control task's score in ``metric`` (``control_<metric>``), else in ``fallback`` for results written
    before the control was scored in every metric."""
    for name in (f"control_{metric}", f"control_{fallback}"):
        value = row.get(name) if isinstance(row, pd.Series) else getattr(row, name, None)
        if value is not None and not missing(value):
            return value
    return None


LEXICAL_NAME = "lexical baseline (TF-IDF word 1-2-grams + char 2-5-grams)"


def versus_best(row, table: pd.DataFrame, metric: str, meta: dict | None = None) -> str:
    """The lexical row's paired test against the best single layer of the main hidden states (in a run of
    ``cat(...)`` or ``stack`` specs only, the chosen one of those; one test, no adjustment), in ``metric``,
    the run's chosen metric; a row fitted beside another model's probe (a study's, ``meta``) says so instead."""
    from ...probing import baseline_rivals
    from ..load import lexical_source

    if lexical_source(meta):
        return f"{lexical_source(meta).strip(' ()')}; not tested against these layers (its predictions are not kept)"

    test_metric = metric
    singles = baseline_rivals(table)
    if "selection_score" in singles and singles.selection_score.notna().any():  # the row chosen on training rows
        singles = singles[singles.is_best & singles.selection_score.notna()]
        metric = "selection_score"
    if singles.empty or not singles[metric].notna().any():
        return "no layer to compare with"
    best = singles.loc[singles[metric].idxmax()]
    site = f"site {best.site} " if str(best.get("site", "hidden")) != "hidden" else ""
    where = f"{site}{best.pooling} {best.layer_spec}, {best.classifier}"
    tested = f"paired on {test_metric}, one test" if test_metric else "paired, one test"
    verdict = _verdict(getattr(row, test_metric, None), best.get(test_metric), row.significant_vs_best)
    return f"vs the best layer ({where}) p={p_value(row.p_vs_best, row.significant_vs_best)} ({tested}){verdict}"


def _verdict(baseline: Any, layer: Any, significant: Any) -> str:
    """What the test says in words: the baseline ahead of or behind the layer, or no difference shown."""
    if missing(baseline) or missing(layer):
        return ""
    gap = float(baseline) - float(layer)
    if isinstance(significant, (bool, np.bool_)) and significant:
        side = "ahead of" if gap > 0 else "behind"
        return f": the baseline is {side} the layer by {abs(gap):.3f}"
    return f": no difference shown ({gap:+.3f})"


def block_title(features: str, site: str, classifier: str, meta: dict) -> str:
    """``logreg probe``, ``... on site ffn``, ``... on the baseline features (model)``."""
    title = (
        f"{classifier} probe"
        + (f" on site {site}" if site != "hidden" else "")
        + (" on the baseline features" if features == "baseline" else "")
    )
    if features == "baseline" and meta.get("baseline_model"):
        title += f" ({meta['baseline_model']})"
    return title


def _cells(row, metric: str, with_mdl: int, with_tests: bool) -> list[str]:
    cells = [
        row.pooling,
        f"{row.layer_spec}{' *' if row.is_best else ''}",
        row_interval(row),
        num(row.macro_f1),
        num(row.balanced_accuracy),
        num(control_value(row, metric, "accuracy")),
        num(row.selectivity, signed=True),
        general(row.C, STACK_C_DIGITS if row.kind == "stack" else 6),  # stack: a geometric mean, not a grid value
        f"{row.fit_seconds:.1f}",
    ]
    if with_mdl:
        cells += [count(row.mdl_bits), num(row.mdl_compression, 2)]
    if with_mdl > 1:  # the control task's compression, and the bits the real labels save over its labels
        cells += [num(row.control_mdl_compression, 2), count(row.mdl_selectivity, signed=True)]
    if with_tests:
        cells += [
            p_value(row.p_vs_best_holm, row.significant_vs_best),
            p_value(row.p_vs_prev_holm, row.significant_vs_prev),
        ]
    return cells


def pooling_rows(block: pd.DataFrame, cells) -> list[list[str] | None]:
    """``cells(row)`` for every row of ``block``, a blank line (None) between poolings."""
    rows: list[list[str] | None] = []
    previous = None
    for row in block.itertuples():
        if previous is not None and row.pooling != previous:
            rows.append(None)
        previous = row.pooling
        rows.append(cells(row))
    return rows


def _poolings_line(block: pd.DataFrame) -> list[str]:
    """The test of each pooling's best layer against the best pooling's, when the run made it."""
    if "p_pooling_vs_best" not in block or not block.p_pooling_vs_best.notna().any():
        return []
    top = block[
        block.significant_pooling_vs_best.map(lambda v: v is False) & block.p_pooling_vs_best.isna() & block.is_best
    ]
    others = block[block.p_pooling_vs_best.notna()]
    if top.empty:
        return []
    return [
        f"poolings: best {top.iloc[0].pooling} (layer {top.iloc[0].layer_spec}) vs the best layer of "
        + ", ".join(
            f"{r.pooling} p={p_value(r.p_pooling_vs_best, r.significant_pooling_vs_best)}" for r in others.itertuples()
        )
        + " (Holm-adjusted)"
    ]


def _metric(meta: dict) -> str:
    return meta.get("metric") or "accuracy"


def split_test(metric: str, unit: str = "rows") -> str:
    """The paired test between layers on a split's test ``unit`` (rows, groups, sentences), as the legend names it."""
    if metric == "accuracy" and unit == "rows":
        return "McNemar's exact test over the test rows"
    if metric in ("accuracy", "r2"):
        what = "of squared errors " if metric == "r2" else ""
        return f"paired sign-flip test {what}over the test {unit} (each one's difference flipped whole)"
    return f"paired permutation test of {metric_label(metric)} over the test {unit} (a's and b's predictions swapped)"


def mdl_columns(table: pd.DataFrame) -> int:
    """Which MDL columns a table shows: 0 none (no ``--mdl``), 1 the real labels' code, 2 the control task's too."""
    if "mdl_bits" not in table or not table.mdl_bits.notna().any():
        return 0
    return 2 if "control_mdl_bits" in table and table.control_mdl_bits.notna().any() else 1


def _footer(meta: dict, with_mdl: int, with_tests: bool) -> list[str]:
    lines = [
        "",
        f"* best layer of each pooling, chosen on the training part (selection_score, {_metric(meta)}); "
        f"the columns score the test rows; control = same probe on permuted labels, "
        f"select. = {_metric(meta)} - control",
    ]
    if with_mdl:
        lines.append(
            "MDL bits = online codelength of the labels (Voita & Titov 2020); compr. = uniform code / MDL bits"
            + ("; ctl compr. = the control task's; MDL sel. = control's bits - MDL bits" if with_mdl > 1 else "")
        )
    if with_tests:
        test = (
            split_test(_metric(meta), "groups" if meta.get("group") else "rows")
            if meta.get("evaluation") == "split"
            else "corrected resampled t-test over the folds (Nadeau & Bengio)"
        )
        lines.append(f"p vs best / p vs prev: {test}, Holm-adjusted; ! = significant at 0.05 after Holm")
    return lines


def format_table(table: pd.DataFrame, meta: dict) -> str:
    """The terminal table of a classification run: header lines, one block per features, site and classifier."""
    lines = header_lines(table, meta)
    metric = _metric(meta)
    control = "control" if metric == "accuracy" else f"control {metric_label(metric)}"
    header = ["pooling", "layer", "accuracy [95% CI]", "macro-F1", "bal.acc", control, "select.", "C", "fit s"]
    with_mdl = mdl_columns(table)
    with_tests = bool("p_vs_best_holm" in table and (table.p_vs_best_holm.notna() | table.p_vs_prev_holm.notna()).any())
    if with_mdl:
        header += ["MDL bits", "compr."] + (["ctl compr.", "MDL sel."] if with_mdl > 1 else [])
    if with_tests:
        header += ["p vs best", "p vs prev"]
    probes = table[~table.kind.isin(["majority", "lexical"])]
    group_by = ["features", "site", "classifier"] if "site" in probes else ["features", "classifier"]
    for key, block in probes.groupby(group_by, sort=False):
        site = key[1] if len(key) == 3 else "hidden"
        rows = pooling_rows(block, lambda row: _cells(row, metric, with_mdl, with_tests))
        lines += ["", block_title(key[0], site, key[-1], meta), *grid(header, rows)]
        lines += _poolings_line(block)
    return "\n".join(lines + _footer(meta, with_mdl, with_tests))

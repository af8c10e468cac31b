"""The printout of a probing run (``featx probe``, ``featx.report.format_probe``): its table (classes, words or
regression), the cosine baseline of sentence pairs, then which row was chosen on the training part and which
scored best on the test rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .probe import format_table as classification_table
from .regression import format_table as regression_table
from .words import format_table as words_table


def format_probe(result) -> str:
    """The printout of a ``ProbeResult``: its table, then the lines on the choice of its best row."""
    return "\n".join([_table_text(result), "", *selection_lines(result.meta)]).rstrip("\n")


def _table_text(result) -> str:
    meta = result.meta
    if meta.task == "regression":
        text = regression_table(result.table, meta.to_dict())
    elif meta.level.is_words:
        text = words_table(result.table, meta.to_dict())
    else:
        text = classification_table(result.table, meta.to_dict())
    pair_lines = baseline_lines(meta)  # sentence pairs: the cosine baseline comes first
    if not pair_lines:
        return text
    head, _, rest = text.partition("\n\n")
    return "\n".join([head, "", *pair_lines, "", rest])


def selection_lines(meta: Mapping[str, Any]) -> list[str]:
    """The printout's lines on the choice: the row chosen on the training part (its selection score, and
    its test score), the row with the best test score, and the optimism of choosing on the test rows."""
    metric, selected, best = meta.get("metric"), meta.get("selected"), meta.get("best_on_test")
    if not metric or not selected:
        return []

    def where(row: Mapping[str, Any]) -> str:
        site = "" if row.get("site") in ("hidden", "", None) else f", site {row['site']}"
        features = "" if row.get("features") == "main" else f", {row['features']} features"
        return f"layer {row['layer_spec']}, {row['pooling']}, {row['classifier']}{site}{features}"

    def score(row: Mapping[str, Any]) -> str:
        low, high = row.get("test_low"), row.get("test_high")
        interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        return "n/a" if row.get("test_score") is None else f"{row['test_score']:.3f}{interval}"

    lines = [
        f"chosen on the training part (selection_score: {metric} on each training part's held-out rows, "
        f"never the test rows): {where(selected)}, selection score {selected['selection_score']:.3f}; "
        f"its test {metric} {score(selected)}"
    ]
    if best:
        same = all(
            best.get(key) == selected.get(key) for key in ("features", "site", "layer_spec", "pooling", "classifier")
        )
        optimism = meta.get("optimism")
        lines.append(
            "best on the test rows (is_best_on_test, for comparison only): "
            + ("the same row" if same else f"{where(best)}, test {metric} {score(best)}")
            + (f"; optimism of choosing on the test rows {optimism:+.3f}" if optimism is not None else "")
        )
    return lines


def _number(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(value, low, high) -> str:
    return f"{_number(value)} [{_number(low)}, {_number(high)}]"


def baseline_lines(meta: Mapping[str, Any]) -> list[str]:
    """The cosine-baseline block of a pair table (empty for single texts and cross-mode files)."""
    rows = meta.get("cosine_baseline")
    if not rows:
        return []
    regression = "spearman" in rows[0]
    what = (
        "Spearman and Pearson vs the label"
        if regression
        else "accuracy of thresholds on the cosine, chosen on the training part only"
    )
    lines = [f"cosine baseline (zero parameters: cos(u, v) of side a and side b; {what})"]
    header = (
        ["pooling", "layer", "Spearman [95% CI]", "Pearson"]
        if regression
        else ["pooling", "layer", "accuracy [95% CI]"]
    )
    cells = []
    for row in rows:
        if regression:
            cells.append(
                [
                    row["pooling"],
                    str(row["layer"]),
                    _interval(row["spearman"], row["spearman_low"], row["spearman_high"]),
                    _number(row["pearson"]),
                ]
            )
        else:
            cells.append(
                [
                    row["pooling"],
                    str(row["layer"]),
                    _interval(row["accuracy"], row["accuracy_low"], row["accuracy_high"]),
                ]
            )
    widths = [max(len(header[i]), *(len(cell[i]) for cell in cells)) for i in range(len(header))]
    lines += [
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=False)).rstrip() for cell in cells]
    return lines + [_pair_features(meta)]


def _pair_features(meta: Mapping[str, Any]) -> str:
    """What the probes of a separate-mode pair file read: the pair feature, and text b's vectors alone on the site
    ``pair_b`` (a run of that site alone was said to read the pair feature)."""
    sites = list(meta.get("sites") or ["hidden"])
    pair = f"{meta.get('pair_feature')} per layer and pooling"
    if "pair_b" not in sites:
        return f"probe features: {pair}"
    alone = "text b's vectors alone (site pair_b)"
    return f"probe features: {alone}" if sites == ["pair_b"] else f"probe features: {pair}; {alone}"

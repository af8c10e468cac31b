"""The tables of a probe report: the run's meta as rows (every input file named), the layer table in the report's
metric (the chosen row of each pooling highlighted), the reference values and a pair run's cosine baseline."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...safe_files import loads_json
from ..load import METRIC_NAMES, chosen_row, layer_rows, model_name, references
from ..text.format import count, interval, missing, num, p_value

REGRESSION_COLUMNS = ("r2", "spearman", "pearson", "mae")
CLASS_COLUMNS = ("accuracy", "macro_f1", "balanced_accuracy")


def corpus_files(meta: dict) -> list[str]:
    """Every input file of the extraction: the recorded corpus and, when several files were extracted together
    (a treebank's train and test files), the others, read from the features file when it is still there."""
    first = meta.get("corpus_path")
    files = [str(first)] if first else []
    path = meta.get("features_file")
    if not path or not Path(path).exists():
        return files
    try:
        from ...store import open_features

        with open_features(path) as opened:
            options = loads_json(opened.attrs.get("options") or "{}")
        more = options.get("more_corpora") or []
    except Exception:  # noqa: BLE001 - a moved or foreign features file only loses the other file names
        return files
    return files + [str(name) for name in more if str(name) not in files]


def run_rows(meta: dict) -> list[tuple[str, str]]:
    """What the run was: features, model, corpus files, label and its classes, rows, evaluation, versions."""
    counts = meta.get("class_counts") or {}
    classes = ", ".join(f"{name} {count}" for name, count in list(counts.items())[:12])
    if len(counts) > 12:
        classes += f", … ({len(counts)} classes in all)"
    target = meta.get("target") if isinstance(meta.get("target"), dict) else {}
    spread = (
        f"mean {num(target.get('mean'))}, sd {num(target.get('std'))}, range {num(target.get('min'))}–"
        f"{num(target.get('max'))}"
        if target
        else None
    )
    files = corpus_files(meta)
    rows = [
        ("model", model_name(meta)),
        ("features file", meta.get("features_file") or meta.get("features")),
        ("corpus" if len(files) < 2 else f"corpus ({len(files)} files)", "; ".join(files) or None),
        ("label", meta.get("label")),
        ("task", meta.get("task")),
        ("level", meta.get("level")),
        ("classes", classes or None),
        ("target", spread),
        ("rows", meta.get("n_rows")),
        ("sentences", meta.get("n_sentences")),
        ("evaluation", meta.get("evaluation")),
        ("grouped by", grouping(meta)),
        ("metric", meta.get("metric")),
        ("seed", meta.get("seed")),
        ("classifiers", ", ".join(meta.get("classifiers") or []) or None),
        ("poolings", ", ".join(meta.get("poolings") or []) or None),
        ("pairs", meta.get("pair_mode")),
        ("baseline", meta.get("baseline_model") or meta.get("baseline_file")),
        ("featx version", meta.get("featx_version")),
        ("seconds", meta.get("seconds")),
    ]
    return [(name, str(value)) for name, value in rows if value not in (None, "")]


def grouping(meta: dict) -> str | None:
    """How a ``--group`` run kept its rows together, from its meta's ``group`` and ``n_groups`` (None: it did
    not): the "grouped by" row of every page of a run that can take ``--group`` (probe, erase, neurons, sweep)."""
    if not meta.get("group"):
        return None
    return (
        f"{meta['group']} ({meta.get('n_groups')} groups): the folds, the holdouts of each training part and the "
        "bootstrap resamples keep each group whole"
    )


def _value(row: pd.Series, column: str) -> str:
    if f"{column}_low" in row.index and not missing(row.get(f"{column}_low")):
        return interval(row.get(column), row.get(f"{column}_low"), row.get(f"{column}_high"))
    return num(row.get(column))


def _columns(rows: pd.DataFrame, metric: str) -> list[str]:
    """The metric first, then the task's other metrics the rows hold."""
    family = REGRESSION_COLUMNS if metric in REGRESSION_COLUMNS or "r2" in rows.columns else CLASS_COLUMNS
    others = [c for c in family if c != metric and c in rows.columns and rows[c].notna().any()]
    return [metric, *others]


def _control(rows: pd.DataFrame, run_metric: str) -> tuple[str, str]:
    """The control task's column in the metric the run's selectivity is in (``control_<metric>``; older
    results: accuracy or R²), and its header."""
    if f"control_{run_metric}" in rows.columns and rows[f"control_{run_metric}"].notna().any():
        plain = run_metric in ("accuracy", "r2")
        return f"control_{run_metric}", "control" if plain else f"control ({METRIC_NAMES.get(run_metric, run_metric)})"
    return ("control_accuracy" if "control_accuracy" in rows.columns else "control_r2"), "control"


def layer_table(
    frame: pd.DataFrame, classifier: str, metric: str = "accuracy", meta: dict | None = None
) -> tuple[pd.DataFrame, list[bool]]:
    """The main features' single-layer rows of one classifier in ``metric`` (with its interval) and the task's
    other metrics, control, selectivity, the selection score and the paired test when the results hold them;
    and which rows are the chosen one of their pooling (selected on the training part when recorded)."""
    from ..text.probe import mdl_columns

    rows = layer_rows(frame, classifier)
    control, control_name = _control(rows, (meta or {}).get("metric") or metric)
    with_mdl = mdl_columns(rows)  # featx probe --mdl: 1 the labels' code, 2 the control task's too
    records, best = [], []
    for pooling, part in rows.groupby("pooling", sort=False):
        top = chosen_row(part, metric, meta)[0].name
        for index, row in part.iterrows():
            record = {"pooling": pooling, "layer": int(row["layer"])}
            for column in _columns(rows, metric):
                label = METRIC_NAMES.get(column, column)
                record[label + (" [95% CI]" if column == metric else "")] = _value(row, column)
            if control in rows.columns:
                record[control_name] = num(row.get(control))
                record["selectivity"] = num(row.get("selectivity"), signed=True)
            record.update(_mdl_cells(row, with_mdl))
            if "selection_score" in rows.columns:
                record["selection score (training part)"] = num(row.get("selection_score"))
            if "is_best_on_test" in rows.columns:
                record["best on test"] = "yes" if str(row.get("is_best_on_test")) in ("True", "1", "true") else ""
            # as the terminal writes it: "<.001", not 0.000999 rounded up to "0.001"
            record["p vs best"] = p_value(row.get("p_vs_best_holm"), row.get("significant_vs_best") is True)
            records.append(record)
            best.append(index == top)
    return pd.DataFrame.from_records(records), best


def _mdl_cells(row: pd.Series, with_mdl: int) -> dict[str, str]:
    """A row's MDL columns (``featx probe --mdl``), as the terminal table writes them; none without them."""
    cells = {}
    if with_mdl:
        cells = {"MDL bits": count(row.get("mdl_bits")), "MDL compression": num(row.get("mdl_compression"), 2)}
    if with_mdl > 1:  # the control task's code, and the bits the real labels save over its labels
        cells["control MDL bits"] = count(row.get("control_mdl_bits"))
        cells["control MDL compression"] = num(row.get("control_mdl_compression"), 2)
        cells["MDL selectivity (bits)"] = count(row.get("mdl_selectivity"), signed=True)
    return cells


def reference_table(frame: pd.DataFrame, metric: str, classifier: str, meta: dict | None = None) -> pd.DataFrame:
    """The reference values drawn as lines (majority class or training mean, lexical baseline, control task,
    baseline features), in ``metric``; a lexical baseline fitted beside another model says so (``meta``)."""
    found = references(frame, metric, classifier, meta)
    return pd.DataFrame([(name, num(value)) for name, value in found], columns=["reference", metric])


def cosine_table(meta: dict) -> pd.DataFrame | None:
    """A sentence-pair run's cosine baseline (cos(u, v), thresholds or correlation fitted on training rows) by
    pooling and layer, with the intervals it holds; None for other runs."""
    rows = meta.get("cosine_baseline")
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], dict):
        return None
    metrics = [key for key in rows[0] if key not in ("pooling", "layer") and not key.endswith(("_low", "_high"))]
    records = []
    for row in rows:
        record = {"pooling": str(row.get("pooling")), "layer": str(row.get("layer"))}
        for name in metrics:
            record[METRIC_NAMES.get(name, name)] = (
                interval(row.get(name), row.get(f"{name}_low"), row.get(f"{name}_high"))
                if f"{name}_low" in row
                else num(row.get(name))
            )
        records.append(record)
    return pd.DataFrame.from_records(records)


__all__ = ["corpus_files", "cosine_table", "layer_table", "reference_table", "run_rows"]

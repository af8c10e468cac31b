"""Compare two ``featx probe`` results CSVs of the same command: the same rows and choices, scores within a tolerance.

    python bench/probe_compare.py OLD.csv NEW.csv [--tolerance 0.002]

What a speed change of the probes must keep (issue 47): the same rows in the same order, every choice identical
(the C of each row, which row is best per group on the training rows and on the test rows, and the JSON meta's
selected row when both ``.json`` files sit beside the CSVs) and every score within ``--tolerance``: the test
metrics with their intervals, the control task's, the selectivity, the selection score and the per-class F1.
The paired tests' p-values and their ``significant_*`` flags are printed for information only (a p-value is not
a score, and a flag can flip on a p-value at the threshold). Timings are ignored. Exits 1 when a choice differs
or a score moves by more than the tolerance.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

KEYS = (
    "features",
    "site",
    "label",
    "task",
    "kind",
    "layer_spec",
    "layer",
    "layers",
    "pooling",
    "classifier",
    "evaluation",
)
CHOICES = ("C", "is_best", "is_best_on_test", "n_train", "n_test")
INFORMATION = ("p_vs_best", "p_vs_best_holm", "p_vs_prev", "p_vs_prev_holm", "p_pooling_vs_best")
IGNORED = ("fit_seconds", "layer_weights")


def _name(row: pd.Series) -> str:
    parts = (row.get(key) for key in ("features", "layer_spec", "pooling", "classifier"))
    return " ".join(str(part) for part in parts if isinstance(part, str) and part)


def per_class(old: pd.Series, new: pd.Series) -> np.ndarray:
    """Per row, the largest difference between the per-class F1 values (JSON objects) of the two tables."""
    out = np.zeros(len(old))
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        first, second = json.loads(a) if isinstance(a, str) else {}, json.loads(b) if isinstance(b, str) else {}
        if set(first) != set(second):
            out[i] = np.inf
            continue
        gaps = [abs(first[k] - second[k]) for k in first if first[k] is not None and second[k] is not None]
        if any((first[k] is None) != (second[k] is None) for k in first):
            gaps.append(np.inf)
        out[i] = max(gaps, default=0.0)
    return out


def score_gaps(old: pd.DataFrame, new: pd.DataFrame) -> dict[str, np.ndarray]:
    """The absolute difference of every score column per row (inf where only one side is missing)."""
    gaps = {}
    for column in old.columns:
        if column in KEYS or column in CHOICES or column in INFORMATION or column in IGNORED:
            continue
        if column.startswith("significant"):
            continue
        if column == "per_class_f1":
            gaps[column] = per_class(old[column], new[column])
            continue
        if not numeric(old[column]) or not numeric(new[column]):
            continue  # a text column: a choice (choice_changes)
        a, b = old[column].to_numpy(float), new[column].to_numpy(float)
        gap = np.abs(a - b)
        gap[np.isnan(a) & np.isnan(b)] = 0.0
        gap[np.isnan(a) != np.isnan(b)] = np.inf
        gaps[column] = gap
    return gaps


def texts(values: pd.Series) -> np.ndarray:
    """The values as strings, a missing value as the empty string (so that missing equals missing)."""
    return np.array(["" if pd.isna(value) else str(value) for value in values], dtype=object)


def numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def choice_columns(old: pd.DataFrame) -> list[str]:
    """``CHOICES`` and every other column of text or flags that is not a key, information or ignored."""
    skip = (*KEYS, *INFORMATION, *IGNORED, "per_class_f1")
    other = [c for c in old.columns if c not in skip and not c.startswith("significant") and not numeric(old[c])]
    return [c for c in CHOICES if c in old.columns] + [c for c in other if c not in CHOICES]


def choice_changes(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    changes = []
    for column in choice_columns(old):
        a, b = texts(old[column]), texts(new[column])
        for i in np.flatnonzero(a != b):
            changes.append(f"{column} of {_name(old.iloc[i])}: {a[i]} -> {b[i]}")
    return changes


def selected(path: Path) -> dict | None:
    meta = path.with_suffix(".json")
    if not meta.exists():
        return None
    data = json.loads(meta.read_text())
    found = data.get("meta", data).get("selected")
    keys = ("features", "site", "layer_spec", "layer", "pooling", "classifier")
    return {key: found.get(key) for key in keys} if found else None


def information(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    lines = []
    for column in old.columns:
        if column in INFORMATION:
            gap = np.abs(old[column].to_numpy(float) - new[column].to_numpy(float))
            if np.isfinite(gap).any() and np.nanmax(gap) > 0:
                lines.append(f"  {column}: max |diff| {np.nanmax(gap):.4f}")
        elif column.startswith("significant"):
            flips = int((texts(old[column]) != texts(new[column])).sum())
            if flips:
                lines.append(f"  {column}: {flips} row(s) differ")
    return lines


def compare(old_path: Path, new_path: Path, tolerance: float) -> bool:
    old, new = pd.read_csv(old_path), pd.read_csv(new_path)
    keys = [key for key in KEYS if key in old.columns]
    if list(old.columns) != list(new.columns) or len(old) != len(new):
        print(
            f"different tables: {len(old)} vs {len(new)} rows, columns equal: {list(old.columns) == list(new.columns)}"
        )
        return False
    if not old[keys].astype(str).equals(new[keys].astype(str)):
        print("different rows (keys or order)")
        return False
    changes = choice_changes(old, new)
    first, second = selected(old_path), selected(new_path)
    if first is not None and second is not None and first != second:
        changes.append(f"selected: {first} -> {second}")
    gaps = score_gaps(old, new)
    worst_column = max(gaps, key=lambda column: float(np.max(gaps[column], initial=0.0)), default=None)
    worst = float(np.max(gaps[worst_column], initial=0.0)) if worst_column else 0.0
    print(f"{old_path} vs {new_path}: {len(old)} rows")
    for column, gap in gaps.items():
        if gap.max(initial=0.0) > 0:
            i = int(np.argmax(gap))
            moved = int((gap > 0).sum())
            print(f"  {column}: max |diff| {gap[i]:.4f} ({_name(old.iloc[i])}), {moved} row(s) moved")
    info = information(old, new)
    if info:
        print("for information (not scores):")
        print("\n".join(info))
    for change in changes:
        print(f"CHOICE CHANGED: {change}")
    where = f" ({worst_column})" if worst > 0 else ""
    print(f"choices identical: {not changes}; largest score difference {worst:.4f}{where}; tolerance {tolerance}")
    return not changes and worst <= tolerance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.002)
    args = parser.parse_args()
    sys.exit(0 if compare(args.old, args.new, args.tolerance) else 1)


if __name__ == "__main__":
    main()

"""The results files: one tidy CSV (one row per features x layer spec x pooling x classifier) and a JSON
with the same records plus the run's metadata. ``load_results`` reads either back."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import StoreError
from ..safe_files import atomic_write_text

COLUMNS = [
    "features",
    "site",
    "label",
    "task",
    "layer_spec",
    "kind",
    "layer",
    "layers",
    "pooling",
    "classifier",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "macro_f1",
    "macro_f1_low",
    "macro_f1_high",
    "balanced_accuracy",
    "balanced_accuracy_low",
    "balanced_accuracy_high",
    "control_accuracy",
    "selectivity",
    "C",
    "fit_seconds",
    "n_train",
    "n_test",
    "evaluation",
    "per_class_f1",
    "layer_weights",
    "is_best",
    "mdl_bits",
    "mdl_compression",
    "p_vs_best",
    "p_vs_best_holm",
    "significant_vs_best",
    "p_vs_prev",
    "p_vs_prev_holm",
    "significant_vs_prev",
    "p_pooling_vs_best",
    "significant_pooling_vs_best",
]
CURVE_COLUMNS = [
    "features",
    "site",
    "label",
    "layer_spec",
    "layer",
    "pooling",
    "classifier",
    "train_size",
    "n_train",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "macro_f1",
    "evaluation",
]


def results_prefix(features_path: Path, label: str, kind: str, output: str | Path | None = None) -> Path:
    """``<features stem>.<label>.<kind>`` beside the features file, or ``output`` less a .csv/.json suffix."""
    if output is not None:
        prefix = str(output)
        for suffix in (".csv", ".json"):
            if prefix.endswith(suffix):
                prefix = prefix[: -len(suffix)]
        return Path(prefix)
    features_path = Path(features_path)
    stem = features_path.name[: -len(features_path.suffix)] if features_path.suffix else features_path.name
    return features_path.with_name(f"{stem}.{label}.{kind}")


def results_paths(features_path: Path, label: str, output: str | Path | None = None) -> tuple[Path, Path]:
    """``<features stem>.<label>.probe.csv/.json`` beside the features file, or ``PREFIX.csv/.json``."""
    prefix = results_prefix(features_path, label, "probe", output)
    return Path(str(prefix) + ".csv"), Path(str(prefix) + ".json")


def side_path(csv_path: Path, kind: str) -> Path:
    """A companion file of a results CSV: ``X.probe.csv`` -> ``X.predictions.csv`` / ``X.curve.csv``."""
    name = Path(csv_path).name
    stem = (
        name[: -len(".probe.csv")]
        if name.endswith(".probe.csv")
        else name[: -len(".csv")]
        if name.endswith(".csv")
        else name
    )
    return Path(csv_path).with_name(f"{stem}.{kind}.csv")


def write_table(table: pd.DataFrame, path: Path) -> None:
    try:
        _atomic_write(path, table.to_csv(index=False))
    except OSError as err:
        raise StoreError(
            f"cannot write {path}: {err.strerror or err}", "choose a writable location with -o PREFIX"
        ) from None


def _clean(value):
    """JSON-safe scalar: NaN/inf become null, numpy scalars plain Python."""
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


json_safe = _clean  # the public name, for the writers of the analyses' results files


def _atomic_write(path: Path, text: str) -> None:
    atomic_write_text(path, text)  # a fresh temporary file: never through a link planted at x.tmp


def write_results(table: pd.DataFrame, meta: dict, csv_path: Path, json_path: Path) -> None:
    for path in (csv_path, json_path):
        if not path.parent.exists():
            raise StoreError(
                f"cannot write results: directory {path.parent} does not exist",
                "create it, or choose another prefix with -o",
            )
    try:
        _atomic_write(csv_path, table.to_csv(index=False))
        records = [{key: _clean(value) for key, value in record.items()} for record in table.to_dict("records")]
        payload = {"meta": {key: _clean(value) for key, value in meta.items()}, "results": records}
        _atomic_write(json_path, json.dumps(payload, indent=1, allow_nan=False))
    except OSError as err:
        raise StoreError(
            f"cannot write results to {csv_path.parent}: {err.strerror or err}",
            "choose a writable location with -o PREFIX",
        ) from None


def _normalise(table: pd.DataFrame) -> pd.DataFrame:
    if "task" not in table:  # results written before regression probes: classification
        table.insert(table.columns.get_loc("label") + 1 if "label" in table else 0, "task", "classification")
    if "site" not in table:  # results written before sites: every row probed the hidden states
        table.insert(1 if "features" in table else 0, "site", "hidden")
    if "layer" in table:
        table["layer"] = pd.to_numeric(table["layer"], errors="coerce").astype("Int64")
    if "is_best" in table:
        table["is_best"] = table["is_best"].map(lambda v: str(v).lower() in ("true", "1")).astype(bool)
    for column in ("significant_vs_best", "significant_vs_prev", "significant_pooling_vs_best"):
        if column in table:  # True/False where tested, missing (None) where not
            table[column] = table[column].map(
                lambda v: None if pd.isna(v) or v == "" else str(v).lower() in ("true", "1")
            )
    for column in ("per_class_f1", "layer_weights", "layers", "layer_spec", "pooling", "site"):
        if column in table:
            table[column] = table[column].astype(object).fillna("").astype(str)
    return table


def load_results(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """``(DataFrame, meta)`` from a ``.probe.csv`` or ``.probe.json`` (meta comes from the JSON beside a CSV)."""
    path = Path(path)
    if not path.exists():
        raise StoreError(f"results file {path} does not exist", "create it with featx probe")
    try:
        if path.suffix == ".json":
            payload = json.loads(path.read_text(encoding="utf-8"))
            table = pd.DataFrame(payload["results"])
            meta = payload.get("meta", {})
        else:
            table = pd.read_csv(path, keep_default_na=True)
            sibling = path.with_suffix(".json")
            meta = json.loads(sibling.read_text(encoding="utf-8")).get("meta", {}) if sibling.exists() else {}
    except (ValueError, KeyError, OSError) as err:
        raise StoreError(f"{path} is not a featx probe results file ({err})") from None
    metric = "r2" if "task" in table and (table["task"] == "regression").any() else "accuracy"
    missing = [column for column in ("features", "layer_spec", "pooling", "classifier", metric) if column not in table]
    if missing:
        raise StoreError(f"{path} is not a featx probe results file: columns {', '.join(missing)} are missing")
    return _normalise(table), meta

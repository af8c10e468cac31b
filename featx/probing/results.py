"""A probing run's results: the ``ProbeResult`` object and its files, one tidy CSV (one row per features x
layer spec x pooling x classifier) and a JSON with the same records plus the run's metadata (``ProbeMeta``),
beside the per-row predictions and learning-curve CSVs. ``load_results`` reads a CSV or JSON back."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError, StoreError
from ..io import read_csv, write_csv
from ..json_fields import shown
from ..options import Placeholder, on_command_line, spoken, spoken_value
from ..safe_files import TEMPORARY_NAME, atomic_write_text, check_writable, existing_folder, loads_json
from ..store import escape_name
from .evaluation.significance import COLUMNS as SIGNIFICANCE_COLUMNS
from .meta import ProbeMeta, checked_meta

# The columns that say which probe a row is: the same, in this order, for every task.
IDENTITY_COLUMNS = [
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
]
COLUMNS = [
    *IDENTITY_COLUMNS,
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
    "control_macro_f1",
    "control_balanced_accuracy",
    "selectivity",
    "C",
    "fit_seconds",
    "n_train",
    "n_test",
    "evaluation",
    "per_class_f1",
    "layer_weights",
    "selection_score",
    "is_best",
    "is_best_on_test",
    "mdl_bits",
    "mdl_compression",
    "control_mdl_bits",
    "control_mdl_compression",
    "mdl_selectivity",
    *SIGNIFICANCE_COLUMNS,
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
    "baseline",
    "evaluation",
]


@dataclass
class ProbeResult:
    """What a probing run produced: the results table, its metadata and where it was written.

    ``table`` is the results CSV as a DataFrame and ``meta`` the JSON's metadata; ``predictions`` and ``curve``
    are the per-row predictions and learning curves (None when not made), each with its ``*_path``.
    Its printout is the report's: ``featx.report.format_probe(result)``.
    """

    table: pd.DataFrame
    meta: ProbeMeta
    csv_path: Path | None = None
    json_path: Path | None = None
    notes: list[str] = field(default_factory=list)
    predictions: pd.DataFrame | None = None  # per-row out-of-fold predictions by layer (one pooling/classifier)
    curve: pd.DataFrame | None = None  # learning curves (with --train-sizes)
    predictions_path: Path | None = None
    curve_path: Path | None = None

    def records(self) -> list[dict]:
        """The results table's rows as dicts."""
        return self.table.to_dict("records")

    def best(self, pooling: str | None = None, classifier: str | None = None, features: str = "main") -> pd.Series:
        """The best single-layer row of one pooling/classifier, chosen as the run chose (its
        ``selection_score``, on training rows; the test metric for results written before it)."""
        rows = self.table[(self.table.features == features) & (self.table.kind == "single")]
        if pooling:
            rows = rows[rows.pooling == pooling]
        if classifier:
            rows = rows[rows.classifier == classifier]
        if rows.empty:
            raise InputError(f"no single-layer results for pooling={pooling!r}, classifier={classifier!r}")
        if "selection_score" in rows and rows.selection_score.notna().any():
            return rows.loc[rows.selection_score.idxmax()]
        return rows.loc[rows[self.meta.get("metric") or ("accuracy" if self.meta.is_classification else "r2")].idxmax()]

    def __repr__(self) -> str:
        return f"ProbeResult({len(self.table)} rows, label={self.meta.label!r}, written to {self.csv_path})"


def results_prefix(features_path: Path, label: str, kind: str, output: str | Path | None = None) -> Path:
    """``<features stem>.<label>.<kind>`` beside the features file, or ``output`` less a .csv/.json suffix.
    The label is escaped as the store escapes HDF5 names ('/' as %2F, '%' as %25); the JSON keeps it as is."""
    if output is not None:
        prefix = str(output)
        for suffix in (".csv", ".json"):
            if prefix.endswith(suffix):
                prefix = prefix[: -len(suffix)]
        return Path(prefix)
    features_path = Path(features_path)
    stem = features_path.name[: -len(features_path.suffix)] if features_path.suffix else features_path.name
    return features_path.with_name(f"{stem}.{escape_name(label)}.{kind}")


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


def probe_names(features_path: Path, label: str | None, output: str | Path | None) -> list[Path]:
    """The longest name a probe run writes, ``X.<label>.predictions.csv`` (for ``check_name_length``)."""
    return [side_path(results_paths(Path(features_path), str(label or ""), output)[0], "predictions")]


def check_name_length(paths: Iterable[Path], suffix: str = ".tmp", placeholder: str = "PREFIX") -> None:
    """Before any work: the longest name among ``paths``, the files a run writes (named after the label, or -o),
    fits its folder's limit on a file name (``NAME_MAX``, 255 bytes on Linux) with the bytes its temporary file's
    name adds (each is written through one, ``.NAME.XXXXXXXX`` and ``suffix``: ``safe_files.TEMPORARY_NAME``), rather
    than failing with "File name too long" once the work is done. Probe, neurons, the sweep and erase check their
    names here; the hint names -o's ``placeholder``."""
    extra = len(TEMPORARY_NAME + suffix)
    longest = max((Path(path) for path in paths), key=lambda path: len(os.fsencode(path.name)))
    try:
        limit = os.pathconf(existing_folder(longest), "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    size, room = len(os.fsencode(longest.name)), limit - extra
    if size > room:
        shown_name = f"{longest.name[:40]}...{longest.name[-20:]}"
        raise InputError(
            f"the results would be named {shown_name}, {size} bytes: more than the {room} a results file name may "
            f"have here (the {limit} of a file name, less {extra} for the temporary file it is written as)",
            f"give them a shorter name with {spoken_value(None, 'output', Placeholder(placeholder), '-o')}",
        )


def write_hint() -> str:
    """Where a run's results may go instead, as the caller names the option: ``-o PREFIX``, ``output=PREFIX``."""
    return f"choose a writable location with {spoken_value(None, 'output', Placeholder('PREFIX'), '-o')}"


def check_prefix(output: str | Path, first: Path) -> None:
    """Before any probe runs: ``-o PREFIX`` names a prefix (``''`` is ``.`` as a path, which would write ``..csv``
    into this folder) in a folder that exists and takes a file (``first``, the first file written), rather than
    failing once every probe has run."""
    named, given = spoken(None, "output", "-o"), spoken_value(None, "output", str(output), "-o")
    if not str(output).strip():
        empty, example = spoken_value(None, "output", "", "-o", shown="''"), repr("out/run1")
        raise InputError(
            f"{empty} names no results prefix",
            f"give {named} a prefix such as {'out/run1' if on_command_line() else example}, or leave {named} out",
        )
    if str(output).endswith(("/", os.sep)) or Path(output).is_dir():  # -o out/ wrote out.csv beside the folder
        raise InputError(
            f"{given} is a folder, and {named} takes a results prefix",
            f"give a prefix inside it, e.g. {spoken_value(None, 'output', str(Path(output) / 'run1'), '-o')}",
        )
    if not first.parent.is_dir():
        raise InputError(f"{given}: the directory {first.parent} does not exist", f"create it, or {write_hint()}")
    check_writable(first)


def write_table(table: pd.DataFrame, path: Path) -> None:
    """A results table (predictions, curve, erasure, neurons, sweep) as CSV at ``path`` (``featx.io.write_csv``)."""
    write_csv(table, path, hint=write_hint())


def json_safe(value):
    """JSON-safe scalar: NaN/inf become null, numpy scalars plain Python."""
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_results(table: pd.DataFrame, meta: dict, csv_path: Path, json_path: Path) -> None:
    for path in (csv_path, json_path):
        if not path.parent.exists():
            raise StoreError(
                f"cannot write results: directory {path.parent} does not exist",
                f"create it, or choose another prefix with {spoken(None, 'output', '-o')}",
            )
    write_table(table, csv_path)
    records = [{key: json_safe(value) for key, value in record.items()} for record in table.to_dict("records")]
    payload = {"meta": {key: json_safe(value) for key, value in meta.items()}, "results": records}
    try:  # a fresh temporary file: never through a link planted at x.tmp
        atomic_write_text(json_path, json.dumps(payload, indent=1, allow_nan=False))
    except OSError as err:
        raise StoreError(f"cannot write results to {json_path.parent}: {err.strerror or err}", write_hint()) from None


def write_result(result: ProbeResult, features_path: Path, label: str, output: str | Path | None) -> None:
    """Write a run's results CSV/JSON and its predictions and curve files; remember the results file."""
    from ..state import remember

    csv_path, json_path = results_paths(Path(features_path), label, output)
    if result.predictions is not None:
        result.predictions_path = side_path(csv_path, "predictions")
        result.meta = replace(result.meta, predictions_file=result.predictions_path.name)
        write_table(result.predictions, result.predictions_path)
    if result.curve is not None:
        result.curve_path = side_path(csv_path, "curve")
        result.meta = replace(result.meta, curve_file=result.curve_path.name)
        write_table(result.curve, result.curve_path)
    write_results(result.table, result.meta.to_dict(), csv_path, json_path)
    result.csv_path, result.json_path = csv_path, json_path
    remember("results", csv_path)


def _normalise(table: pd.DataFrame) -> pd.DataFrame:
    if "task" not in table:  # results written before regression probes: classification
        table.insert(table.columns.get_loc("label") + 1 if "label" in table else 0, "task", "classification")
    if "site" not in table:  # results written before sites: every row probed the hidden states
        table.insert(1 if "features" in table else 0, "site", "hidden")
    if "layer" in table:
        table["layer"] = pd.to_numeric(table["layer"], errors="coerce").astype("Int64")
    for column in ("is_best", "is_best_on_test"):
        if column in table:
            table[column] = table[column].map(lambda v: str(v).lower() in ("true", "1")).astype(bool)
    for column in ("significant_vs_best", "significant_vs_prev", "significant_pooling_vs_best"):
        if column in table:  # True/False where tested, missing (None) where not
            table[column] = table[column].map(
                lambda v: None if pd.isna(v) or v == "" else str(v).lower() in ("true", "1")
            )
    for column in ("per_class_f1", "layer_weights", "layers", "layer_spec", "pooling", "site"):
        if column in table:
            table[column] = table[column].astype(object).fillna("").astype(str)
    return table


NOT_PROBE_RESULTS_HINT = (
    "give the .probe.csv or .probe.json of featx probe; featx report also reads the results of erase, neurons, "
    "probe --sweep and probe --structural"
)


def load_results(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """``(DataFrame, meta)`` from a ``.probe.csv`` or ``.probe.json`` (meta comes from the JSON beside a CSV)."""
    path = Path(path)
    if not path.exists():
        raise StoreError(f"results file {path} does not exist", "create it with featx probe")
    try:
        if path.suffix == ".json":
            payload = loads_json(path.read_text(encoding="utf-8"))
            meta = results_meta(payload, path)
            table = pd.DataFrame(payload["results"])
        else:
            table = read_csv(path, keep_default_na=True)
            sibling = path.with_suffix(".json")
            meta = read_meta(sibling) if sibling.exists() else {}
    except (ValueError, KeyError, OSError) as err:
        raise StoreError(f"{path} is not a featx probe results file ({err})") from None
    metric = "r2" if "task" in table and (table["task"] == "regression").any() else "accuracy"
    missing = [column for column in ("features", "layer_spec", "pooling", "classifier", metric) if column not in table]
    if missing:
        raise StoreError(
            f"{path} is not a featx probe results file: columns {', '.join(missing)} are missing",
            NOT_PROBE_RESULTS_HINT,
        )
    return _normalise(_numbers(table, path)), meta


def read_meta(json_path: Path) -> dict:
    """The checked ``meta`` of the results JSON at ``json_path`` (ValueError: not JSON; StoreError: not results)."""
    return results_meta(loads_json(json_path.read_text(encoding="utf-8")), json_path)


def results_meta(payload, where: Path) -> dict:
    """The ``meta`` of a results JSON's ``payload``, its fields checked (``checked_meta``); {} where it has none."""
    if not isinstance(payload, dict):
        raise StoreError(f"{where} is not a featx probe results file (not a JSON object)", NOT_PROBE_RESULTS_HINT)
    return checked_meta(payload.get("meta", {}), where)


# The number columns a figure, report or comparison computes with (also as control_X, X_low and X_high).
NUMBER_COLUMNS = (
    "accuracy",
    "macro_f1",
    "balanced_accuracy",
    "r2",
    "spearman",
    "pearson",
    "mae",
    "selectivity",
    "selection_score",
    "mdl_bits",
    "mdl_compression",
    "mdl_selectivity",
    "n_train",
    "n_test",
)


def _numbers(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """The number columns as numbers; a cell that is not one (a results file edited by hand or damaged) is refused
    naming its column and row, not left to fail deep inside a figure."""
    for column in table.columns:
        base = str(column).removeprefix("control_").removesuffix("_low").removesuffix("_high")
        if base not in NUMBER_COLUMNS or pd.api.types.is_numeric_dtype(table[column]):
            continue
        values = pd.to_numeric(table[column], errors="coerce")
        given = table[column].notna() & (table[column].astype(str).str.strip() != "")
        bad = (values.isna() & given).to_numpy().nonzero()[0]
        if len(bad):
            cell = shown(str(table[column].iloc[bad[0]]))
            raise StoreError(
                f"{path} is damaged: column '{column}' holds {cell} in results row {bad[0] + 1}, not a number",
                "write it again with featx probe, or correct that cell",
            )
        table[column] = values
    return table

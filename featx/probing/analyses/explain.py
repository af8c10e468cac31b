"""``featx explain``: per-example diagnostics from the out-of-fold predictions of a probing run.

Reads ``<stem>.<label>.predictions.csv`` (written by ``featx probe`` beside its results: one row per
tested example, one column of predicted labels per layer) and reports which rows the probe only gets
right from some layer on, which rows it never gets right, per-class F1 by layer, accuracy by text
length and by truncation, and for class labels the confusion matrix of the best layer (printed, and written
beside the predictions as ``<stem>.<label>.confusion.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...checks import path_like, whole
from ...errors import StoreError, require_whole
from ...io import read_csv, write_csv
from ...json_fields import shown
from ...options import Options, keywords_of, option
from ...safe_files import loads_json, sibling
from ..choice import chosen_layer
from ..results import load_results, read_meta, results_meta, side_path
from .explain_baseline import baseline_line
from .explain_regression import (
    LAYER_PREFIX,
    TEXT_COLUMNS,
    RegressionExplanation,
    add_texts,
    explain_regression,
    length_buckets,
    texts_in,
)


@dataclass
class Explanation:
    """The diagnostics of one probing run's per-row predictions (one pooling/classifier)."""

    predictions_path: Path
    label: str
    predictions_for: str
    layers: list[str]  # layer specs in order
    correct: pd.DataFrame  # rows x layers, bool
    flips: pd.DataFrame  # rows wrong before some layer and right at it and every later one
    always_wrong: pd.DataFrame  # rows wrong at every layer
    per_class_f1: pd.DataFrame  # classes x layers
    by_length: pd.DataFrame  # length bucket x layers accuracy (with row counts)
    by_truncation: pd.DataFrame  # truncated no/yes x layers accuracy (with row counts)
    notes: list[str] = field(default_factory=list)
    confusions: pd.DataFrame | None = None  # word-level runs: the best layer's most frequent confusions
    confusion: pd.DataFrame | None = None  # true class (rows) x predicted class (columns) counts at one layer
    confusion_layer: str = ""  # that layer
    confusion_how: str = ""  # how it was chosen: on the training part, or the best on the test rows
    confusion_path: Path | None = None  # the CSV written
    baseline: str = ""  # the majority class's accuracy on the same rows, and where it comes from

    def format(self, limit: int = 10) -> str:
        require_whole(limit, "--limit")
        lines = [
            f"explaining {self.predictions_path} (label '{self.label}', {self.predictions_for}, "
            f"{len(self.correct)} rows, layers {', '.join(self.layers)})",
            "",
        ]
        accuracy = self.correct.mean()
        lines.append("accuracy by layer: " + "  ".join(f"{layer} {accuracy[layer]:.3f}" for layer in self.layers))
        if self.baseline:
            lines.append(self.baseline)
        lines += ["", f"rows right from some layer on ({len(self.flips)}; first layer from which they stay right):"]
        lines += _rows(self.flips, ["first_right_layer"], limit)
        lines += ["", f"rows wrong at every layer ({len(self.always_wrong)}):"]
        lines += _rows(self.always_wrong, ["last_prediction"], limit)
        for title, frame in (
            ("per-class F1 by layer", self.per_class_f1),
            ("accuracy by length (tokens)", self.by_length),
            ("accuracy by truncation", self.by_truncation),
        ):
            lines += ["", title + ":", frame.to_string(float_format=lambda v: f"{v:.3f}")]
        if self.confusions is not None:
            lines += [
                "",
                f"most frequent confusions at layer {self.confusion_layer} ({self.confusion_how}):",
                self.confusions.to_string(index=False, float_format=lambda v: f"{v:.3f}"),
            ]
        if self.confusion is not None:
            lines += [
                "",
                f"confusion matrix at layer {self.confusion_layer} ({self.confusion_how}; rows: true class, "
                "columns: predicted):",
                self.confusion.to_string(),
            ]
            if self.confusion_path is not None:
                lines.append(f"wrote {self.confusion_path}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _rows(frame: pd.DataFrame, extra: list[str], limit: int) -> list[str]:
    if frame.empty:
        return ["  (none)"]
    columns = ["id", *(["word"] if "word" in frame else []), "label", *extra, *TEXT_COLUMNS[: texts_in(frame)]]
    shown = frame[columns].head(limit).copy()
    for column in TEXT_COLUMNS[: texts_in(shown)]:
        shown[column] = shown[column].map(lambda t: t if len(t) <= 70 else t[:67] + "...")
    out = ["  " + line for line in shown.to_string(index=False).splitlines()]
    if len(frame) > limit:
        out.append(f"  ... {len(frame) - limit} more (--limit N shows more)")
    return out


def _meta(json_path: Path) -> dict:
    try:
        return read_meta(json_path)
    except ValueError:
        raise StoreError(f"{json_path} is not a featx probe results file") from None


def _named_results(predictions: Path, json_path: Path) -> tuple[dict, Path | None]:
    """The meta and path of ``json_path`` (a run written with ``-o PREFIX``: PREFIX.json beside
    PREFIX.predictions.csv) when it is a results file naming ``predictions`` as its predictions; else nothing."""
    try:
        payload = loads_json(json_path.read_text(encoding="utf-8")) if json_path.exists() else None
    except (ValueError, OSError):
        return {}, None
    meta = payload.get("meta") if isinstance(payload, dict) else None
    if not isinstance(meta, dict) or meta.get("predictions_file") != predictions.name:
        return {}, None
    return results_meta(payload, json_path), json_path  # its fields checked as any results file's


def _resolve(results) -> tuple[Path, dict, Path | None]:
    """The predictions CSV, the run's metadata and its results file from a results CSV/JSON or a predictions
    CSV."""
    from ...state import given_or_last

    path, _ = given_or_last(results, "results")
    if not path.exists():
        raise StoreError(f"{path} does not exist", "give a .probe.csv/.probe.json or .predictions.csv of featx probe")
    if path.name.endswith(".predictions.csv"):
        stem = path.name[: -len(".predictions.csv")]
        json_path = path.with_name(stem + ".probe.json")
        if json_path.exists():
            return path, _meta(json_path), json_path
        return (path, *_named_results(path, path.with_name(stem + ".json")))
    json_path = path.with_suffix(".json")
    meta = _meta(json_path) if json_path.exists() else {}
    if meta.get("structural"):
        raise StoreError(
            f"{path} holds structural probe results (--structural {shown(meta['structural'])}), which have no "
            "per-row predictions to explain",
            "featx plot and featx report read them; featx explain reads the results of a label's featx probe",
        )
    name = meta.get("predictions_file")
    predictions = sibling(path, name) if name else side_path(path.with_suffix(".csv"), "predictions")
    if predictions is None:
        raise StoreError(
            f"{json_path} names its predictions file {shown(name)}, which is not a file name",
            "give the .predictions.csv file itself",
        )
    if not predictions.exists():
        load_results(path)  # another command's results (featx erase's...): say so, not "run featx probe again"
        raise StoreError(
            f"{path} has no per-row predictions file ({predictions.name} is missing)",
            "run featx probe again with this featx version: it writes the predictions beside the results",
        )
    return predictions, meta, path


def _f1(true: np.ndarray, predicted: np.ndarray, name: str) -> float:
    tp = np.sum((true == name) & (predicted == name))
    denominator = np.sum(true == name) + np.sum(predicted == name)
    return float(2 * tp / denominator) if denominator else float("nan")


def _accuracy_by(groups: pd.Series, correct: pd.DataFrame, name: str) -> pd.DataFrame:
    table = correct.groupby(groups.values, observed=True).mean()
    table.insert(0, "rows", correct.groupby(groups.values, observed=True).size())
    table.index.name = name
    return table


def _read_predictions(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """The per-row predictions file and its layers (the ``layer_*`` columns), checked."""
    try:
        frame = read_csv(path, dtype={"id": str, "label": str, "word": str}, keep_default_na=False)
    except (ValueError, OSError) as err:
        raise StoreError(f"{path} is not a featx predictions file ({err})") from None
    layers = [column[len(LAYER_PREFIX) :] for column in frame.columns if column.startswith(LAYER_PREFIX)]
    missing = [column for column in ("id", "label", "n_tokens", "truncated") if column not in frame]
    if missing or not layers:
        raise StoreError(
            f"{path} is not a featx predictions file: "
            + (f"columns {', '.join(missing)} are missing" if missing else "it has no layer_* columns")
        )
    return frame, layers


def confusion_layer(meta: dict, layers: list[str], correct: pd.DataFrame) -> tuple[str, str]:
    """The layer whose confusion matrix (and most frequent confusions) are shown, and how it was chosen: the
    run's selection on the training part (``selected`` in the results JSON, when it is the predictions'
    pooling and probe), else the layer with the most right predictions on these test rows."""
    return chosen_layer(meta, layers, correct.mean())


def confusion_matrix(true: pd.Series, predicted: pd.Series, classes: list[str]) -> pd.DataFrame:
    """Counts of (true class, predicted class), every class of either side as a row and a column."""
    names = list(dict.fromkeys([*classes, *sorted(set(predicted) - set(classes))]))
    table = pd.crosstab(
        pd.Categorical(true, categories=names), pd.Categorical(predicted, categories=names), dropna=False
    )
    table.index.name, table.columns.name = "true", "predicted"
    return table.astype(int)


def _write_confusion(explanation: Explanation) -> None:
    """``<stem>.confusion.csv`` beside the predictions; a folder that refuses it only costs a note."""
    if explanation.confusion is None:
        return
    name = explanation.predictions_path.name
    stem = name[: -len(".predictions.csv")] if name.endswith(".predictions.csv") else Path(name).stem
    path = explanation.predictions_path.with_name(f"{stem}.confusion.csv")
    try:
        write_csv(explanation.confusion, path, index=True)
    except StoreError as err:
        explanation.notes.append(err.message)
        return
    explanation.confusion_path = path


def _flips(frame: pd.DataFrame, values: np.ndarray, layers: list[str]) -> pd.DataFrame:
    """Rows wrong at some layer and right from a later one on, with that first right layer."""
    # the first layer from which a row stays right: after the last layer where it is wrong
    wrong_any = ~values
    last_wrong = np.where(wrong_any.any(axis=1), values.shape[1] - 1 - np.argmax(wrong_any[:, ::-1], axis=1), -1)
    flipped = (last_wrong >= 0) & (last_wrong < values.shape[1] - 1)
    flips = frame.loc[flipped].copy()
    flips["first_right_layer"] = [layers[i + 1] for i in last_wrong[flipped]]
    return flips.assign(_order=last_wrong[flipped]).sort_values(["_order", "id"], kind="stable").drop(columns="_order")


@dataclass(frozen=True)
class ExplainConfig(Options):
    """Options of ``featx explain``: the results file (None: the last run here), text-length buckets, whether
    to add the texts, and how many rows the printed lists show."""

    results: str | Path | None = None
    buckets: int = option(4, flag="--buckets", help="Text-length buckets (quantiles of tokens).")
    texts: bool = True
    limit: int = option(10, flag="--limit", help="Rows listed per group.")
    write: bool = True  # the confusion matrix as <stem>.confusion.csv beside the predictions


ExplainConfig.CONSTRAINTS = (path_like("results"), whole("buckets", "--buckets"), whole("limit", "--limit"))


@keywords_of(ExplainConfig)
def explain(config: ExplainConfig | str | Path | None = None, **options: object) -> Explanation | RegressionExplanation:
    """Diagnostics of a probing run: ``featx.explain("corpus.features.label.probe.csv")``; takes an
    ``ExplainConfig`` or its fields as keywords."""
    chosen = ExplainConfig.build(config, **options)
    buckets, texts = chosen.buckets, chosen.texts
    path, meta, results = _resolve(chosen.results)
    regression = meta.get("task") == "regression"
    baseline = baseline_line(meta, path, results, regression)
    if regression:
        return explain_regression(path, meta, buckets, texts, baseline)
    frame, layers = _read_predictions(path)
    predicted = frame[[LAYER_PREFIX + layer for layer in layers]].astype(str)
    predicted.columns = layers
    true = frame["label"].astype(str)
    correct = predicted.eq(true, axis=0)
    notes: list[str] = []
    if texts:
        add_texts(frame, meta)
    values = correct.to_numpy()
    flips = _flips(frame, values, layers)
    never = ~values.any(axis=1)
    always_wrong = frame.loc[never].copy()
    always_wrong["last_prediction"] = predicted.loc[never, layers[-1]]

    classes = sorted(true.unique())
    per_class = pd.DataFrame(
        {layer: [_f1(true.to_numpy(), predicted[layer].to_numpy(), name) for name in classes] for layer in layers},
        index=pd.Index(classes, name="class"),
    )
    by_length = _accuracy_by(length_buckets(frame["n_tokens"].astype(int), buckets), correct, "tokens")
    truncated = frame["truncated"].map(lambda v: str(v).lower() in ("true", "1")).map({False: "no", True: "yes"})
    by_truncation = _accuracy_by(truncated, correct, "truncated")
    confusions = None
    layer, how = confusion_layer(meta, layers, correct)
    if meta.get("level") in ("word", "arc"):  # word-level runs: which tags the chosen layer mixes up
        from ..tasks.word_predictions import top_confusions

        confusions = top_confusions(true, predicted[layer])
    found = Explanation(
        path,
        str(meta.get("label", "")),
        str(meta.get("predictions_for", "")),
        layers,
        correct,
        flips.reset_index(drop=True),
        always_wrong.reset_index(drop=True),
        per_class,
        by_length,
        by_truncation,
        notes,
        confusions,
        confusion_matrix(true, predicted[layer], list(meta.get("label_names") or classes)),
        layer,
        how,
        baseline=baseline,
    )
    if chosen.write:
        _write_confusion(found)
    return found

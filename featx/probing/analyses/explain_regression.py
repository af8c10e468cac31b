"""``featx explain`` for a regression run: R² and MAE by layer, the largest residuals, error by length."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import StoreError, require_whole
from ...io import read_csv
from ..choice import chosen_layer
from ..evaluation import regression_metrics as rm

LAYER_PREFIX = "layer_"  # the per-layer columns of a predictions file


def length_buckets(n_tokens: pd.Series, buckets: int = 4) -> pd.Series:
    """Quantile buckets of the token counts, labelled by their ranges (e.g. '8-12')."""
    edges = np.unique(np.quantile(n_tokens, np.linspace(0, 1, buckets + 1)).round())
    if len(edges) < 2:
        return pd.Series([f"{int(n_tokens.min())}"] * len(n_tokens), index=n_tokens.index)
    codes = np.clip(np.searchsorted(edges, n_tokens, side="right") - 1, 0, len(edges) - 2)
    labels = [
        f"{int(lo) if i == 0 else int(lo) + 1}-{int(hi)}"
        for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=False))
    ]
    return pd.Series(pd.Categorical([labels[c] for c in codes], categories=labels, ordered=True), index=n_tokens.index)


@dataclass
class RegressionExplanation:
    predictions_path: Path
    label: str
    predictions_for: str
    layers: list[str]
    by_layer: pd.DataFrame  # layer x (r2, mae)
    largest: pd.DataFrame  # rows with the largest absolute residual at the best layer, residuals per layer
    by_length: pd.DataFrame  # length bucket x layers: MAE (with row counts)
    best: str = ""  # the layer of the largest residuals: chosen on the training part, else the best test R²
    best_how: str = ""  # how it was picked (featx.probing.choice.chosen_layer)
    baseline: str = ""  # the training mean's R² on the same rows, and where it comes from

    def format(self, limit: int = 10) -> str:
        require_whole(limit, "--limit")
        lines = [
            f"explaining {self.predictions_path} (label '{self.label}', regression, {self.predictions_for}, "
            f"{len(self.largest)} rows, layers {', '.join(self.layers)})",
            "",
            "R² and MAE by layer:",
            self.by_layer.T.to_string(float_format=lambda v: f"{v:.3f}"),
            *([self.baseline] if self.baseline else []),
            "",
            f"largest residuals (prediction - label) at layer {self.best} ({self.best_how}), by layer:",
        ]
        shown = self.largest.head(limit).copy()
        shown["label"] = shown["label"].map(lambda v: f"{v:.2f}")
        for column in TEXT_COLUMNS[: texts_in(shown)]:
            shown[column] = shown[column].map(lambda t: t if len(t) <= 60 else t[:57] + "...")
        lines += ["  " + line for line in shown.to_string(index=False, float_format=lambda v: f"{v:+.2f}").splitlines()]
        if len(self.largest) > limit:
            lines.append(f"  ... {len(self.largest) - limit} more (--limit N shows more)")
        lines += [
            "",
            "mean absolute error by length (tokens):",
            self.by_length.to_string(float_format=lambda v: f"{v:.3f}"),
        ]
        return "\n".join(lines)


TEXT_COLUMNS = ["text", "text_b"]


def texts_in(frame: pd.DataFrame) -> int:
    """How many of ``TEXT_COLUMNS`` the frame holds (0, 1, or 2 for a sentence pair)."""
    return sum(column in frame for column in TEXT_COLUMNS)


def add_texts(frame: pd.DataFrame, meta: dict) -> None:
    """Each row's text (``text``), and a sentence pair's second text (``text_b``), read from the features file
    when it is still there."""
    if "row" not in frame or not meta.get("features_file") or not Path(meta["features_file"]).exists():
        return
    from ...store import FeatureFile

    with FeatureFile(meta["features_file"], allow_partial=True) as features:
        sides = [("text", features.texts), ("text_b", features.pair_texts)]
    rows = frame["row"].astype(int)
    for column, values in sides:
        if values is not None:
            frame[column] = [values[i] if 0 <= i < len(values) else "" for i in rows]


def explain_regression(path: Path, meta: dict, buckets: int, texts: bool, baseline: str = "") -> RegressionExplanation:
    try:
        frame = read_csv(path, dtype={"id": str}, keep_default_na=False)
        layers = [column[len(LAYER_PREFIX) :] for column in frame.columns if column.startswith(LAYER_PREFIX)]
        true = frame["label"].astype(float).to_numpy()
        predicted = frame[[LAYER_PREFIX + layer for layer in layers]].astype(float)
    except (KeyError, ValueError, OSError) as err:
        raise StoreError(f"{path} is not a featx regression predictions file ({err})") from None
    if not layers:
        raise StoreError(f"{path} is not a featx predictions file: it has no layer_* columns")
    predicted.columns = layers
    residual = predicted.sub(true, axis=0)
    scores = rm.metrics(true, np.ascontiguousarray(predicted.to_numpy(dtype=np.float64).T))
    by_layer = pd.DataFrame({"r2": scores["r2"], "mae": scores["mae"]}, index=pd.Index(layers, name="layer"))
    if texts:
        add_texts(frame, meta)
    best, how = chosen_layer(meta, layers, by_layer.r2)
    order = np.argsort(-residual[best].abs().to_numpy(), kind="stable")
    largest = (
        pd.concat(
            [frame[["id", "label"]], residual.add_prefix("layer ")] + [frame[TEXT_COLUMNS[: texts_in(frame)]]],
            axis=1,
        )
        .iloc[order]
        .reset_index(drop=True)
    )
    groups = length_buckets(frame["n_tokens"].astype(int), buckets)
    errors = residual.abs()
    by_length = errors.groupby(groups.values, observed=True).mean()
    by_length.insert(0, "rows", errors.groupby(groups.values, observed=True).size())
    by_length.index.name = "tokens"
    label, predictions_for = str(meta.get("label", "")), str(meta.get("predictions_for", ""))
    return RegressionExplanation(
        path, label, predictions_for, layers, by_layer, largest, by_length, best, how, baseline
    )

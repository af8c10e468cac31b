"""Layer-wise plots of probe results: the library API behind ``featx plot`` and the notebooks.

Every function takes the results table as a pandas DataFrame plus its run metadata (a dict), so
it works the same from the CSV or the JSON results file, or from ``featx.probe(...)`` directly.
The table has one row per (features, layer_spec, pooling, classifier); the columns used here are
``features`` ("main" or "baseline"), ``kind`` ("single", "cat", "stack" or "majority"), ``layer``,
``pooling``, ``classifier``, the metric columns (``accuracy``, ``macro_f1``, ``balanced_accuracy``,
each with ``_low``/``_high`` 95% bounds), ``control_accuracy`` and ``per_class_f1`` (JSON).

Results that probe several sites (``featx probe --site hidden,ffn,...``; a ``site`` column) are
compared per layer: one line per site, or per site × pooling when there are several poolings
(the pooling keeps its colour and marker, each site gets its own line style).

Colours are the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies),
with a fixed colour and marker per pooling so the same pooling looks the same in every figure.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .errors import InputError, StoreError

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
POOLING_STYLE = {
    "cls": (OKABE_ITO["blue"], "o"),
    "mean": (OKABE_ITO["vermillion"], "s"),
    "max": (OKABE_ITO["bluish_green"], "^"),
    "last": (OKABE_ITO["reddish_purple"], "D"),
    "pooler": (OKABE_ITO["orange"], "v"),
}
# For class labels and poolings featx does not know: yellow last, it is faint on white.
CYCLE = [OKABE_ITO[name] for name in ("blue", "vermillion", "bluish_green", "reddish_purple", "orange",
                                      "sky_blue", "black", "yellow")]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
REFERENCE_GREY = "#555555"
SITE_LINESTYLES = ["-", "--", ":", "-."]

METRICS = ("accuracy", "macro_f1", "balanced_accuracy", "selectivity", "control_accuracy")
METRIC_NAMES = {
    "accuracy": "accuracy",
    "macro_f1": "macro-F1",
    "balanced_accuracy": "balanced accuracy",
    "selectivity": "selectivity (accuracy − control)",
    "control_accuracy": "control-task accuracy",
}
REQUIRED_COLUMNS = ("kind", "layer", "pooling", "classifier")
FORMATS = ("png", "svg")

RC = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 9.5,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text in the SVG: searchable, and small
    "svg.hashsalt": "featx",  # stable ids, so the same results give the same SVG
}


# -- loading -------------------------------------------------------------------------------------
def _read_results_file(path: Path) -> tuple[pd.DataFrame, dict]:
    """Read a results CSV (meta from the JSON beside it) or JSON with featx probe's own reader."""
    from .probing.results import load_results as read_results

    try:
        return read_results(path)
    except (TypeError, AttributeError):  # valid JSON of another shape, e.g. a list
        raise StoreError(f"{path} is not a featx results file (no 'results' list)",
                         "give the .probe.json or .probe.csv file written by featx probe") from None


def load_results(source, meta: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """``(table, meta)`` from a results path, a DataFrame, or a ``(DataFrame, meta)`` pair.

    Checks the columns the plots need and normalises types (``layer`` as integers on single rows,
    ``per_class_f1`` as dicts) without changing the caller's DataFrame.
    """
    path = None
    if isinstance(source, tuple) and len(source) == 2:
        source, meta = source
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        frame, file_meta = _read_results_file(path)
        meta = {**file_meta, **(meta or {})}
    elif isinstance(source, pd.DataFrame):
        frame = source
    else:
        raise InputError(f"cannot plot {type(source).__name__}: give a results file path or a DataFrame")
    where = str(path) if path else "the results table"
    missing = [column for column in REQUIRED_COLUMNS if column not in frame.columns]
    if missing:
        raise StoreError(f"{where} lacks column(s) {', '.join(missing)}; it does not look like featx probe results",
                         "give the .probe.csv or .probe.json file written by featx probe")
    frame = frame.copy()
    if "features" not in frame.columns:
        frame["features"] = "main"
    frame["features"] = frame["features"].fillna("main").astype(str)
    frame["kind"] = frame["kind"].fillna("").astype(str)
    frame["pooling"] = frame["pooling"].fillna("").astype(str)
    if "site" not in frame.columns:  # results from before sites: every probe read the hidden states
        frame["site"] = "hidden"
    frame["site"] = frame["site"].fillna("").astype(str)
    frame["classifier"] = frame["classifier"].fillna("").astype(str)
    frame["layer"] = pd.to_numeric(frame["layer"], errors="coerce").astype("Int64")
    if "per_class_f1" in frame.columns:
        frame["per_class_f1"] = [_as_dict(value) for value in frame["per_class_f1"]]
    meta = dict(meta or {})
    if path is not None:
        meta.setdefault("results_path", str(path))
    return frame, meta


def _as_dict(value) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        try:
            parsed = json.loads(value)
            return parsed if isinstance(parsed, dict) else {}
        except ValueError:
            return {}
    return {}


# -- selecting rows ------------------------------------------------------------------------------
def _check_metric(frame: pd.DataFrame, metric: str) -> None:
    if metric not in frame.columns or frame[metric].isna().all():
        available = [name for name in METRICS if name in frame.columns and not frame[name].isna().all()]
        raise InputError(f"metric '{metric}' is not in these results",
                         f"choose one of: {', '.join(available) or '(none)'}")


def _layer_results(frame, meta, metric: str, classifier: str | None):
    """Results loaded and checked for ``metric``: (frame, meta, classifier, that classifier's layer rows)."""
    frame, meta = load_results(frame, meta)
    _check_metric(frame, metric)
    classifier = classifier or default_classifier(frame)
    return frame, meta, classifier, layer_rows(frame, classifier)


def default_classifier(frame: pd.DataFrame) -> str:
    """The classifier of the most accurate probe row (the first classifier if there is no accuracy)."""
    probed = frame[(frame["features"] == "main") & frame["kind"].isin(["single", "cat", "stack"])]
    if probed.empty:
        raise InputError("these results have no probe rows (only baselines)", "run featx probe with --layer all")
    if "accuracy" in probed.columns and probed["accuracy"].notna().any():
        return str(probed.loc[probed["accuracy"].astype(float).idxmax(), "classifier"])
    return str(probed["classifier"].iloc[0])


def layer_rows(frame: pd.DataFrame, classifier: str | None = None, features: str = "main") -> pd.DataFrame:
    """Single-layer rows of one classifier, sorted by pooling order of appearance then layer."""
    classifier = classifier or default_classifier(frame)
    rows = frame[(frame["features"] == features) & (frame["kind"] == "single") & (frame["classifier"] == classifier)]
    if rows.empty and features == "main":
        known = sorted(set(frame.loc[frame["kind"] == "single", "classifier"]))
        raise InputError(f"no single-layer results for classifier '{classifier}'",
                         f"classifiers in these results: {', '.join(known) or '(none)'}; "
                         "probe with --layer all to get per-layer rows")
    rows = rows.dropna(subset=["layer"]).sort_values(["layer"], kind="stable")
    if "site" in rows.columns and rows["site"].nunique() > 1:
        # Several sites: each (site, pooling) is its own series, named in the "pooling" column that
        # every panel groups by ("ffn" alone when all rows share one pooling, else "ffn · mean").
        one_pooling = rows["pooling"].nunique() == 1
        rows = rows.assign(probe_pooling=rows["pooling"],
                           pooling=rows["site"] if one_pooling else rows["site"] + " · " + rows["pooling"])
    return rows


def poolings_of(rows: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(rows["pooling"]))


def best_row(rows: pd.DataFrame, metric: str = "accuracy") -> pd.Series:
    """The row with the highest ``metric``; ties go to the lower layer (cheaper to use)."""
    ranked = rows.dropna(subset=[metric]).sort_values([metric, "layer"], ascending=[False, True], kind="stable")
    if ranked.empty:
        raise InputError(f"no row has a value for '{metric}'")
    return ranked.iloc[0]


def references(frame: pd.DataFrame, metric: str = "accuracy", classifier: str | None = None) -> list[tuple[str, float]]:
    """Horizontal reference values: majority class, best control task, best baseline-features probe."""
    found: list[tuple[str, float]] = []
    majority = frame[frame["kind"] == "majority"]
    if metric in majority.columns and not majority[metric].dropna().empty:
        found.append(("majority class", float(majority[metric].dropna().iloc[0])))
    rows = layer_rows(frame, classifier)
    control_column = "control_accuracy" if metric == "accuracy" else f"control_{metric}"
    if control_column in rows.columns and not rows[control_column].dropna().empty:
        found.append(("control task (max over layers)", float(rows[control_column].max())))
    baseline = frame[(frame["features"] == "baseline") & (frame["kind"] != "majority")]
    if metric in baseline.columns and not baseline[metric].dropna().empty:
        top = baseline.loc[baseline[metric].idxmax()]
        where = f"layer {int(top['layer'])}" if pd.notna(top["layer"]) else str(top.get("layer_spec", ""))
        found.append((f"baseline features (best: {where}, {top['pooling']})", float(top[metric])))
    return found


def _style(pooling: str, index: int) -> tuple[str, str]:
    if " · " in pooling:  # a site × pooling series keeps its pooling's colour and marker
        pooling = pooling.split(" · ", 1)[1]
    return POOLING_STYLE.get(pooling, (CYCLE[index % len(CYCLE)], MARKERS[index % len(MARKERS)]))


def _series_name(rows: pd.DataFrame) -> str:
    """What the rows' "pooling" column names: pooling, site, or site · pooling (see ``layer_rows``)."""
    if "site" not in rows.columns or rows["site"].nunique() < 2:
        return "pooling"
    return "site" if set(rows["pooling"]) <= set(rows["site"]) else "site · pooling"


def _linestyle(part: pd.DataFrame, sites: list[str]) -> str:
    if "site" not in part.columns or len(sites) < 2 or part["pooling"].iloc[0] in sites:
        return "-"  # one site, or one line per site (told apart by colour)
    return SITE_LINESTYLES[sites.index(part["site"].iloc[0]) % len(SITE_LINESTYLES)]


def _model_name(meta: dict) -> str:
    model = str(meta.get("model") or "model")
    if model.startswith("default:"):
        model = model.split(":", 1)[1]
    if os.sep in model or "/" in model:
        parts = Path(model).parts
        model = "/".join(parts[-2:]) if len(parts) >= 2 and not Path(model).is_absolute() else parts[-1]
    return model


def describe(frame: pd.DataFrame, meta: dict, classifier: str | None = None) -> str:
    """A one-line title: model, label column, classifier and row count."""
    classifier = classifier or default_classifier(frame)
    label = meta.get("label") or (frame["label"].iloc[0] if "label" in frame.columns and len(frame) else "label")
    n_rows = meta.get("n_rows")
    if n_rows is None and {"n_train", "n_test"} <= set(frame.columns):
        first = frame.dropna(subset=["n_train", "n_test"])
        if not first.empty:
            n_rows = int(first["n_train"].iloc[0] + first["n_test"].iloc[0])
    parts = [_model_name(meta), f"label: {label}", f"probe: {classifier}"]
    if n_rows is not None:
        parts.append(f"{int(n_rows):,} rows")
    evaluation = meta.get("evaluation")
    if isinstance(evaluation, str) and evaluation:
        parts.append(evaluation)
    return " · ".join(parts)


# -- panels --------------------------------------------------------------------------------------
def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        _, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    return ax


def plot_layer_curves(frame: pd.DataFrame, meta: dict | None = None, ax=None, metric: str = "accuracy",
                      classifier: str | None = None, legend: bool = True, title: bool | str = True):
    """``metric`` against layer, one line per pooling, 95% bands, reference lines, best layer starred."""
    import matplotlib.pyplot as plt

    frame, meta, classifier, rows = _layer_results(frame, meta, metric, classifier)
    with plt.rc_context(RC):
        ax = _axes(ax)
        values: list[float] = []
        hollow_drawn = False
        sites = list(dict.fromkeys(rows["site"])) if "site" in rows.columns else []
        for index, pooling in enumerate(poolings_of(rows)):
            part = rows[rows["pooling"] == pooling]
            colour, marker = _style(pooling, index)  # site names fall through to the cycle
            layers = part["layer"].astype(int).to_numpy()
            y = part[metric].astype(float).to_numpy()
            ax.plot(layers, y, color=colour, marker=marker, markersize=5, linewidth=2, label=pooling, zorder=3,
                    linestyle=_linestyle(part, sites))
            if metric == "accuracy":
                hollow_drawn |= _mark_like_best(ax, part, layers, y, colour, marker)
            low, high = f"{metric}_low", f"{metric}_high"
            if low in part.columns and high in part.columns and part[[low, high]].notna().all().all():
                lo, hi = part[low].astype(float).to_numpy(), part[high].astype(float).to_numpy()
                ax.fill_between(layers, lo, hi, color=colour, alpha=0.15, linewidth=0, zorder=2)
                values += list(lo) + list(hi)
            values += list(y[np.isfinite(y)])
        styles = ["--", ":", "-."]
        for (name, value), style in zip(references(frame, metric, classifier), styles):
            ax.axhline(value, color=REFERENCE_GREY if style != ":" else OKABE_ITO["black"], linestyle=style,
                       linewidth=1.4, label=f"{name}: {value:.2f}", zorder=1)
            values.append(value)
        best = best_row(rows, metric)
        ax.plot([int(best["layer"])], [float(best[metric])], marker="*", markersize=17, color=OKABE_ITO["black"],
                markerfacecolor=OKABE_ITO["yellow"], linestyle="none", zorder=4,
                label=f"best: layer {int(best['layer'])}, {best['pooling']} ({float(best[metric]):.3f})")
        if hollow_drawn:
            ax.plot([], [], marker="o", markersize=7, linestyle="none", markerfacecolor="white",
                    markeredgecolor=REFERENCE_GREY, label="hollow: not significantly below its pooling's best")
        layers_all = sorted(set(rows["layer"].astype(int)))
        ax.set_xticks(layers_all)
        ax.set_xlim(min(layers_all) - 0.3, max(layers_all) + 0.3)
        finite = [value for value in values if math.isfinite(value)]
        if finite:
            low, high = min(finite), max(finite)
            pad = max(0.02, 0.06 * (high - low))
            top = high + pad
            if metric != "selectivity":
                top = min(top, 1.0 + pad / 2)
            ax.set_ylim(low - pad, top)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        ax.grid(True, axis="y", alpha=0.3)
        if legend:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False,
                      columnspacing=1.2, handlelength=2.2)
        if title:
            ax.set_title(title if isinstance(title, str) else f"{METRIC_NAMES.get(metric, metric)} by layer",
                         loc="left")
    return ax


def _mark_like_best(ax, part: pd.DataFrame, layers, y, colour, marker) -> bool:
    """Hollow markers on the layers whose accuracy is not significantly below the pooling's best
    (``significant_vs_best`` False after Holm, the best itself included). True if any were drawn."""
    if "significant_vs_best" not in part.columns:
        return False
    like_best = part["significant_vs_best"].map(lambda v: v is False or v is np.False_ or str(v) == "False")
    like_best = like_best.to_numpy(bool)
    if part["significant_vs_best"].isna().all() or not like_best.any():
        return False
    ax.plot(layers[like_best], y[like_best], marker=marker, markersize=8, linestyle="none", markerfacecolor="white",
            markeredgecolor=colour, markeredgewidth=1.8, zorder=3.5)
    return True


def plot_mdl(frame: pd.DataFrame, meta: dict | None = None, ax=None, classifier: str | None = None,
             value: str = "mdl_compression", legend: bool = True, title: bool | str = True):
    """MDL probe (``featx probe --mdl``): compression over the uniform code by layer, one line per pooling.

    ``value="mdl_bits"`` draws the online codelength instead. Compression 1 (dashed) = no information.
    """
    import matplotlib.pyplot as plt

    frame, meta = load_results(frame, meta)
    if value not in frame.columns or pd.to_numeric(frame[value], errors="coerce").isna().all():
        raise InputError("these results have no MDL columns", "run featx probe --mdl")
    rows = layer_rows(frame, classifier)
    with plt.rc_context(RC):
        ax = _axes(ax)
        for index, pooling in enumerate(poolings_of(rows)):
            part = rows[rows["pooling"] == pooling]
            colour, marker = _style(pooling, index)
            ax.plot(part["layer"].astype(int), part[value].astype(float), color=colour, marker=marker, markersize=5,
                    linewidth=2, label=pooling, zorder=3)
        if value == "mdl_compression":
            ax.axhline(1.0, color=REFERENCE_GREY, linestyle="--", linewidth=1.4, label="uniform code (no information)")
        layers_all = sorted(set(rows["layer"].astype(int)))
        ax.set_xticks(layers_all)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel("compression (uniform / online code)" if value == "mdl_compression" else "online codelength (bits)")
        ax.grid(True, axis="y", alpha=0.3)
        if legend:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
        if title:
            ax.set_title(title if isinstance(title, str) else "MDL probe (online code)", loc="left")
    return ax


def plot_learning_curves(curve, ax=None, pooling: str | None = None, classifier: str | None = None,
                         legend: bool = True, title: bool | str = True, site: str | None = None):
    """Accuracy against training rows per fold (``featx probe --train-sizes``), one line per layer of one
    site (default: ``hidden`` when present)."""
    import matplotlib.pyplot as plt

    if not isinstance(curve, pd.DataFrame):
        path = Path(curve)
        if not path.exists():
            raise StoreError(f"learning-curve file {path} does not exist", "run featx probe --train-sizes ...")
        curve = pd.read_csv(path)
    if curve.empty or "n_train" not in curve.columns:
        raise InputError("no learning-curve rows", "run featx probe --train-sizes 0.1,0.25,0.5,1.0")
    if "site" in curve.columns:  # curve files from before sites hold hidden only
        sites = list(dict.fromkeys(curve["site"].astype(str)))
        site = site or ("hidden" if "hidden" in sites else sites[0])
        if site not in sites:
            raise InputError(f"no learning curves for site '{site}'", f"choose from {', '.join(sites)}")
        curve = curve[curve["site"].astype(str) == site]
    pooling = pooling or str(curve["pooling"].iloc[0])
    classifier = classifier or str(curve["classifier"].iloc[0])
    part = curve[(curve["pooling"] == pooling) & (curve["classifier"] == classifier)]
    with plt.rc_context(RC):
        ax = _axes(ax)
        for index, (spec, rows) in enumerate(part.groupby("layer_spec", sort=False)):
            rows = rows.sort_values("n_train")
            colour, marker = CYCLE[index % len(CYCLE)], MARKERS[index % len(MARKERS)]
            ax.plot(rows["n_train"], rows["accuracy"], color=colour, marker=marker, linewidth=2, label=f"layer {spec}")
            if rows[["accuracy_low", "accuracy_high"]].notna().all().all():
                ax.fill_between(rows["n_train"], rows["accuracy_low"], rows["accuracy_high"], color=colour, alpha=0.12,
                                linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("training rows (per fold)")
        ax.set_ylabel("accuracy")
        ax.grid(True, alpha=0.3)
        if legend:
            ax.legend(frameon=False)
        if title:
            where = "" if site in (None, "hidden") else f"{site}, "
            ax.set_title(title if isinstance(title, str) else f"learning curves ({where}{pooling}, {classifier})",
                         loc="left")
    return ax


def has_mdl(frame: pd.DataFrame) -> bool:
    return "mdl_compression" in frame.columns and pd.to_numeric(frame["mdl_compression"], errors="coerce").notna().any()


def plot_heatmap(frame: pd.DataFrame, meta: dict | None = None, ax=None, metric: str = "accuracy",
                 classifier: str | None = None, colorbar: bool = True, title: bool | str = True):
    """A pooling × layer grid of ``metric`` with every value written in its cell; best cell outlined."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    frame, meta, classifier, rows = _layer_results(frame, meta, metric, classifier)
    poolings = poolings_of(rows)
    layers = sorted(set(rows["layer"].astype(int)))
    grid = (rows.assign(layer=rows["layer"].astype(int))
            .pivot_table(index="pooling", columns="layer", values=metric, aggfunc="first")
            .reindex(index=poolings, columns=layers))
    data = grid.to_numpy(dtype=float)
    with plt.rc_context(RC):
        ax = _axes(ax)
        import matplotlib as mpl

        cmap = mpl.colormaps["cividis"]
        finite = data[np.isfinite(data)]
        vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if vmax - vmin < 1e-9:
            vmin, vmax = vmin - 0.01, vmax + 0.01
        image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        size = 9.5 if len(layers) <= 8 else 8 if len(layers) <= 13 else 6.5
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                value = data[i, j]
                if not np.isfinite(value):
                    continue
                red, green, blue, _ = cmap((value - vmin) / (vmax - vmin))
                dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=size,
                        color="white" if dark else "black")
        best = best_row(rows, metric)
        bi, bj = poolings.index(best["pooling"]), layers.index(int(best["layer"]))
        ax.add_patch(Rectangle((bj - 0.5, bi - 0.5), 1, 1, fill=False, edgecolor=OKABE_ITO["vermillion"],
                               linewidth=2.5, zorder=3))
        ax.set_xticks(range(len(layers)), [str(layer) for layer in layers])
        ax.set_yticks(range(len(poolings)), poolings)
        ax.set_xlabel("layer")
        ax.set_ylabel(_series_name(rows))
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.tick_params(length=0)
        if colorbar:
            ax.figure.colorbar(image, ax=ax, fraction=0.05, pad=0.02, label=METRIC_NAMES.get(metric, metric))
        if title:
            ax.set_title(title if isinstance(title, str) else f"{METRIC_NAMES.get(metric, metric)}: layer × {_series_name(rows)}",
                         loc="left")
    return ax


def plot_per_class_f1(frame: pd.DataFrame, meta: dict | None = None, ax=None, pooling: str | None = None,
                      classifier: str | None = None, title: bool | str = True):
    """F1 of each class against layer for one pooling (default: the best pooling by accuracy)."""
    import matplotlib.pyplot as plt

    frame, meta = load_results(frame, meta)
    if "per_class_f1" not in frame.columns:
        raise InputError("these results have no per_class_f1 column", "re-run featx probe to get per-class F1")
    classifier = classifier or default_classifier(frame)
    rows = layer_rows(frame, classifier)
    if pooling is None:
        pooling = str(best_row(rows, "accuracy" if "accuracy" in rows.columns else "macro_f1")["pooling"])
    part = rows[rows["pooling"] == pooling]
    if part.empty:
        raise InputError(f"no rows for pooling '{pooling}'", f"poolings in these results: {', '.join(poolings_of(rows))}")
    per_layer = {int(row["layer"]): row["per_class_f1"] for _, row in part.iterrows()}
    classes = list(meta.get("label_names") or [])
    for scores in per_layer.values():
        classes += [name for name in scores if name not in classes]
    classes = [name for name in classes if any(name in scores for scores in per_layer.values())]
    if not classes:
        raise InputError("the per_class_f1 column is empty in these results")
    with plt.rc_context(RC):
        ax = _axes(ax)
        layers = sorted(per_layer)
        for index, name in enumerate(classes):
            y = [per_layer[layer].get(name, np.nan) for layer in layers]
            ax.plot(layers, y, color=CYCLE[index % len(CYCLE)], marker=MARKERS[index % len(MARKERS)],
                    markersize=5, linewidth=2, label=str(name))
        ax.set_xticks(layers)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel("F1 of the class")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(title=str(meta.get("label") or "class"), frameon=False, loc="best")
        if title:
            ax.set_title(title if isinstance(title, str) else f"per-class F1 by layer ({pooling} pooling)", loc="left")
    return ax


def plot_projection(features, layer: int, pooling: str, label: str, ax=None, split: str | None = None,
                    max_points: int = 3000, seed: int = 0, title: bool | str = True, site: str = "hidden"):
    """The rows of one (layer, pooling) projected on their first two principal components, coloured by label.

    ``features`` is a features file path or an open ``featx.FeatureFile``. ``split`` keeps only rows
    of that split; at most ``max_points`` rows are drawn (a seeded random subset). ``site`` picks a
    stored site other than the hidden states (``featx extract --site``).
    """
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA

    from .store import FeatureFile, open_features

    opened = features if isinstance(features, FeatureFile) else open_features(features)
    try:
        X = opened.features(pooling, layer, site=site)
        codes = opened.labels(label)
        names = opened.label_names(label)
        keep = codes >= 0
        if split is not None:
            if opened.split is None:
                raise InputError(f"{opened.path} has no split column, so split='{split}' cannot be used")
            keep &= opened.split == split
    finally:
        if opened is not features:
            opened.close()
    index = np.flatnonzero(keep)
    if index.size < 3:
        raise InputError(f"only {index.size} labelled rows to project; need at least 3")
    if index.size > max_points:
        index = np.sort(np.random.default_rng(seed).choice(index, max_points, replace=False))
    X, codes = X[index], codes[index]
    centred = X - X.mean(axis=0)
    constant = float((centred ** 2).sum()) <= 1e-12 * max(1.0, float((X ** 2).sum()))
    if constant:  # e.g. CLS at layer 0: the same vector for every row, nothing to project
        points, ratio = np.zeros((len(X), 2)), np.zeros(2)
    else:
        pca = PCA(n_components=2, random_state=seed)
        points = pca.fit_transform(centred)
        ratio = pca.explained_variance_ratio_
    with plt.rc_context(RC):
        ax = _axes(ax)
        for code, name in enumerate(names):
            chosen = codes == code
            if chosen.any():
                ax.scatter(points[chosen, 0], points[chosen, 1], s=9, alpha=0.6, linewidths=0,
                           color=CYCLE[code % len(CYCLE)], marker=MARKERS[code % len(MARKERS)], label=str(name))
        ax.set_xlabel(f"PC1 ({ratio[0]:.0%} of variance)")
        ax.set_ylabel(f"PC2 ({ratio[1]:.0%} of variance)")
        ax.legend(title=label, frameon=False, markerscale=2, loc="best")
        if constant:
            ax.text(0.5, 0.9, "every row has the same vector here", transform=ax.transAxes, ha="center")
        if title:
            where = "" if site == "hidden" else f"{site}, "
            ax.set_title(title if isinstance(title, str) else f"layer {layer}, {where}{pooling} pooling: PCA by {label}",
                         loc="left")
    return ax


def plot_labels(results: Iterable, ax=None, metric: str = "accuracy", classifier: str | None = None,
                title: bool | str = True):
    """Several label columns probed on the same features: one line per label (its best pooling), best layer starred.

    ``results`` is an iterable of anything ``load_results`` takes (one per label). Each label's
    majority-class value is drawn as a short dashed line in the same colour, so labels with
    different numbers of classes can be compared against their own chance level.
    """
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        ax = _axes(ax)
        layers_seen: set[int] = set()
        for index, source in enumerate(results):
            frame, meta, _, rows = _layer_results(source, None, metric, classifier)
            best = best_row(rows, metric)
            part = rows[rows["pooling"] == best["pooling"]]
            label = meta.get("label") or (frame["label"].iloc[0] if "label" in frame.columns else f"results {index + 1}")
            colour, marker = CYCLE[index % len(CYCLE)], MARKERS[index % len(MARKERS)]
            layers = part["layer"].astype(int).to_numpy()
            layers_seen.update(layers.tolist())
            ax.plot(layers, part[metric].astype(float), color=colour, marker=marker, markersize=5, linewidth=2,
                    label=f"{label} ({best['pooling']}): best layer {int(best['layer'])}, {float(best[metric]):.2f}")
            ax.plot([int(best["layer"])], [float(best[metric])], marker="*", markersize=15, color=OKABE_ITO["black"],
                    markerfacecolor=colour, linestyle="none", zorder=4)
            majority = [value for name, value in references(frame, metric) if name == "majority class"]
            if majority:
                ax.hlines(majority[0], min(layers), max(layers), colors=colour, linestyles="--", linewidth=1, alpha=0.7)
        if not layers_seen:
            raise InputError("no results to compare", "give one results file per label column")
        ax.set_xticks(sorted(layers_seen))
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
        if title:
            ax.set_title(title if isinstance(title, str)
                         else f"{METRIC_NAMES.get(metric, metric)} by layer for each label (dashed: majority class)",
                         loc="left")
    return ax


# -- the figure ----------------------------------------------------------------------------------
def figure(results, meta: dict | None = None, metric: str = "accuracy", classifier: str | None = None,
           output: str | os.PathLike | None = None, formats: Iterable[str] = FORMATS, dpi: int = 150,
           baseline=None):
    """The two main panels side by side (curves, heatmap) under one title; saved if ``output`` is given.

    Results of ``featx probe --mdl`` get a third panel, the MDL compression by layer.

    ``results`` is anything ``load_results`` takes. ``baseline`` optionally adds a second results
    table (e.g. probes of a random-init model) whose best value becomes a reference line.
    ``output`` is a path whose suffix is replaced by each of ``formats``. Returns
    ``(figure, [written paths])``.
    """
    import matplotlib.pyplot as plt

    frame, meta = load_results(results, meta)
    if baseline is not None:
        base_frame, _ = load_results(baseline)
        base_frame = base_frame[base_frame["kind"] != "majority"].assign(features="baseline")
        frame = pd.concat([frame, base_frame], ignore_index=True)
    _check_metric(frame, metric)
    classifier = classifier or default_classifier(frame)
    mdl = has_mdl(frame)
    with plt.rc_context(RC):
        if mdl:  # featx probe --mdl: the MDL panel on the right
            fig, (left, right, third) = plt.subplots(1, 3, figsize=(19, 5.2), width_ratios=[1.15, 1, 1],
                                                     layout="constrained")
            plot_mdl(frame, meta, ax=third, classifier=classifier)
        else:
            fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2), width_ratios=[1.15, 1], layout="constrained")
        plot_layer_curves(frame, meta, ax=left, metric=metric, classifier=classifier)
        plot_heatmap(frame, meta, ax=right, metric=metric, classifier=classifier)
        fig.suptitle(describe(frame, meta, classifier), fontsize=13, x=0.01, ha="left")
        written = save(fig, output, formats, dpi) if output is not None else []
    return fig, written


def labels_figure(results: Iterable, metric: str = "accuracy", classifier: str | None = None,
                  output: str | os.PathLike | None = None, formats: Iterable[str] = FORMATS, dpi: int = 150):
    """``plot_labels`` as a figure titled with the model and row count; saved if ``output`` is given."""
    import matplotlib.pyplot as plt

    loaded = [load_results(source) for source in results]
    if not loaded:
        raise InputError("no results to compare", "give one results file per label column")
    first, meta = loaded[0]
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(8.5, 5.6), layout="constrained")
        plot_labels(loaded, ax=ax, metric=metric, classifier=classifier)
        n_rows = meta.get("n_rows")
        fig.suptitle(" · ".join([_model_name(meta), f"{len(loaded)} label columns"]
                                + ([f"{int(n_rows):,} rows"] if n_rows is not None else [])),
                     fontsize=13, x=0.01, ha="left")
        written = save(fig, output, formats, dpi) if output is not None else []
    return fig, written


def save(fig, output: str | os.PathLike, formats: Iterable[str] = FORMATS, dpi: int = 150) -> list[Path]:
    """Write ``fig`` once per format, replacing the suffix of ``output``; SVGs carry no date (reproducible)."""
    written: list[Path] = []
    for extension in formats:
        extension = extension.lstrip(".")
        target = Path(output).with_suffix(f".{extension}")
        try:
            fig.savefig(target, dpi=dpi, metadata={"Date": None} if extension == "svg" else None)
        except OSError as err:
            raise StoreError(f"cannot write {target}: {err}", "check the directory exists and is writable") from None
        written.append(target)
    return written


def default_output(results_path: str | os.PathLike) -> Path:
    """Where ``featx plot`` puts the figure: beside the results, same stem (``x.probe.csv`` -> ``x.probe.png``)."""
    return Path(results_path).with_suffix(".png")

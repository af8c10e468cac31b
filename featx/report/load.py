"""Loading probe results and choosing the rows a figure draws: shared by every figure and the report.

Every function takes the results table as a pandas DataFrame plus its run metadata (a dict), so
it works the same from the CSV or the JSON results file, or from ``featx.probe(...)`` directly.
The table has one row per (features, layer_spec, pooling, classifier); the columns used here are
``features`` ("main" or "baseline"), ``kind`` ("single", "cat", "stack" or "majority"), ``layer``,
``pooling``, ``classifier``, the metric columns (``accuracy``, ``macro_f1``, ``balanced_accuracy``,
each with ``_low``/``_high`` 95% bounds), ``control_accuracy`` and ``per_class_f1`` (JSON).

Results that probe several sites (``featx probe --site hidden,ffn,...``; a ``site`` column) are
compared per layer: one line per site, or per site × pooling when there are several poolings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import InputError, StoreError
from ..options import on_command_line, spoken, spoken_value
from ..safe_files import loads_json
from .figures.style import SITE_LINESTYLES

METRICS = (
    "accuracy", "macro_f1", "balanced_accuracy", "selectivity", "control_accuracy", "r2", "spearman", "pearson", "mae",
    "control_r2",
)  # fmt: skip
METRIC_NAMES = {
    "r2": "R²",
    "spearman": "Spearman rho",
    "pearson": "Pearson r",
    "mae": "mean absolute error",
    "control_r2": "control-task R²",
    "accuracy": "accuracy",
    "macro_f1": "macro-F1",
    "balanced_accuracy": "balanced accuracy",
    "selectivity": "selectivity (accuracy − control)",
    "control_accuracy": "control-task accuracy",
}
REQUIRED_COLUMNS = ("kind", "layer", "pooling", "classifier")


@dataclass
class Entry:
    """One results file in a comparison: its rows at the chosen classifier/site/pooling, and its best row."""

    frame: pd.DataFrame
    meta: dict
    source: str
    fields: dict = field(default_factory=dict)
    name: str = ""
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)
    best: pd.Series = field(default_factory=lambda: pd.Series(dtype=object))
    n_layers: int = 1
    metric: str = "accuracy"  # the metric its lines, star and table are in
    selected: bool = False  # the star is the row chosen on the training part (else the best on the test rows)


def _probe_with(phrase: str, command: str = "featx probe") -> str:
    """``featx probe``'s option ``phrase`` (``spoken_value``) as its caller adds it: ``featx probe with --layer all``
    on the command line (``command``: how the sentence names it), ``featx.probe(..., layers='all')`` from Python."""
    return f"{command} with {phrase}" if on_command_line() else f"featx.probe(..., {phrase})"


def _all_layers() -> str:  # made when raised: --layer all, layers='all'
    return spoken_value(None, "layers", "all", "--layer")


# -- loading -------------------------------------------------------------------------------------
def _read_results_file(path: Path) -> tuple[pd.DataFrame, dict]:
    """Read a results CSV (meta from the JSON beside it) or JSON with featx probe's own reader."""
    from ..probing import load_results as read_results

    try:
        return read_results(path)
    except (TypeError, AttributeError):  # valid JSON of another shape, e.g. a list
        raise StoreError(
            f"{path} is not a featx results file (no 'results' list)",
            "give the .probe.json or .probe.csv file written by featx probe",
        ) from None


def result_files(path: str | os.PathLike) -> list[Path]:
    """The files reading the results at ``path`` may open, which an output must never replace: its CSV and
    JSON, and beside them its per-row predictions, learning curve, amnesic table (erase) or ranking (neurons)."""
    path = Path(path)
    pair = [path.with_suffix(".csv"), path.with_suffix(".json")]
    name = pair[0].name
    stem = next(name[: -len(end)] for end in (".probe.csv", ".erase.csv", ".csv") if name.endswith(end))
    sides = (".predictions.csv", ".curve.csv", ".amnesic.csv", ".ranking.csv")
    return [path, *pair, *(path.with_name(stem + end) for end in sides)]


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
        raise StoreError(
            f"{where} lacks column(s) {', '.join(missing)}; it does not look like featx probe results",
            "give the .probe.csv or .probe.json file written by featx probe",
        )
    frame = frame.copy()
    if "features" not in frame.columns:
        frame["features"] = "main"
    frame["features"] = frame["features"].astype(object).fillna("main").astype(str)
    frame["kind"] = frame["kind"].astype(object).fillna("").astype(str)
    frame["pooling"] = frame["pooling"].astype(object).fillna("").astype(str)
    if "site" not in frame.columns:  # results from before sites: every probe read the hidden states
        frame["site"] = "hidden"
    frame["site"] = frame["site"].astype(object).fillna("").astype(str)
    frame["classifier"] = frame["classifier"].astype(object).fillna("").astype(str)
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
            parsed = loads_json(value)
            return parsed if isinstance(parsed, dict) else {}
        except ValueError:
            return {}
    return {}


# -- selecting rows ------------------------------------------------------------------------------
def check_metric(frame: pd.DataFrame, metric: str) -> None:
    """Refuse a metric the results lack (or hold only empty), naming the ones they have."""
    if metric not in frame.columns or frame[metric].isna().all():
        available = [name for name in METRICS if name in frame.columns and not frame[name].isna().all()]
        raise InputError(
            f"metric '{metric}' is not in these results; they have: {', '.join(available) or '(none)'}",
            f"choose one of those with {spoken(None, 'metric', '--metric')}",
        )


def default_metric(frame: pd.DataFrame, meta: dict | None = None) -> str:
    """The metric the run chose its best layer by (``metric`` in the results JSON) when the table has it, else
    ``accuracy`` for classification and ``r2`` for regression results."""
    recorded = (meta or {}).get("metric")
    if isinstance(recorded, str) and recorded in frame.columns and frame[recorded].notna().any():
        return recorded
    return main_metric(frame)


def chosen_row(rows: pd.DataFrame, metric: str, meta: dict | None = None) -> tuple[pd.Series, bool]:
    """The row the star marks and whether it was chosen on the training part: the highest ``selection_score``
    when the results have one and ``metric`` is the metric the run selected by; else the best test value
    (``best_row``), which is then the best on the test rows, not a selection."""
    selected_by = (meta or {}).get("metric") or main_metric(rows)
    if "selection_score" in rows.columns and metric == selected_by:
        scores = pd.to_numeric(rows["selection_score"], errors="coerce")
        if scores.notna().any():
            recorded = _recorded_choice(rows, scores, (meta or {}).get("selected"))
            if recorded is not None:  # a tie on the selection score is broken as the run broke it
                return recorded, True
            ranked = rows.assign(_score=scores).dropna(subset=["_score"])
            ranked = ranked.sort_values(["_score", "layer"], ascending=[False, True], kind="stable")
            return ranked.iloc[0].drop(labels="_score"), True
    return best_row(rows, metric), False


def _recorded_choice(rows: pd.DataFrame, scores: pd.Series, selected: object) -> pd.Series | None:
    """The row of ``rows`` the run recorded as chosen (the JSON meta's ``selected``) when it is among them with
    the best selection score; else None."""
    if not isinstance(selected, dict):
        return None
    pooling = rows["probe_pooling"] if "probe_pooling" in rows.columns else rows["pooling"]  # several sites
    same = (pooling == selected.get("pooling")) & (rows["classifier"] == selected.get("classifier"))
    same &= rows["layer"] == selected.get("layer")
    if "site" in rows.columns and selected.get("site") is not None:
        same &= rows["site"] == selected.get("site")
    if "features" in rows.columns:
        same &= rows["features"] == selected.get("features", "main")
    found = rows[same & (scores == scores.max())]
    return found.iloc[0] if len(found) == 1 else None


def selection_note(meta: dict, metric: str) -> str | None:
    """ "chosen on the training part; best on test: layer X (+0.0NN)" when the run recorded its selection
    (``selected``, ``best_on_test``, ``optimism`` in the results JSON) for ``metric``; else None."""
    selected, on_test = meta.get("selected"), meta.get("best_on_test")
    if not selected or (meta.get("metric") or metric) != metric:
        return None
    note = f"{_where(selected)} chosen on the training part"
    if on_test:
        optimism = meta.get("optimism")
        gain = f" ({float(optimism):+.3f})" if isinstance(optimism, (int, float)) else ""
        note += f"; best on test: {_where(on_test)}{gain}"
    return note


def _where(found) -> str:
    """``layer 6 (mean, logreg)`` from a ``selected``/``best_on_test`` record (a dict, or a bare layer)."""
    if not isinstance(found, dict):
        return f"layer {found}"
    layer = found.get("layer")
    layer = found.get("layer_spec", "?") if layer is None else layer  # a cat(...)/stack(...) row has no layer
    extra = ", ".join(
        str(found[key]) for key in ("site", "pooling", "classifier") if found.get(key) not in (None, "", "hidden")
    )
    return f"layer {layer}" + (f" ({extra})" if extra else "")


def layer_results(frame, meta, metric: str, classifier: str | None):
    """Results loaded and checked for ``metric``: (frame, meta, classifier, that classifier's layer rows)."""
    frame, meta = load_results(frame, meta)
    check_metric(frame, metric)
    classifier = classifier or default_classifier(frame, meta)
    return frame, meta, classifier, layer_rows(frame, classifier)


def default_classifier(frame: pd.DataFrame, meta: dict | None = None) -> str:
    """The classifier of the row the run chose on its training part (``meta``'s ``selected``, else the best
    ``selection_score``); only in results without either, that of the best test row (else the first)."""
    probed = frame[(frame["features"] == "main") & frame["kind"].isin(["single", "cat", "stack"])]
    if probed.empty:
        raise InputError("these results have no probe rows (only baselines)", f"run {_probe_with(_all_layers())}")
    selected = (meta or {}).get("selected")
    if isinstance(selected, dict) and selected.get("classifier") in set(probed["classifier"].astype(str)):
        return str(selected["classifier"])
    for column in ("selection_score", main_metric(probed)):
        scores = pd.to_numeric(probed[column], errors="coerce") if column in probed.columns else None
        if scores is not None and scores.notna().any():
            return str(probed.loc[scores.idxmax(), "classifier"])
    return str(probed["classifier"].iloc[0])


def main_metric(frame: pd.DataFrame) -> str:
    """``r2`` for regression results (no accuracy column), else ``accuracy``."""
    return "r2" if "accuracy" not in frame.columns and "r2" in frame.columns else "accuracy"


def layer_rows(frame: pd.DataFrame, classifier: str | None = None, features: str = "main") -> pd.DataFrame:
    """Single-layer rows of one classifier, sorted by pooling order of appearance then layer."""
    classifier = classifier or default_classifier(frame)
    rows = frame[(frame["features"] == features) & (frame["kind"] == "single") & (frame["classifier"] == classifier)]
    if rows.empty and features == "main":
        known = sorted(set(frame.loc[frame["kind"] == "single", "classifier"]))
        hint = (
            f"classifiers in these results: {', '.join(known)}; choose one with "
            f"{spoken(None, 'classifier', '--classifier')}, or "
            f"{_probe_with(spoken_value(None, 'classifiers', classifier, '--classifier'), 'probe')} to add it"
            if known
            else f"these results have no single-layer rows: {_probe_with(_all_layers(), 'probe')} to get per-layer rows"
        )
        raise InputError(f"no single-layer results for classifier '{classifier}'", hint)
    rows = rows.dropna(subset=["layer"]).sort_values(["layer"], kind="stable")
    if "site" in rows.columns and rows["site"].nunique() > 1:
        # Several sites: each (site, pooling) is its own series, named in the "pooling" column that
        # every panel groups by ("ffn" alone when all rows share one pooling, else "ffn · mean").
        one_pooling = rows["pooling"].nunique() == 1
        rows = rows.assign(
            probe_pooling=rows["pooling"],
            pooling=rows["site"] if one_pooling else rows["site"] + " · " + rows["pooling"],
        )
    return rows


def poolings_of(rows: pd.DataFrame) -> list[str]:
    """The series of ``rows`` (their "pooling" column) in order of appearance."""
    return list(dict.fromkeys(rows["pooling"]))


def best_row(rows: pd.DataFrame, metric: str = "accuracy") -> pd.Series:
    """The row with the highest ``metric``; ties go to the lower layer (cheaper to use)."""
    ranked = rows.dropna(subset=[metric]).sort_values([metric, "layer"], ascending=[False, True], kind="stable")
    if ranked.empty:
        raise InputError(f"no row has a value for '{metric}'")
    return ranked.iloc[0]


def lexical_source(meta: dict | None) -> str:
    """A study's copied lexical row: " (fitted beside model M's probe, PATH; reused, not refitted)"; else ""."""
    lexical = (meta or {}).get("lexical")
    if not isinstance(lexical, dict) or not lexical.get("from"):
        return ""
    return f" (fitted beside model {lexical.get('model')}'s probe, {lexical['from']}; reused, not refitted)"


def references(
    frame: pd.DataFrame, metric: str = "accuracy", classifier: str | None = None, meta: dict | None = None
) -> list[tuple[str, float]]:
    """Horizontal reference values: majority class, lexical baseline (where it came from: ``lexical_source``),
    best control task, best baseline-features probe."""
    found: list[tuple[str, float]] = []
    majority = frame[frame["kind"] == "majority"]
    if metric in majority.columns and not majority[metric].dropna().empty:
        found.append(("majority class", float(majority[metric].dropna().iloc[0])))
    mean = frame[frame["kind"] == "baseline"]  # regression: the training mean
    if metric in mean.columns and not mean[metric].dropna().empty:
        found.append(("training mean", float(mean[metric].dropna().iloc[0])))
    lexical = frame[frame["kind"] == "lexical"]  # words: most frequent label per type; sentences: TF-IDF n-grams
    if metric in lexical.columns and not lexical[metric].dropna().empty:
        found.append((_lexical_name(frame) + lexical_source(meta), float(lexical[metric].dropna().iloc[0])))
    rows = layer_rows(frame, classifier)
    control_column = "control_accuracy" if metric == "accuracy" else f"control_{metric}"
    if control_column in rows.columns and not rows[control_column].dropna().empty:
        found.append(("control task (max over layers)", float(rows[control_column].max())))
    baseline = frame[(frame["features"] == "baseline") & ~frame["kind"].isin(["majority", "baseline", "lexical"])]
    if metric in baseline.columns and not baseline[metric].dropna().empty:
        # The row chosen on the training part, as the terminal chooses it (the best test value only for results
        # without a selection score): one rule for the main and the baseline features.
        top, selected = chosen_row(baseline.dropna(subset=[metric]), metric)
        where = f"layer {int(top['layer'])}" if pd.notna(top["layer"]) else str(top.get("layer_spec", ""))
        how = "chosen" if selected else "best"
        found.append((f"baseline features ({how}: {where}, {top['pooling']})", float(top[metric])))
    return found


def _lexical_name(frame: pd.DataFrame) -> str:
    """The lexical reference line's name: word-level runs (a ``level`` column) count labels per word type;
    sentence-level runs fit TF-IDF n-grams."""
    if "level" not in frame.columns:
        return "lexical baseline (TF-IDF n-grams)"
    return f"most frequent label per {_lexical_key(frame)}"


def _lexical_key(frame: pd.DataFrame) -> str:
    """What the lexical baseline counts by: the word type, or for arcs the dependent's type (relations) or
    the pair of types (arc or not)."""
    if "level" not in frame.columns or "arc" not in set(frame["level"].dropna()):
        return "word type"
    return "type pair" if set(frame["label"].dropna()) == {"head"} else "dependent type"


def series_name(rows: pd.DataFrame) -> str:
    """What the rows' "pooling" column names: pooling, site, or site · pooling (see ``layer_rows``)."""
    if "site" not in rows.columns or rows["site"].nunique() < 2:
        return "pooling"
    return "site" if set(rows["pooling"]) <= set(rows["site"]) else "site · pooling"


def series_linestyle(part: pd.DataFrame, sites: list[str]) -> str:
    """The line style of one series: solid, or one per site when a site's poolings share a colour."""
    if "site" not in part.columns or len(sites) < 2 or part["pooling"].iloc[0] in sites:
        return "-"  # one site, or one line per site (told apart by colour)
    return SITE_LINESTYLES[sites.index(part["site"].iloc[0]) % len(SITE_LINESTYLES)]


def model_name(meta: dict) -> str:
    """The model as a short name: the embedded default's name, or the last parts of a model path."""
    model = str(meta.get("model") or "model")
    if model.startswith("default:"):
        model = model.split(":", 1)[1]
    if os.sep in model or "/" in model:
        parts = Path(model).parts
        model = "/".join(parts[-2:]) if len(parts) >= 2 and not Path(model).is_absolute() else parts[-1]
    return model


def describe(frame: pd.DataFrame, meta: dict, classifier: str | None = None) -> str:
    """A one-line title: model, label column, classifier and row count."""
    classifier = classifier or default_classifier(frame, meta)
    label = meta.get("label") or (frame["label"].iloc[0] if "label" in frame.columns and len(frame) else "label")
    n_rows = meta.get("n_rows")
    if n_rows is None and {"n_train", "n_test"} <= set(frame.columns):
        first = frame.dropna(subset=["n_train", "n_test"])
        if not first.empty:
            n_rows = int(first["n_train"].iloc[0] + first["n_test"].iloc[0])
    parts = [model_name(meta), f"label: {label}", f"probe: {classifier}"]
    if n_rows is not None:
        unit = {"word": "words", "arc": "word pairs"}.get(str(meta.get("level")), "rows")
        parts.append(
            f"{int(n_rows):,} {unit}"
            + (f" in {int(meta['n_sentences']):,} sentences" if isinstance(meta.get("n_sentences"), int) else "")
        )
    evaluation = meta.get("evaluation")
    if isinstance(evaluation, str) and evaluation:
        parts.append(evaluation)
    return " · ".join(parts)

"""Comparisons across results files: models, corpora, label columns, sites or classifiers side by side.

Each file becomes one line, named by what differs between the files (model, corpus, label, site,
classifier; read from the results' meta, or given with ``names``). The x axis is the layer, or the
relative depth (layer / number of layers) so that a 6-layer and a 12-layer model share an axis.
Files of the same rows (two models, a model and its random-init baseline) are tested layer by
layer against the first file (``paired.py``); significant layers are ringed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from ..checks import path_like, whole
from ..errors import InputError
from ..io import write_csv
from ..options import Check, Options, keywords_of, normalise, on_command_line, option, spoken_value
from .figures.compare import plot_compare
from .figures.style import FORMATS, RC, save
from .files import check_redrawn, make_folder, remove_stale, results_files
from .load import (
    Entry,
    check_metric,
    chosen_row,
    default_classifier,
    default_metric,
    layer_rows,
    load_results,
    main_metric,
    model_name,
    selection_note,
)
from .paired import paired_layer_tests, why_not_paired
from .text.compare import format_comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIELDS = ("model", "corpus", "label", "site", "classifier")
FIELD_PLURALS = dict(zip(FIELDS, ("models", "corpora", "label columns", "sites", "classifiers"), strict=True))


def _features_attrs(path: str | Path | None) -> dict:
    """The attributes of a features file; empty when there is none, or it was moved, removed or damaged since."""
    if not path or not Path(path).exists():
        return {}
    try:
        from ..store import open_features

        with open_features(path) as opened:
            return dict(opened.attrs)
    except Exception:  # noqa: BLE001 - a moved or damaged file only loses the "(random init)" tag and the depth
        return {}


def model_top_layer(features_file: str | Path | None, layers: Iterable[int] | pd.Series) -> int:
    """The model's top layer, what a relative depth divides by (``featx compare --relative-depth``, a study's
    ``n_layers``): from the features file's record of the model (its hidden states less the embeddings), so that
    a file of a few layers keeps their depth; the highest of the probed ``layers`` when the file cannot be read
    or records none."""
    return _top_layer(_features_attrs(features_file), layers)


def _top_layer(attrs: dict, layers: Iterable[int] | pd.Series) -> int:
    """``model_top_layer`` from the features file's ``attrs`` already read."""
    probed_layers = pd.Series(list(layers), dtype=float).dropna()
    probed = max(1, int(probed_layers.max())) if len(probed_layers) else 1
    recorded = pd.to_numeric(pd.Series([attrs.get("n_model_layers")]), errors="coerce")
    return max(probed, int(recorded.iloc[0]) - 1) if pd.notna(recorded.iloc[0]) else probed


def _fields(frame: pd.DataFrame, meta: dict, classifier: str, site: str, attrs: dict) -> dict:
    """An entry's fields; ``attrs``: its features file's attributes (``_features_attrs``)."""
    model = model_name(meta) + (" (random init)" if attrs.get("random_init") else "")
    corpus = meta.get("corpus_path") or meta.get("features_file") or meta.get("features") or ""
    label = meta.get("label") or (frame["label"].iloc[0] if "label" in frame.columns and len(frame) else "")
    return {"model": model, "corpus": str(corpus), "label": str(label), "site": site, "classifier": classifier}


def short_paths(paths: list[str]) -> list[str]:
    """The shortest trailing parts that tell the paths apart: ``trec/data.csv``, ``banking77/data.csv``."""
    parts = [Path(path).parts or ("",) for path in paths]
    for depth in range(1, max(len(p) for p in parts) + 1):
        short = ["/".join(p[-depth:]) for p in parts]
        if len(set(short)) == len(set(paths)):
            return short
    return list(paths)


def load_entries(
    sources: Iterable,
    metric: str | None = None,
    classifier: str | None = None,
    pooling: str | None = None,
    names: list[str] | None = None,
) -> list[Entry]:
    """Results files (anything ``load_results`` takes) as comparison entries, each named; ``metric`` None is
    the first file's own (``default_metric``)."""
    entries: list[Entry] = []
    for index, source in enumerate(sources):
        frame, meta = load_results(source)
        if entries:
            _check_same_task(entries[0], frame, meta, index)
        metric = metric or default_metric(frame, meta)
        check_metric(frame, metric)
        chosen = classifier or default_classifier(frame, meta)
        site = "hidden" if "hidden" in set(frame["site"]) else str(frame["site"].iloc[0])
        rows = layer_rows(frame[frame["site"].isin([site, ""])], chosen)
        if pooling is not None and pooling not in set(rows["pooling"]):
            raise InputError(
                f"pooling '{pooling}' is not in {meta.get('results_path', f'results {index + 1}')}",
                f"poolings there: {', '.join(dict.fromkeys(rows['pooling']))}",
            )
        best, _ = chosen_row(rows, metric, meta)
        rows = rows[rows["pooling"] == (pooling or best["pooling"])]
        best, selected = chosen_row(rows, metric, meta)
        source_name = str(meta.get("results_path") or f"results {index + 1}")
        attrs = _features_attrs(meta.get("features_file"))  # read once: the random-init tag and the model's depth
        entries.append(
            Entry(
                frame,
                meta,
                source_name,
                _fields(frame, meta, chosen, site, attrs),
                rows=rows,
                best=best,
                n_layers=_top_layer(attrs, rows["layer"]),
                metric=metric,
                selected=selected,
            )
        )
    if not entries:
        raise InputError("no results to compare", "give two or more .probe.csv files")
    name_entries(entries, names)
    return entries


def task_of(frame: pd.DataFrame) -> str:
    """``regression`` for results of a continuous label (R², no accuracy), else ``classification``."""
    return "regression" if main_metric(frame) == "r2" else "classification"


def _check_same_task(first: Entry, frame: pd.DataFrame, meta: dict, index: int) -> None:
    """One comparison is drawn in one metric: a regression file beside classification ones (or the reverse)
    would be a line of another quantity (R² against accuracy), so it is refused, naming both files."""
    task, first_task = task_of(frame), task_of(first.frame)
    if task != first_task:
        where = Path(str(meta.get("results_path") or f"results {index + 1}")).name
        raise InputError(
            f"{where} holds {task} results ({main_metric(frame)}), {Path(first.source).name} {first_task} "
            f"results ({main_metric(first.frame)}): one comparison is drawn in one metric",
            f"compare results of one task at a time; {_panels()} draws each task in a panel of its own",
        )


def _panels() -> str:
    """The call that draws files of several tasks, each in a panel, as the caller makes it."""
    if on_command_line():
        return "featx plot A B --compare"
    return f"featx.report.plot_files([a, b], {spoken_value(None, 'compare', 'tasks.png')})"


def differing_fields(entries: list[Entry]) -> list[str]:
    return [key for key in FIELDS if len({entry.fields[key] for entry in entries}) > 1]


def check_names(names: Sequence[str] | None, n_files: int) -> None:
    """One name per results file, when names are given."""
    if names is not None and len(names) != n_files:
        raise InputError(
            f"--names gives {len(names)} name(s) for {n_files} results files",
            "give one name per results file, comma-separated",
        )


def name_entries(entries: list[Entry], names: list[str] | None) -> None:
    """Name each entry: by ``names``, else by the fields that differ between the files (else their file names)."""
    if names is not None:
        check_names(names, len(entries))
        for entry, name in zip(entries, names, strict=False):
            entry.name = name
        return
    keys = differing_fields(entries)
    corpora = short_paths([entry.fields["corpus"] for entry in entries])
    for entry, corpus in zip(entries, corpora, strict=False):
        shown = {**entry.fields, "corpus": corpus}
        entry.name = " · ".join(shown[key] for key in keys) if keys else Path(entry.source).name
    if len({entry.name for entry in entries}) < len(entries):  # same everything: the file names tell them apart
        for entry in entries:
            entry.name = f"{entry.name} ({Path(entry.source).name})" if keys else Path(entry.source).name


def _selectivity(best: pd.Series, metric: str) -> float:
    """The row's selectivity in ``metric`` (``metric - control_<metric>``), so that files probed with different
    ``--metric`` compare alike; the recorded ``selectivity`` for results without that control column."""
    control = pd.to_numeric(pd.Series([best.get(f"control_{metric}")]), errors="coerce").iloc[0]
    if pd.notna(control) and pd.notna(best.get(metric)):
        return float(best[metric]) - float(control)
    return float(best.get("selectivity", np.nan))


def _reference(frame: pd.DataFrame, kinds: tuple[str, ...], metric: str) -> float:
    """The run's reference row of ``kinds`` (its own features'), in ``metric``; NaN where the run has none."""
    rows = frame[frame["kind"].isin(kinds)]
    if "features" in rows.columns:
        rows = rows[rows["features"].isin(["main", ""]) | rows["features"].isna()]
    values = pd.to_numeric(rows[metric], errors="coerce").dropna() if metric in rows.columns else pd.Series([])
    return float(values.iloc[0]) if len(values) else float("nan")


def comparison_table(entries: list[Entry], metric: str = "accuracy") -> pd.DataFrame:
    """One row per file: best layer (and relative depth), pooling, metric with its interval, beside the run's
    majority class (a number's training mean) and lexical baseline, and its selectivity."""
    records = []
    for entry in entries:
        best = entry.best
        records.append(
            {
                "name": entry.name,
                **entry.fields,
                "pooling": best["pooling"],
                "best_layer": int(best["layer"]),
                "n_layers": entry.n_layers,
                "relative_depth": round(int(best["layer"]) / entry.n_layers, 3),
                metric: float(best[metric]),
                f"{metric}_low": float(best.get(f"{metric}_low", np.nan)),
                f"{metric}_high": float(best.get(f"{metric}_high", np.nan)),
                "majority": _reference(entry.frame, ("majority", "baseline"), metric),
                "lexical": _reference(entry.frame, ("lexical",), metric),
                "selectivity": _selectivity(best, metric),
                "n_rows": entry.meta.get("n_rows"),
                "results": entry.source,
            }
        )
    return pd.DataFrame.from_records(records)


def paired_tests(entries: list[Entry], relative_depth: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """Per-layer paired tests of every file against the first one, where both hold the same rows, in the
    comparison's metric: layer by layer, or (``relative_depth``, as the figure aligns them) each layer of the
    model with fewer layers against the other's at (or nearest) its relative depth (``layer``, ``layer_b``)."""
    parts, notes = [], []
    first = entries[0]
    for other in entries[1:]:
        reason = why_not_paired(first.meta, other.meta)
        if reason is None:
            depths = (first.n_layers, other.n_layers) if relative_depth else None
            try:
                table = paired_layer_tests(first.meta, other.meta, metric=first.metric, depths=depths)
            except (ValueError, KeyError, OSError) as err:
                reason = str(err)
            else:
                parts.append(table.assign(a=first.name, b=other.name))
                continue
        notes.append(f"no paired test of {other.name} against {first.name}: {reason}")
    columns = ["a", "b", "layer", "layer_b", "metric", "score_a", "score_b", "difference", "p", "p_holm"]
    columns += ["significant", "tested"]
    tests = pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
    return tests, notes


def compare_title(entries: list[Entry]) -> str:
    """What the files share, then what differs: e.g. "MiniLM · 2 corpora" or "tiny-bert · 2 label columns · 12 rows"."""
    keys = differing_fields(entries)
    shared = [entries[0].fields["model"]] if "model" not in keys else []
    if "corpus" not in keys and entries[0].fields["corpus"]:
        shared.append(Path(entries[0].fields["corpus"]).name)
    shared = shared[:1] if "corpus" not in keys and "label" in keys and len(keys) == 1 else shared
    if len(keys) == 1:
        parts = shared + [f"{len(entries)} {FIELD_PLURALS[keys[0]]}"]
    else:
        parts = shared + [f"{len(entries)} results: " + (", ".join(keys) + " differ" if keys else "same setup")]
    n_rows = [entry.meta.get("n_rows") for entry in entries]
    if n_rows[0] is not None and all(count == n_rows[0] for count in n_rows):
        parts.append(f"{int(n_rows[0]):,} rows")
    return " · ".join(parts)


@dataclass(frozen=True)
class CompareConfig(Options):
    """What ``featx compare`` compares and where it writes: the figure at ``output`` (its suffix replaced by
    each of ``formats``), the table beside it (``.csv``) and the paired tests (``.tests.csv``)."""

    results: tuple = ()
    metric: str | None = option(  # None: the first file's own metric (``load.default_metric``)
        None, flag="--metric", help="accuracy, macro_f1, balanced_accuracy, r2, ... (default: the first file's own)."
    )
    classifier: str | None = option(None, flag="--classifier", help="Which probe's rows (default: each run's choice).")
    pooling: str | None = option(None, flag="--pooling", help="Which pooling's curve (default: each file's best).")
    names: Sequence[str] | str | None = option(
        None,
        flag="--names",
        listed=True,
        kind="str",
        help="Comma-separated line names, one per RESULTS (default: what differs).",
    )
    relative_depth: bool = option(
        False, flag="--relative-depth", help="x = layer / number of layers; paired tests pair layers at the same depth."
    )
    output: str | os.PathLike | None = option(  # the command line's default: compare.png
        None,
        flag=("-o", "--output"),
        kind="path",
        cli_default=Path("compare.png"),
        help="Figure path (.png and .svg); the table goes to the same stem + .csv, the tests to .tests.csv.",
    )
    formats: Iterable[str] = FORMATS
    dpi: int = option(150, flag="--dpi", help="Resolution of the PNG.")
    tests: bool = option(True, flag="--no-tests", negate=True, help="Skip the per-layer paired tests.")

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("output"),
        results_files,
        lambda config: normalise(config, "names", split_names(config.names)),
        lambda config: check_names(config.names, len(config.results)) if config.results else None,
        whole("dpi", "--dpi", hint="give --dpi a value of at least 1"),
    )


def split_names(names: Sequence[str] | str | None) -> list[str] | None:
    """``--names a,b`` as ``["a", "b"]`` (a list is kept, stripped)."""
    if names is None:
        return None
    return [name.strip() for name in (names.split(",") if isinstance(names, str) else names)]


@keywords_of(CompareConfig)  # from Python, a message names the keyword given (dpi=0), the CLI the flag
def compare(sources: Iterable | CompareConfig, **options: Any) -> Comparison:
    """Compare results files (a list of paths, or a ``CompareConfig``): the figure, the table and the paired tests,
    written beside ``output`` when it is given (see ``CompareConfig``; ``options`` are its fields)."""
    import matplotlib.pyplot as plt

    config = CompareConfig.build(sources, **options)
    if config.output is not None:  # before anything is read
        check_redrawn(config.output, config.formats, TABLES, results=config.results)
    names = list(config.names) if config.names is not None else None
    entries = load_entries(list(config.results), config.metric, config.classifier, config.pooling, names)
    metric = entries[0].metric
    paired, notes = paired_tests(entries, config.relative_depth) if config.tests and len(entries) > 1 else (None, [])
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(9, 6), layout="constrained")
        plot_compare(entries, ax=ax, metric=metric, relative_depth=config.relative_depth, tests=paired)
        fig.suptitle(compare_title(entries), fontsize=13, x=0.01, ha="left")
    notes += [f"{entry.name}: {note}" for entry in entries if (note := selection_note(entry.meta, metric)) is not None]
    result = Comparison(entries, comparison_table(entries, metric), paired, notes, fig, [], metric)
    if config.output is not None:  # checked above, before the work
        result.written = result._save(Path(config.output), config.formats, config.dpi)
    return result


TABLES = {".csv": ("comparison table", "name,model,corpus,label,"), ".tests.csv": ("paired-tests table", "a,b,layer,")}


@dataclass
class Comparison:
    entries: list[Entry]
    table: pd.DataFrame
    tests: pd.DataFrame | None
    notes: list[str]
    figure: Figure
    written: list[Path]
    metric: str = "accuracy"

    def format(self) -> str:
        """The terminal text: one line per file, then the paired tests."""
        return format_comparison(self.table, self.tests, self.notes, self.metric)

    def write(self, output: str | os.PathLike, formats: Iterable[str] = FORMATS, dpi: int = 150) -> list[Path]:
        """The figure at ``output`` (one file per format), the table at ``.csv``, the tests at ``.tests.csv`` (an
        earlier run's removed, and a note added, when this comparison has none), once ``check_redrawn`` passes."""
        check_redrawn(output, formats, TABLES, results=[entry.source for entry in self.entries])
        return self._save(Path(output), formats, dpi)

    def _save(self, output: Path, formats: Iterable[str], dpi: int) -> list[Path]:
        """``write`` after its check (``compare`` checks before any work, and saves with this)."""
        import matplotlib.pyplot as plt

        make_folder(output.parent)
        with plt.rc_context(RC):
            written = save(self.figure, output, formats, dpi)
        written.append(write_csv(self.table, output.with_suffix(".csv")))
        if self.tests is not None and not self.tests.empty:
            written.append(write_csv(self.tests, output.with_suffix(".tests.csv")))
        elif (removed := remove_stale(output.with_suffix(".tests.csv"), *TABLES[".tests.csv"])) is not None:
            self.notes.append(removed)
        return written

    def close(self) -> None:
        """Free the figure (a command line that only writes it)."""
        import matplotlib.pyplot as plt

        plt.close(self.figure)

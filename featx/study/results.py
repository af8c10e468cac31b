"""The study's one tidy results table: ``OUTPUT/results.parquet`` and ``OUTPUT/results.csv`` (the CSV through
``featx.io.write_csv``), one row per model x corpus x label x site x layer x pooling x classifier of every probe
that is done. ``load(OUTPUT)`` reads it back as a pandas DataFrame.

Columns (``RESULT_COLUMNS``, in this order):

``model``, ``corpus``, ``label``    the cell (names from the study file)
``group``                           the corpus's group column (``[[corpora]] group``), whose groups the probe's
                                    folds, holdouts and resamples kept whole; empty for a corpus without one
``random_init``, ``seed``           a random-weights control model, and its weights' seed (else seed is empty)
``task``, ``metric``                classification or regression; the metric every score is in (the study's
                                    metric, else the probe's default: accuracy, or r2 for a number)
``site``, ``layer``, ``pooling``, ``classifier``   the probe (single layers of each stored site)
``n_layers``, ``relative_depth``    the model's top layer (its layers as the features file records them, as
                                    ``featx compare --relative-depth`` reads them, even of a file of some
                                    layers; layer 0 is the embeddings) and layer / n_layers, so models of any
                                    depth share an axis
``score``, ``ci_low``, ``ci_high``  the test score and its 95% bootstrap interval
``selection_score``                 the score on the training part the choice is made by (never the test rows)
``chosen``                          the one row of the cell chosen on the training part (``featx probe``'s)
``p_vs_best``, ``significant_vs_best``  the paired test of the row against the best layer of its pooling and
                                    classifier on the same test rows (Holm-adjusted over the layers)
``majority``                        the majority-class (or mean) baseline's test score
``lexical``                         the lexical baseline's test score (TF-IDF n-grams), once per corpus and label
``control``                         the control task's score (the same probe on permuted labels)
``selectivity``                     score - control
``n_train``, ``n_test``             the rows trained and tested on
``results``                         the probe's results file, relative to OUTPUT (``featx report`` takes it)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import StoreError
from ..io import write_csv
from ..options import keywords_of
from ..safe_files import atomic_write
from .records import DONE, cell_status

if TYPE_CHECKING:
    from .plan import ProbeCell, StudyPlan

RESULTS_NAME = "results"
MAJORITY_KINDS = ("majority", "baseline")  # a probe's majority class row, or a number's training mean row
RESULT_COLUMNS = (
    "model", "corpus", "label", "group", "random_init", "seed", "task", "metric", "site", "layer", "n_layers",
    "relative_depth", "pooling", "classifier", "score", "ci_low", "ci_high", "selection_score", "chosen",
    "p_vs_best", "significant_vs_best", "majority", "lexical", "control", "selectivity", "n_train", "n_test",
    "results",
)  # fmt: skip


def probe_results(cell: ProbeCell) -> tuple[pd.DataFrame, dict]:
    """A done probe cell's results table and meta (``featx.report``'s reader: types normalised)."""
    from ..report import load_results

    return load_results(cell.results)


def top_layer(features: Path, layers: pd.Series) -> int:
    """The model's top layer, what ``relative_depth`` divides by: ``featx compare``'s rule
    (``featx.report.model_top_layer``: the features file's record of the model's layers, so that a file of some
    layers keeps their depth; the highest probed layer when the file cannot be read, removed since)."""
    from ..report import model_top_layer

    return model_top_layer(features, layers)


def _reference(frame: pd.DataFrame, kinds: tuple[str, ...], metric: str) -> float:
    """The test score of the first reference row of one of ``kinds`` (``featx probe``'s ``majority`` row, or for a
    number its ``baseline`` row, the training mean, as ``featx compare`` reads them), NaN without one."""
    rows = frame[frame["kind"].isin(kinds)]
    return float(rows[metric].iloc[0]) if len(rows) and metric in rows else float("nan")


def _chosen(rows: pd.DataFrame, meta: dict) -> np.ndarray:
    selected = meta.get("selected") or {}
    if not isinstance(selected, dict) or not selected:
        return np.zeros(len(rows), dtype=bool)
    match = (rows["pooling"] == str(selected.get("pooling"))) & (rows["classifier"] == str(selected.get("classifier")))
    match &= rows["layer"].astype("float") == float(selected.get("layer", np.nan))
    if "site" in selected:
        match &= rows["site"] == str(selected["site"])
    return match.to_numpy(dtype=bool)


def cell_rows(cell: ProbeCell, features: Path, output: Path, lexical: float) -> pd.DataFrame:
    """The rows of one probe cell: its single layers of the main features, in the study's columns."""
    frame, meta = probe_results(cell)
    metric = str(meta.get("metric") or "accuracy")
    rows = frame[(frame["kind"] == "single") & (frame["features"] == "main")].reset_index(drop=True)
    n_layers = top_layer(features, rows["layer"])
    score = rows[metric].astype(float)
    control_column = f"control_{metric}"
    control = rows[control_column].astype(float) if control_column in rows else pd.Series(np.nan, index=rows.index)
    table = pd.DataFrame({"site": rows["site"], "layer": rows["layer"].astype(int), "pooling": rows["pooling"]})
    table["classifier"] = rows["classifier"]
    table = table.assign(
        model=cell.model.name, corpus=cell.corpus.name, label=cell.label, group=meta.get("group") or None,
        random_init=cell.model.random_init,
        seed=cell.model.seed, task=str(rows["task"].iloc[0]) if len(rows) else "", metric=metric,
        n_layers=n_layers, relative_depth=rows["layer"].astype(float) / n_layers, score=score,
        ci_low=rows[f"{metric}_low"].astype(float), ci_high=rows[f"{metric}_high"].astype(float),
        selection_score=rows["selection_score"].astype(float), chosen=_chosen(rows, meta),
        p_vs_best=rows["p_vs_best_holm"].astype(float), significant_vs_best=rows["significant_vs_best"] == True,  # noqa: E712
        majority=_reference(frame, MAJORITY_KINDS, metric), lexical=lexical, control=control,
        selectivity=score - control, n_train=rows["n_train"], n_test=rows["n_test"],
        results=str(cell.results.relative_to(output)),
    )  # fmt: skip
    return table[list(RESULT_COLUMNS)]


def lexical_scores(plan: StudyPlan) -> dict[tuple[str, str], float]:
    """(corpus, label) -> the lexical baseline's test score, from the probe that computed it (NaN: not done)."""
    scores: dict[tuple[str, str], float] = {}
    for cell in plan.probes:
        if cell.lexical and cell_status(cell.task) == DONE:
            frame, meta = probe_results(cell)
            metric = str(meta.get("metric") or "accuracy")
            scores[(cell.corpus.name, cell.label)] = _reference(frame, ("lexical",), metric)
    return scores


def probe_warnings(plan: StudyPlan) -> tuple[str, ...]:
    """The warnings of every done probe (the notes of its meta that featx probe starts with "warning: ": a test
    split of a few rows, a corpus changed since its extraction...), as "warning: MODEL CORPUS/LABEL: ..." lines, so
    that the study's printout says what each probe's own would."""
    lines = []
    for cell in plan.probes:
        if cell_status(cell.task) != DONE:
            continue
        notes = probe_results(cell)[1].get("notes")
        for note in notes if isinstance(notes, list) else []:
            if isinstance(note, str) and note.startswith("warning: "):
                lines.append(f"warning: {cell.model.name} {cell.corpus.name}/{cell.label}: {note[len('warning: ') :]}")
    return tuple(lines)


def results_table(plan: StudyPlan) -> pd.DataFrame:
    """Every done probe's rows, in the plan's order (the same table whatever the engine or the jobs)."""
    lexical = lexical_scores(plan)
    parts = [
        cell_rows(cell, plan.extraction_of(cell).features, plan.config.output,
                  lexical.get((cell.corpus.name, cell.label), float("nan")))
        for cell in plan.probes
        if cell_status(cell.task) == DONE
    ]  # fmt: skip
    if not parts:
        return pd.DataFrame(columns=list(RESULT_COLUMNS))
    table = pd.concat(parts, ignore_index=True)
    table["seed"] = table["seed"].astype("Int64")
    table["group"] = table["group"].astype("string")  # empty where the corpus has no group column
    return table


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as Parquet at ``path``, through a fresh temporary file renamed into place."""
    atomic_write(path, lambda handle: frame.to_parquet(handle, index=False))


def has_parquet() -> bool:
    """Whether pandas can write Parquet here (pyarrow: ``featx[parquet]``)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def write_results(table: pd.DataFrame, output: Path) -> list[Path]:
    """``OUTPUT/results.parquet`` (where pyarrow is installed: ``featx[parquet]``) and ``OUTPUT/results.csv``."""
    parquet, csv = output / f"{RESULTS_NAME}.parquet", output / f"{RESULTS_NAME}.csv"
    written = []
    if has_parquet():
        write_parquet(table, parquet)
        written.append(parquet)
    elif parquet.is_file() and not parquet.is_symlink():
        parquet.unlink()  # an older table must not be read as this one
    write_csv(table, csv)
    return [*written, csv]


@keywords_of(None)  # from Python, the hint names featx.study.run, on the command line featx study run
def load(output: str | Path) -> pd.DataFrame:
    """A study's results table as a pandas DataFrame: ``OUTPUT/results.parquet``, else (written without
    pyarrow) ``OUTPUT/results.csv`` with the same column types."""
    folder = Path(output)
    parquet, csv = folder / f"{RESULTS_NAME}.parquet", folder / f"{RESULTS_NAME}.csv"
    if parquet.is_file() and not parquet.is_symlink():
        return pd.read_parquet(parquet)
    if not csv.is_file() or csv.is_symlink():
        from ..report import run_study_first

        raise StoreError(f"{folder} holds no study results", run_study_first())
    from ..io import read_csv

    table = read_csv(csv, keep_default_na=True)
    table["seed"] = table["seed"].astype("Int64")
    if "group" in table:  # a table of an older featx has none
        table["group"] = table["group"].astype("string")
    return table

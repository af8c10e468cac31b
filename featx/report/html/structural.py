"""``featx report`` of structural probe results (``featx probe --structural distance|depth``): the run, the layer
chosen on the training sentences beside the best on the test sentences, the table of every (pooling, layer) with
both measures, their intervals and their difference to the baseline (whose row heads the table), and the figure.
Every string from the file (model, file names, pooling names, notes) is escaped: the file is untrusted input."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ...errors import InputError
from ..load import model_name
from ..structural import MEASURE_NAMES, StructuralResults, load_structural, no_choice_reason
from ..text.format import interval, missing, num
from .parts import FIGURES, notes_html, page_html, svg_of_figure, table_html

CHOSEN = "chosen (training sentences)"
BEST_ON_TEST = "best on test"


def _run_rows(results: StructuralResults) -> pd.DataFrame:
    """What the run was, as two columns (every value a string, escaped when rendered)."""
    meta = results.meta
    rows = [
        ("model", model_name({"model": results.model})),
        ("features file", meta.get("features_file")),
        ("probe", f"structural, {results.mode}"),
        ("rank", meta.get("rank")),
        ("sentences", meta.get("n_sentences")),
        ("words", meta.get("n_words")),
        ("evaluation", meta.get("evaluation")),
        ("folds", meta.get("folds")),
        ("punctuation", meta.get("punctuation")),
        ("poolings", ", ".join(map(str, results.probes["pooling"].unique()))),
        ("layers", ", ".join(map(str, sorted(set(results.probes["layer"]))))),
        ("chosen by", meta.get("selected_by")),
        ("baseline", meta.get("baseline") or results.baseline_name),
        ("seed", meta.get("seed")),
        ("bootstrap resamples", meta.get("n_bootstrap")),
        ("seconds", meta.get("seconds")),
    ]
    return pd.DataFrame([(k, str(v)) for k, v in rows if v not in (None, "")], columns=["", "value"])


def _measure_cells(row: pd.Series, results: StructuralResults, against: bool) -> dict[str, str]:
    """Each measure with its interval and (``against``) its difference to the baseline."""
    short = results.baseline_name.split()[-1]  # "chain", "position"
    cells = {}
    for name in results.measures:
        shown = MEASURE_NAMES[name]
        cells[f"{shown} [95% CI]"] = interval(row[name], row[f"{name}_low"], row[f"{name}_high"])
        gap = row[name] - results.baseline[name]
        cells[f"{shown} − {short}"] = num(gap, signed=True) if against else ""
    return cells


def structural_table(results: StructuralResults) -> tuple[pd.DataFrame, list[bool]]:
    """The baseline row, then one row per (pooling, layer): both measures with intervals and the difference to the
    baseline, the selection score, and which row was chosen on the training sentences (marked) and which is the
    best on the test sentences."""
    records = [
        {
            "pooling": f"{results.baseline_name} (baseline)",
            "layer": "-",
            **_measure_cells(results.baseline, results, False),
            "selection score (held-out training)": "-",
            "choice": "",
        }
    ]
    for _, row in results.probes.iterrows():
        choice = [CHOSEN] if row["is_best"] else []
        choice += [BEST_ON_TEST] if row["is_best_on_test"] else []
        records.append(
            {
                "pooling": row["pooling"],
                "layer": str(int(row["layer"])),
                **_measure_cells(row, results, True),
                "selection score (held-out training)": num(row["selection_score"]),
                "choice": "; ".join(choice),
            }
        )
    marked = [False, *results.probes["is_best"].astype(bool).tolist()]
    return pd.DataFrame.from_records(records), marked


def _where(row: pd.Series) -> str:
    return f"layer {int(row['layer'])} ({row['pooling']})"


def choice_note(results: StructuralResults) -> str:
    """The chosen row against the baseline, and the best on the test sentences when it differs (plain text)."""
    chosen, best, measure = results.chosen, results.best_on_test, results.selection_measure
    if chosen is None:
        reason = no_choice_reason(results.mode)
        return f"{reason[0].upper()}{reason[1:]}."
    shown = ", ".join(
        f"{MEASURE_NAMES[name]} {interval(chosen[name], chosen[f'{name}_low'], chosen[f'{name}_high'])} against "
        f"the {results.baseline_name}'s {num(results.baseline[name])}"
        for name in results.measures
    )
    note = f"{_where(chosen).capitalize()} chosen on the training sentences: {shown} on the test sentences."
    if best is not None and (best["layer"], best["pooling"]) != (chosen["layer"], chosen["pooling"]):
        gap = best[measure] - chosen[measure]
        gain = "" if missing(gap) else f" ({num(gap, signed=True)})"
        note += f" Best on the test sentences (not a fair choice): {_where(best)}, {MEASURE_NAMES[measure]}"
        note += f" {num(best[measure])}{gain}."
    return note


def _how(results: StructuralResults) -> str:
    return (
        f"Each measure by layer (0 = the embeddings), one line per word pooling with its 95% band over resampled "
        f"test sentences. The dashed line and grey band are the {results.baseline_name} baseline on the same test "
        f"sentences: {results.meta.get('baseline') or results.baseline_name}. The star is the (layer, pooling) "
        f"chosen on the held-out training sentences ({MEASURE_NAMES[results.selection_measure]}), never on the test "
        "sentences; a ring marks the best on the test sentences when it differs."
    )


def _notes(meta: dict) -> list[str]:
    notes = meta.get("notes")
    return [str(note) for note in notes if isinstance(note, str)] if isinstance(notes, list) else []


def render_structural(path: Path, classifier: str | None = None, metric: str | None = None) -> str:
    """The report page of a structural probe results file (its ``.json``, or the ``.csv`` with the JSON beside)."""
    from ..figures.structural import structural_figure

    for flag, value in (("--classifier", classifier), ("--metric", metric)):
        if value is not None:
            raise InputError(
                f"{flag} does not apply to the structural probe results {Path(path).name}",
                f"the page shows both measures of every pooling and layer; leave {flag} out",
            )
    results = load_structural(path)
    table, marked = structural_table(results)
    figure = svg_of_figure(structural_figure(results)[0])
    sections = [
        "<h2>The run</h2>",
        table_html(_run_rows(results)),
        notes_html(_notes(results.meta)),
        "<h2>Layer table</h2>",
        f'<p class="selection"><strong>{html.escape(choice_note(results))}</strong></p>',
        table_html(table, marked),
        f'<p class="muted">Highlighted: the row chosen on the training sentences. The first row is the baseline, '
        f"{html.escape(results.baseline_name)}; the − columns are each row's difference to it.</p>",
        "<h2>Figures</h2>",
        FIGURES,
    ]
    title = f"{model_name({'model': results.model})} · structural probe: {results.mode}"
    names = " and ".join(MEASURE_NAMES[name] for name in results.measures)
    figures = [(f"{names} by layer", figure, _how(results))]
    return page_html(title, f"{Path(path).name} · featx probe --structural {results.mode}", sections, figures)


__all__ = ["choice_note", "render_structural", "structural_table"]

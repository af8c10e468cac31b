"""``featx report``: one self-contained HTML page per results file, whatever wrote it: ``featx probe``
(classification, regression, sentence pairs, word-level labels), ``featx erase``, ``featx neurons``, a
probe-complexity sweep (``featx probe --sweep``) or structural probes (``featx probe --structural``).

Figures are inline SVG (text stays text), the styles are inline, and the page carries a
Content-Security-Policy that forbids every fetch (``default-src 'none'``), so it opens offline and
the browser itself would block any request. The page prints cleanly (A4, one figure never split).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from ...checks import path_like
from ...errors import FeatxError, InputError
from ...io import writable_hint
from ...options import Check, Options, keywords_of, on_command_line, option, spoken_value
from ...own_files import is_featx_page, refuse_foreign
from ...safe_files import refuse_inputs
from ..load import (
    METRIC_NAMES,
    check_metric,
    default_classifier,
    default_metric,
    layer_rows,
    load_results,
    model_name,
    result_files,
    selection_note,
)
from ..structural import is_structural
from .analyses import analysis_kind, render_analysis
from .intervene import intervene_sections
from .parts import CSP, FIGURES, notes_html, page_html, table_html
from .probe_figures import figure_sections
from .sections import cosine_table, layer_table, reference_table, run_rows
from .structural import render_structural

__all__ = ["CSP", "ReportConfig", "default_output", "render", "write_report"]


def _explain(results_path):
    """The run's ``featx explain`` result (nothing written), or the reason there is none."""
    from ...probing import explain

    try:
        return explain(results_path, write=False), None
    except FeatxError as error:
        return None, error.message


def _three(frame: pd.DataFrame) -> pd.DataFrame:
    """Every float cell with three decimals (``0.570``, not ``0.57``), so a column's values line up."""
    return frame.apply(
        lambda column: column.map(lambda v: "-" if v != v else f"{v:.3f}") if column.dtype.kind == "f" else column
    )


def _explain_html(found, reason: str | None) -> str:
    if found is None:
        return f'<p class="muted">No per-example diagnostics: {html.escape(reason or "")}</p>'
    parts = [
        f"<p>From {html.escape(found.predictions_path.name)} ({html.escape(found.predictions_for)}, "
        f"{len(getattr(found, 'correct', getattr(found, 'largest', ()))):,} rows).</p>"
    ]
    if hasattr(found, "by_layer"):  # a regression run
        best = f"layer {found.best or found.by_layer.r2.idxmax()}"
        columns = [c for c in ("id", "label", best, "text", "text_b") if c in found.largest.columns]
        largest = _three(found.largest[columns].head(10).rename(columns={best: f"residual at {best}"}))
        by_layer = _three(found.by_layer.T).rename(index={"r2": "R²", "mae": "MAE"}).rename_axis("metric")
        parts += ["<h3>R² and MAE by layer</h3>", table_html(by_layer.reset_index())]
        how = html.escape(found.best_how or "best on the test rows")
        parts += [f"<h3>Largest residuals at {best}, {how} (the first 10)</h3>", table_html(largest)]
        parts += ["<h3>Mean absolute error by length (tokens)</h3>", table_html(_three(found.by_length).reset_index())]
        return "\n".join(parts)
    parts += ["<h3>Accuracy by layer</h3>", table_html(_three(found.correct.mean().to_frame("accuracy").T))]
    for title, frame, extra in (
        ("Rows right from some layer on", found.flips, "first_right_layer"),
        ("Rows wrong at every layer", found.always_wrong, "last_prediction"),
    ):
        columns = [c for c in ("id", "word", "label", extra, "text", "text_b") if c in frame.columns]
        parts += [
            f"<h3>{title} ({len(frame):,}; the first 10)</h3>",
            table_html(frame[columns].head(10)) if len(frame) else "<p>(none)</p>",
        ]
    for title, frame in (
        ("Per-class F1 by layer", found.per_class_f1),
        ("Accuracy by length (tokens)", found.by_length),
        ("Accuracy by truncation", found.by_truncation),
        (f"Confusion matrix at layer {found.confusion_layer} ({found.confusion_how})", found.confusion),
    ):
        if frame is not None:
            parts += [f"<h3>{html.escape(title)}</h3>", table_html(_three(frame).reset_index())]
    return "\n".join(parts)


def _layer_sections(frame: pd.DataFrame, meta: dict, classifier: str, metric: str) -> list[str]:
    table, best = layer_table(frame, classifier, metric, meta)
    note = selection_note(meta, metric)
    chosen = "selected on the training part" if "selection_score" in frame.columns else "best on the test rows"
    sections = [
        f"<h2>Layer table ({html.escape(METRIC_NAMES.get(metric, metric))})</h2>",
        f'<p class="selection"><strong>{html.escape(note)}</strong></p>' if note else "",
        table_html(table, best),
        f'<p class="muted">Highlighted: the row of each pooling {chosen}. p vs best: paired test against the '
        "pooling's best layer, Holm-adjusted; ! = significant at 0.05.</p>",
        "<h2>References</h2>",
        table_html(reference_table(frame, metric, classifier, meta)),
    ]
    cosine = cosine_table(meta)
    if cosine is not None:
        sections += [
            "<h2>Cosine baseline (sentence pairs)</h2>",
            '<p class="muted">cos(u, v) of the two texts\' vectors, no probe: thresholds (class labels) or the '
            "correlation with the target (regression) on the same test rows.</p>",
            table_html(cosine),
        ]
    return sections


def render_probe(results, classifier: str | None = None, metric: str | None = None) -> str:
    """The report page of one ``featx probe`` results file."""
    frame, meta = load_results(results)
    classifier = classifier or default_classifier(frame, meta)
    layer_rows(frame, classifier)  # fails early, with the classifiers there, on a wrong --classifier
    metric = metric or default_metric(frame, meta)
    check_metric(frame, metric)
    found, reason = _explain(results)
    figures = figure_sections(frame, meta, classifier, Path(results), metric, found)
    sections = [
        "<h2>The run</h2>",
        table_html(pd.DataFrame(run_rows(meta), columns=["", "value"])),
        notes_html([str(note) for note in meta.get("notes") or []]),
        *_layer_sections(frame, meta, classifier, metric),
        "<h2>Figures</h2>",
        FIGURES,
        "<h2>Per-example diagnostics (featx explain)</h2>",
        _explain_html(found, reason),
        *intervene_sections(meta),  # featx intervene's results beside the features file
    ]
    title = f"{model_name(meta)} · label: {meta.get('label', '?')}"
    source = f"{Path(results).name} · probe: {classifier} · metric: {METRIC_NAMES.get(metric, metric)}"
    return page_html(title, source, sections, figures)


def render(results, classifier: str | None = None, metric: str | None = None) -> str:
    """The report page for one results file, as a string."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    if not isinstance(results, (str, os.PathLike)):
        raise InputError("featx report needs a results file path", "give the .probe.csv written by featx probe")
    if is_structural(results):  # featx probe --structural: its own page
        return render_structural(Path(results), classifier, metric)
    kind = analysis_kind(Path(results))
    if kind != "probe":
        return render_analysis(Path(results), kind, metric)
    return render_probe(results, classifier, metric)


def _results_path(config: ReportConfig) -> None:
    if not isinstance(config.results, (str, os.PathLike)):
        cli = on_command_line()
        raise InputError(
            f"{'featx report' if cli else 'featx.report.write_report'} needs a results file path",
            f"give the .probe.csv written by {'featx probe' if cli else 'featx.probe'}",
        )


HTML_SUFFIXES = (".html", ".htm")


def _html_output(config: ReportConfig) -> None:
    """``-o`` names an HTML file (``.html`` or ``.htm``): the page is HTML whatever the name says, so ``-o x.png``
    (which wrote HTML into x.png) or a name without a suffix is refused before the page is made."""
    if config.output is None or Path(config.output).suffix.lower() in HTML_SUFFIXES:
        return
    output = Path(config.output)
    given = spoken_value(config, "output", str(output), "-o")
    stem = output.name[: -len(output.suffix)] if output.suffix else output.name
    example = spoken_value(config, "output", str(output.with_name(f"{stem}.html")), "-o")
    raise InputError(
        f"{given}: featx report writes one HTML page, and {output.name} is not an .html file name",
        f"give a name ending in .html, e.g. {example}",
    )


@dataclass(frozen=True)
class ReportConfig(Options):
    """What ``featx report`` renders (``results``, the rows of ``classifier``, in ``metric``: default the one the
    run chose its best layer by) and where it writes it (``output``; default beside the results,
    ``x.probe.csv`` -> ``x.report.html``)."""

    results: Any = None
    output: str | os.PathLike | None = option(
        None,
        flag=("-o", "--output"),
        kind="path",
        help="HTML file, ending in .html or .htm (default: beside RESULTS, x.probe.csv -> x.report.html).",
    )
    classifier: str | None = option(None, flag="--classifier", help="Which probe's rows (default: the run's choice).")
    metric: str | None = option(
        None,
        flag="--metric",
        help="accuracy, macro_f1, balanced_accuracy, r2, spearman, ... (default: the metric the run chose its best "
        "layer by; accuracy, or R² for regression).",
    )

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("output"),
        _html_output,
        _results_path,
    )


@keywords_of(ReportConfig)  # from Python, a message names the keyword given (classifier), the CLI the flag
def write_report(results, output: str | os.PathLike | None = None, **options: Any) -> Path:
    """Write the report page (default: beside the results, ``x.probe.csv`` -> ``x.report.html``); ``results``
    may also be a whole ``ReportConfig``, ``options`` its other fields (``classifier``, ``metric``). Returns the
    page's path."""
    config = ReportConfig.build(results, **({"output": output} if output is not None else {}), **options)
    path = Path(config.output) if config.output is not None else default_output(Path(config.results))
    refuse_inputs([path], result_files(config.results))
    refuse_foreign([path], "report page", is_featx_page)  # featx's own page is made again; nothing else replaced
    page = render(config.results, config.classifier, config.metric)
    try:
        from ...safe_files import atomic_write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, page)
    except OSError as err:
        from ...errors import StoreError

        raise StoreError(f"cannot write {path}: {err.strerror or err}", writable_hint()) from None
    return path


def default_output(results: Path) -> Path:
    """``x.probe.csv`` (or .probe.json, .erase.csv, .sweep.csv, .csv, .json) -> ``x.report.html`` beside it."""
    name = results.name
    for suffix in (".probe.csv", ".probe.json", ".erase.csv", ".erase.json", ".ranking.csv", ".csv", ".json"):
        if name.endswith(suffix):
            return results.with_name(name[: -len(suffix)] + ".report.html")
    return results.with_name(name + ".report.html")

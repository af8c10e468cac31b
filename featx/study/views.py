"""What a study's cells are, without running them: ``status`` (each cell done, pending or failed, with its
times and error) and ``dry_run`` (the cells and probes, what is done, and each pending extraction's estimated
time and disk from ``featx.extraction.estimate``), and the text the command line prints of them and of a run.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pandas as pd

from ..errors import FeatxError
from ..options import keywords_of
from .columns import check_corpora
from .missing import check_missing, missing_lines
from .plan import StudyPlan, make_plan
from .records import DONE, FAILED, PENDING, RUNNING, cell_status, read_state, still_running
from .runner import RunConfig, StudyResult, check_remote_code

STATUS_COLUMNS = ("cell", "kind", "model", "corpus", "label", "status", "started", "finished", "seconds", "error")


def _when(stamp: Any) -> str:
    """A state's Unix time as local date and time; "" for anything else (a state is read from a file anyone
    may have edited: a string, a time out of range)."""
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
    except (OverflowError, OSError, ValueError):
        return ""


def _cells(plan: StudyPlan) -> list[tuple[Any, str]]:
    return [(cell, "") for cell in plan.extractions] + [(cell, cell.label) for cell in plan.probes]


@keywords_of(RunConfig)  # from Python, a message names the keyword given (study=''), the CLI the flag
def status(study: Any) -> pd.DataFrame:
    """Each cell of a study (a path, dict or ``StudyConfig``): done, pending, failed, or running (its process is
    alive; "pending (interrupted)" when a killed run left it so; "pending (corpus file missing)" or "failed
    (corpus file missing)" for an extraction not done whose corpus file is gone: a failed one keeps its recorded
    error, its probes theirs), when it started and finished, its seconds and its error. The plan hashes each
    corpus file present (its cells' fingerprints); a gone one is named in ``table.attrs["missing"]`` (with what a
    run would still need it for)."""
    plan = make_plan(study)
    records = []
    for cell, label in _cells(plan):
        state = read_state(cell.task.output, cell.task.key) or {}
        now = cell_status(cell.task, state or None) if state else PENDING
        left = now == PENDING and state.get("status") == RUNNING
        shown = (RUNNING if still_running(state) else "pending (interrupted)") if left else now
        if shown in (PENDING, FAILED) and cell.task.kind == "extract" and not cell.corpus.path.is_file():
            shown = f"{shown} (corpus file missing)"  # a run needs the file again for it
        records.append({
            "cell": cell.task.key, "kind": cell.task.kind, "model": cell.model.name, "corpus": cell.corpus.name,
            "label": label, "status": shown, "started": _when(state.get("started")),
            "finished": _when(state.get("finished")) if now != PENDING else "",
            "seconds": state.get("seconds") if now != PENDING else None, "error": state.get("error") or "",
        })  # fmt: skip
    table = pd.DataFrame.from_records(records, columns=list(STATUS_COLUMNS))
    table.attrs["missing"] = missing_lines(plan)  # corpus files gone: what a run would still need them for
    return table


def format_status(table: pd.DataFrame) -> str:
    """One line per cell, then the counts."""
    lines = []
    for row in table.itertuples():
        seconds = f" {row.seconds:.1f} s" if isinstance(row.seconds, float) and not math.isnan(row.seconds) else ""
        times = f"  {row.started} -> {row.finished}{seconds}" if row.finished else f"  {row.started}".rstrip()
        error = f"  {row.error}" if row.error else ""
        lines.append(f"{row.cell}: {row.status}{times if row.started else ''}{error}")
    counts = table["status"].str.split(" ").str[0].value_counts()
    kinds = ("done", "running", "pending", "failed") if counts.get(RUNNING) else ("done", "pending", "failed")
    lines.append(", ".join(f"{counts.get(kind, 0)} {kind}" for kind in kinds))
    return "\n".join([*lines, *table.attrs.get("missing", [])])


def _estimate(config: Any, models: Any) -> dict[str, Any]:
    from ..extraction import estimate

    try:
        found = estimate(config, models=models)
    except FeatxError as err:
        return {"error": err.message}
    return {"seconds": found.seconds, "bytes": found.file_bytes, "rows": found.rows}


@keywords_of(RunConfig)
def dry_run(study: Any) -> pd.DataFrame:
    """The cells of a study and what a run would do: done cells, and for each pending extraction its estimated
    seconds and file bytes (``featx.extraction.estimate``: a short calibration run of the model, each model
    loaded once for its corpora: ``LoadedModels``). ``study`` may be a whole ``RunConfig``: its
    ``trust_remote_code`` lets a model's own code run, as ``run``'s does (never the study file alone)."""
    from ..extraction import LoadedModels

    allowed = isinstance(study, RunConfig) and study.trust_remote_code
    plan = make_plan(study.study if isinstance(study, RunConfig) else study)
    check_remote_code(plan, allowed)  # before any calibration run loads a model
    check_missing(plan)  # as run checks them, before any calibration run of a model
    check_corpora(plan.config)
    models = LoadedModels()  # the extractions come model by model: each loaded once
    records = []
    for cell, label in _cells(plan):
        now = cell_status(cell.task)
        record = {"cell": cell.task.key, "kind": cell.task.kind, "label": label, "status": now}
        if cell.task.kind == "extract" and now != DONE:
            record.update(_estimate(plan.config.extract_config(cell.model, cell.corpus), models))
        if cell.task.kind == "probe":
            record["lexical"] = bool(cell.lexical)
        records.append(record)
    columns = ["cell", "kind", "label", "status", "rows", "seconds", "bytes", "lexical", "error"]
    return pd.DataFrame.from_records(records).reindex(columns=columns)


def _size(value: Any) -> str:
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000:
            return f"{value:.0f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"


def format_dry_run(table: pd.DataFrame) -> str:
    """The dry run as text: each cell, then the totals of what is pending."""
    lines = []
    for row in table.to_dict("records"):
        extra = ""
        if row["kind"] == "extract" and row["status"] != DONE:
            seconds = row.get("seconds")
            cost = f"~{seconds:.0f} s" if isinstance(seconds, float) and not math.isnan(seconds) else "time ?"
            extra = f": {cost}, {_size(row.get('bytes'))}" if not isinstance(row.get("error"), str) else ""
            extra += f": cannot estimate: {row['error']}" if isinstance(row.get("error"), str) else ""
        if row["kind"] == "probe" and row.get("lexical") is True:
            extra = " (computes the lexical baseline)"
        lines.append(f"{row['cell']}: {row['status']}{extra}")
    pending = table[table["status"] != DONE]
    extractions = pending[pending["kind"] == "extract"]
    total = pd.to_numeric(extractions["seconds"], errors="coerce").sum()
    disk = pd.to_numeric(extractions["bytes"], errors="coerce").sum()
    lines.append(
        f"{len(table[table.kind == 'extract'])} extractions and {len(table[table.kind == 'probe'])} probes; "
        f"to run: {len(extractions)} extractions (~{total:.0f} s, {_size(disk)}) and "
        f"{len(pending) - len(extractions)} probes"
    )
    return "\n".join(lines)


def _number(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not math.isnan(value) else "-"


def format_summary(result: StudyResult) -> str:
    """The printed end of a run: per model and task the chosen layer, the tied layers, the gains over the
    baselines and the expected layer; then the model-vs-model tests; then each probe's warnings; then the failed
    cells."""
    lines = []
    for row in result.summary.to_dict("records"):
        tied = "flat: every layer tied" if row["flat"] else f"tied: {row['tied_layers']}"
        if isinstance(row.get("above_layers"), str) and row["above_layers"]:
            tied += f"; significantly above it on the test rows: {row['above_layers']}"
        controls = f", over {row['control_models']} random models {_number(row['over_control_models'])}"
        grouped = f" (grouped by {row['group']})" if isinstance(row.get("group"), str) and row["group"] else ""
        lines.append(
            f"{row['model']} {row['corpus']}/{row['label']}{grouped}: layer {row['layer']} ({row['pooling']}, depth "
            f"{_number(row['relative_depth'], 2)}; {tied}) {row['metric']} {_number(row['score'])} "
            f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}], over majority {_number(row['over_majority'])}, "
            f"over lexical {_number(row['over_lexical'])}, "
            f"over control {_number(row['over_control'])}, E[layer] {_number(row['expected_layer'], 2)}"
            + (controls if row["control_models"] and not row["random_init"] else "")
        )
    for row in result.paired.to_dict("records"):
        verdict = "significant" if row["significant"] else "not significant"
        note = f" ({row['note']})" if row["note"] else f": p_holm {_number(row['p_holm'])} {verdict}"
        lines.append(
            f"{row['corpus']}/{row['label']}: {row['model_a']} (layer {row['layer_a']}) - {row['model_b']} "
            f"(layer {row['layer_b']}) = {_number(row['difference'])}{note}"
        )
    lines.extend(result.warnings)  # each probe's own warnings: a figure that means little says so here too
    for key in result.failed:
        error = result.errors.get(key) or (read_state(result.plan.config.output, key) or {}).get("error")
        lines.append(f"failed: {key}: {error}")
    done = sum(status == DONE for status in result.statuses.values())
    wrote = ", ".join([str(path) if index == 0 else path.name for index, path in enumerate(result.written)])
    lines.append(f"{done} of {len(result.statuses)} cells done, {len(result.failed)} failed; wrote {wrote}")
    return "\n".join(lines)

"""``featx.study.run``: a study from its file (or dict) to its results table and summary.

The study is checked whole first (``StudyConfig``), then, holding a lock on OUTPUT (a second run on the same
output is refused), every extraction not done runs (one at a time), then every probe not done whose extraction
is (side by side over ``jobs`` workers), through the engine. A done cell is never redone ("up to date"); a
failed one is recorded with its error and the others go on. Then the results table, the summary and the
model-vs-model tests are written from every done cell, while the engine stops its workers (or its local Ray
cluster) in a thread beside them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from ..checks import one_of, whole
from ..extraction import remembered_digests
from ..io import write_csv
from ..options import Check, Options, keywords_of, on_command_line, option
from ..store import OutputLock
from .cells import Task
from .columns import check_corpora
from .compare import paired_models
from .config import check_study
from .engines import ENGINES, Engine, engine_named
from .lexical import share_lexical
from .missing import check_missing
from .plan import StudyPlan, make_plan
from .records import DONE, FAILED, cell_folders, cell_status, record_state, state_folder
from .results import probe_warnings, results_table, write_results
from .summary import summarise

Echo = Callable[[str], None]


@dataclass(frozen=True)
class RunConfig(Options):
    """``featx study run``'s options: the study (a file's path; in Python also a dict of its tables or a
    ``StudyConfig``) and what the command line overrides of its ``[study]``."""

    study: str | Path | dict[str, Any]
    jobs: int | None = option(
        None, flag="--jobs", help="Probe worker processes (default: the study file's jobs, else 1)."
    )
    engine: str | None = option(
        None,
        flag="--engine",
        choices=tuple(ENGINES),
        help="What runs the cells (default: the study file's, else local).",
    )
    address: str | None = option(
        None,
        flag="--address",
        help="The Ray engine's cluster, HOST:PORT of its head node or 'auto' (default: the study file's, else a "
        "local Ray cluster for the run).",
    )
    trust_remote_code: bool = option(  # never because the study file says so
        False,
        flag="--trust-remote-code",
        help="Allow a model folder's own Python code to run where the study sets trust_remote_code (never implied "
        "by the study file).",
    )

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        lambda config: check_study(config.study),
        whole("jobs", "--jobs", minimum=1, optional=True),
        one_of("engine", "--engine", tuple(ENGINES), optional=True),
    )


@dataclass(frozen=True)
class StudyResult:
    """What a run did: the plan, each cell's status at the end, and the tables written."""

    plan: StudyPlan
    statuses: dict[str, str]
    errors: dict[str, str]
    ran: tuple[str, ...]  # the cells run this time (the others were up to date)
    results: pd.DataFrame
    summary: pd.DataFrame
    paired: pd.DataFrame
    written: tuple[Path, ...]
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)  # seconds: prepare, extract, probe, close, tables (the
    # last two side by side)
    warnings: tuple[str, ...] = ()  # each done probe's warnings ("warning: MODEL CORPUS/LABEL: ..."), printed too

    @property
    def failed(self) -> list[str]:
        return [key for key, status in self.statuses.items() if status == FAILED]

    @property
    def exit_code(self) -> int:
        """0 when every cell is done, 1 when any failed."""
        return 1 if self.failed else 0


def lock_of(output: Path) -> OutputLock:
    """The lock a run holds on its output folder (``OUTPUT.lock`` beside it)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    return OutputLock(output, "featx study run", "wait for it to finish (featx study status shows its cells)")


def _line(task: Task, outcome: dict[str, Any]) -> str:
    status, seconds = outcome["status"], outcome.get("seconds") or 0.0
    detail = outcome.get("detail") or {}
    said = detail.get("status") if isinstance(detail, dict) and detail.get("status") == "up-to-date" else status
    error = f": {outcome.get('error')}" if status == FAILED else ""
    return f"{task.key}: {said} ({seconds:.1f} s){error}"


@contextmanager
def _timed(stages: dict[str, float], name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        stages[name] = time.perf_counter() - started


def _stage(plan: StudyPlan, tasks: list[Task], workers: int, echo: Echo, engine: Engine) -> dict[str, dict[str, Any]]:
    """Run the tasks not done yet; say "up to date" for the others. The outcomes of those run, by key."""
    pending = []
    for task in tasks:
        if cell_status(task) == DONE:
            echo(f"{task.key}: up to date")
        else:
            pending.append(task)
    outcomes = engine.run(pending, workers, lambda task, outcome: echo(_line(task, outcome)))
    return {outcome["key"]: outcome for outcome in outcomes}


def _blocked(plan: StudyPlan, echo: Echo) -> list[Task]:
    """The probes whose extraction is done; those whose extraction failed are recorded failed."""
    ready = []
    for cell in plan.probes:
        extraction = plan.extraction_of(cell).task
        if cell_status(extraction) == DONE:
            ready.append(cell.task)
        elif cell_status(cell.task) != DONE:
            outcome = record_state(cell.task, FAILED, time.time(), error=f"its extraction failed ({extraction.key})")
            echo(_line(cell.task, outcome))
    return ready


def _cells(plan: StudyPlan, echo: Echo) -> tuple[dict[str, dict[str, Any]], dict[str, float], Engine]:
    """Every cell not done, through the study's engine: the extractions one at a time (one model in memory per
    device), then the probes side by side. The outcomes of those run, by key, each stage's seconds, and the
    engine, still to close (``_closing``; closed here when a stage raises). The engine is prepared first (the
    probe workers, a cluster), so that it starts beside the extractions."""
    runner = engine_named(plan.config.engine, plan.config.address)
    stages: dict[str, float] = {}
    try:
        with _timed(stages, "prepare"):  # worker processes or a cluster started
            if any(cell_status(task) != DONE for task in plan.tasks):
                runner.prepare(plan.config.jobs)
        with _timed(stages, "extract"):
            ran = _stage(plan, [cell.task for cell in plan.extractions], 1, echo, runner)
        with _timed(stages, "probe"):
            ran |= _stage(plan, _blocked(plan, echo), plan.config.jobs, echo, runner)
    except BaseException:
        with _timed(stages, "close"):
            runner.close()
        raise
    return ran, stages, runner


@contextmanager
def _closing(engine: Engine, stages: dict[str, float]) -> Iterator[None]:
    """Close the engine (stop the workers or a local cluster: mostly waiting for processes to exit) in a thread
    beside the body (the tables), and wait for it at the end; its error, if any, is raised then."""
    errors: list[BaseException] = []

    def close() -> None:
        try:
            with _timed(stages, "close"):
                engine.close()
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            errors.append(error)

    closer = threading.Thread(target=close, name="featx-engine-close")
    closer.start()
    try:
        yield
    finally:
        closer.join()
    if errors:
        raise errors[0]


def write_tables(plan: StudyPlan) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[Path]]:
    """The results table, the summary and the model-vs-model tests of every done cell, written to OUTPUT; and
    the files written. First every done cell without its (corpus, label)'s lexical baseline gets the one fitted
    beside another model (``lexical.share_lexical``: the same figures, so that each cell's own results carry it)."""
    output = plan.config.output
    share_lexical(plan)
    results = results_table(plan)
    written = write_results(results, output)
    summary = summarise(results)
    written.append(write_csv(summary, output / "summary.csv"))
    paired = paired_models(plan, summary)
    written.append(write_csv(paired, output / "paired.csv"))
    return results, summary, paired, written


@keywords_of(RunConfig)  # from Python, a message names the keyword given (jobs=0), the CLI the flag
def run(
    study: str | Path | dict[str, Any] | Any,
    jobs: int | None = None,
    engine: str | None = None,
    echo: Echo | None = None,
    address: str | None = None,
    **options: Any,
) -> StudyResult:
    """Run a study (a TOML file's path, a dict of the same tables, a ``StudyConfig``, or a ``RunConfig``): every
    cell not done, then the results table (``featx.study.load``), ``summary.csv`` and ``paired.csv``. ``jobs``,
    ``engine`` and ``address`` (the Ray engine's cluster) override the file's; ``echo`` gets one line per cell.
    Another keyword is an ``InputError`` naming ``RunConfig``'s. Check ``result.exit_code``: 1 when a cell
    failed."""
    given = {
        name: value for name, value in (("jobs", jobs), ("engine", engine), ("address", address)) if value is not None
    }
    config = RunConfig.build(study, **given, **options)
    echo = echo or (lambda line: None)
    with remembered_digests():  # each corpus hashed once in this run: its plan, every probe's freshness check
        return _run(config, echo)


def check_remote_code(plan: StudyPlan, allowed: bool) -> None:
    """A study file is someone else's file too: its ``trust_remote_code = true`` runs a model folder's own Python
    code only when the caller of this run (or of its dry run, whose calibration runs load the model) asks for it
    (``--trust-remote-code``), never because the file says so."""
    cells = [cell for cell in plan.extractions if cell.task.args["options"].get("trust_remote_code")]
    if not cells or allowed:
        return
    cell = cells[0]
    model = cell.model
    tables = ((("models", model.entry), model.options), (("corpora", cell.corpus.entry), cell.corpus.options))
    table = next((place for place, options in tables if dict(options).get("trust_remote_code")), ("extract",))
    where = (*table, "trust_remote_code")
    flag = "--trust-remote-code" if on_command_line() else "trust_remote_code=True"
    raise plan.config.source.error(
        where,
        f"trust_remote_code = true would run the Python code of model '{model.name}' ({model.model}): a study file "
        "never turns it on alone",
        f"if you trust that code, run the study with {flag}; else remove trust_remote_code from the study",
    )


def _run(config: RunConfig, echo: Echo) -> StudyResult:
    started = time.perf_counter()
    overrides = {"jobs": config.jobs, "engine": config.engine, "address": config.address}
    plan = make_plan(config.study, **overrides)  # the whole study checked before any work
    check_remote_code(plan, config.trust_remote_code)
    check_missing(plan)  # a corpus file gone that an extraction not done reads
    check_corpora(plan.config)  # every corpus file read: its labels, its group column
    plan.config.check_address()
    output = plan.config.output
    with lock_of(output):
        state_folder(output)
        for task in plan.tasks:  # a link planted at a model's or a cell's folder: refused before any work
            cell_folders(task, make=False)
        ran, stages, used = _cells(plan, echo)
        with _closing(used, stages), _timed(stages, "tables"):
            results, summary, paired, written = write_tables(plan)
            warnings = probe_warnings(plan)
    statuses = {task.key: cell_status(task) for task in plan.tasks}
    errors = {key: str(outcome.get("error")) for key, outcome in ran.items() if outcome["status"] == FAILED}
    seconds = time.perf_counter() - started
    return StudyResult(
        plan, statuses, errors, tuple(ran), results, summary, paired, tuple(written), seconds, stages, warnings
    )

"""``featx study report``: the study's one page (``OUTPUT/report.html``) over its results table and summary,
with a link from every cell to that cell's own ``featx report`` page (written beside its probe results, and
rewritten only when the results are newer than the page).

The page itself is ``featx.report.write_study_report``'s (plotly, offline, its JavaScript embedded once); this
module only gathers what a study wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from .. import report as reporting
from ..errors import InputError, StoreError
from ..io import read_csv
from ..json_fields import shown
from ..options import keywords_of, on_command_line
from ..safe_files import real_folder
from .plan import make_plan
from .results import load
from .runner import RunConfig

REPORT_NAME = "report.html"


def _cell_pages(output: Path, table: pd.DataFrame, echo: Callable[[str], None]) -> dict[tuple, str]:
    """(model, corpus, label, seed) -> the cell's own report, relative to OUTPUT (written when missing or older
    than its results)."""
    links: dict[tuple, str] = {}
    cells = table.drop_duplicates(["model", "corpus", "label"])
    for _, row in cells.iterrows():
        if not isinstance(row["results"], str) or not row["results"]:
            continue
        results = output / _inside(output, row["results"])
        page = results.with_name(results.name.removesuffix(".probe.csv") + ".report.html")
        real_folder(page.parent, output.parent, make=False)  # never written through a link planted there
        if not page.is_file() or page.stat().st_mtime < results.stat().st_mtime:
            _write_cell_page(results, page)
            echo(f"{row['model']}/{row['corpus']}/{row['label']}: {page.relative_to(output)}")
        seed = None if pd.isna(row["seed"]) else int(row["seed"])
        links[(row["model"], row["corpus"], row["label"], seed)] = page.relative_to(output).as_posix()
    return links


def _inside(output: Path, name: str) -> Path:
    """A results file the table names, as ``featx study run`` writes it: a relative path inside OUTPUT. Any other
    (an absolute path, ``..``) is refused: its page would be written outside the study's folder."""
    path = Path(name)
    if path.is_absolute() or ".." in path.parts or "\0" in name:
        raise StoreError(
            f"{output}'s results table names a results file outside the study's folder ({shown(name)})",
            "the table was changed after featx study run wrote it: run the study again, or leave the cells' own "
            "pages out with " + ("--no-cells" if on_command_line() else "cells=False"),
        )
    return path


def _write_cell_page(results: Path, page: Path) -> None:
    """A cell's own page, beside its results; a failed write says what this command offers (its pages are
    written where the study's output is, so there is no path to choose), not ``featx report``'s ``-o``."""
    try:
        reporting.write_report(results, output=page)
    except StoreError as err:
        skip = "--no-cells" if on_command_line() else "cells=False"
        hint = f"make {page.parent} writable, or leave the cells' own pages out with {skip}"
        raise StoreError(err.message, hint) from None


def _status_of(path: Path | None) -> str:
    """The status call of a study, as the caller makes it: ``featx study status x.toml``,
    ``featx.study.status('x.toml')`` (a study given as a dict: ``STUDY``, ``study``)."""
    if on_command_line():
        return f"featx study status {path or 'STUDY'}"
    return f"featx.study.status({str(path)!r})" if path is not None else "featx.study.status(study)"


@keywords_of(RunConfig)  # from Python, a message names the keyword given (study=''), the CLI the flag
def write_report(
    study: str | Path | dict[str, Any], cells: bool = True, echo: Callable[[str], None] | None = None
) -> Path:
    """Write ``OUTPUT/report.html`` for a study (its file's path or dict) from what its runs wrote so far, with
    each cell's own report linked (``cells=False``: no per-cell pages). Returns the page's path."""
    echo = echo or (lambda line: None)
    config = make_plan(study).config
    output = config.output
    table = load(output)
    if table.empty:  # a run whose every probe failed, or none ran yet
        raise InputError(
            f"no probe of the study is done yet: {output} holds an empty results table",
            f"{_status_of(config.source.path)} shows each cell and the error of a failed one; fix it and run the study "
            "again",
        )
    summary_path = output / "summary.csv"
    summary = read_csv(summary_path, keep_default_na=True) if summary_path.is_file() else None
    links = _cell_pages(output, table, echo) if cells else None
    title = f"featx study: {config.source.path.stem if config.source.path is not None else output.name}"
    return reporting.write_study_report(table, output / REPORT_NAME, summary=summary, links=links, title=title)

"""Studies: many models x corpora x labels in one command, resumable, with one results table and one summary.

``run(study)``      a study file's path (TOML) or a dict of the same tables: every cell not done, then
                    ``OUTPUT/results.parquet`` (and ``.csv``), ``summary.csv`` and ``paired.csv``
``load(output)``    the results table as a pandas DataFrame (its columns: ``RESULT_COLUMNS``, ``results.py``)
``status(study)``   each cell done, pending or failed, with its times; ``dry_run(study)`` what a run would do
``write_report(study)``   ``OUTPUT/report.html``: one interactive page over the study, linking each cell's report
``study_toml(study)``     a study dict as the text of a study file (what ``featx study run`` reads)

The modules, one concept each: ``source`` (reading the TOML; errors with file, key and line), ``options`` (extract
and probe options by field or flag name), ``config`` (``StudyConfig``, checked whole at construction), ``groups``
(a corpus's ``group``), ``repeats`` (a model or corpus given twice), ``columns`` (each corpus file read by
``run``: its labels and group), ``missing`` (a corpus file gone: what still needs it), ``plan``
(``StudyPlan``: the cells, data only), ``cells`` (``Task``: one picklable call by dotted name with JSON-able
arguments), ``tasks`` (``execute`` and the cells' functions), ``records`` (each cell's state, atomic JSON),
``engines`` (the ``Engine`` protocol and ``LocalEngine``), ``ray_engine`` (``RayEngine``), ``results``, ``summary``
and ``compare`` (the tables), ``views`` (status, dry run, printouts), ``runner`` (``run``) and ``report``
(``write_report``: the study's page).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_HOMES = {
    "run": "runner",
    "StudyResult": "runner",
    "RunConfig": "runner",
    "load": "results",
    "status": "views",
    "dry_run": "views",
    "format_status": "views",
    "format_dry_run": "views",
    "format_summary": "views",
    "StudyConfig": "config",
    "ModelSpec": "config",
    "CorpusSpec": "config",
    "study_config": "config",
    "StudyPlan": "plan",
    "make_plan": "plan",
    "Task": "cells",
    "execute": "tasks",
    "Engine": "engines",
    "LocalEngine": "engines",
    "RayEngine": "ray_engine",
    "check_address": "ray_engine",
    "write_report": "report",
    "ENGINES": "engines",
    "RESULT_COLUMNS": "results",
    "SUMMARY_COLUMNS": "summary",
    "PAIRED_COLUMNS": "compare",
    "STATUS_COLUMNS": "views",
    "expected_layer": "summary",
    "summarise": "summary",
    "results_table": "results",
    "study_toml": "source",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

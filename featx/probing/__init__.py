"""Probing classifiers on stored features: ``probe(...)`` -> ``ProbeResult``.

Modules: ``api`` (``probe``, the one entry point), ``config`` (``ProbeConfig``), ``plan`` (``ProbePlan``,
what a config resolves to against its file), ``meta`` (``ProbeMeta``, the run's typed metadata),
``results`` (``ProbeResult`` and the results files), ``inputs`` (input checks, jobs and workers) and
``labels`` (label columns). Subpackages: ``tasks`` (the ``ProbeTask`` of each kind of run), ``solvers``,
``evaluation`` and ``analyses``.

The names below are imported on first use, so that importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "probe": "api",
    "ProbeConfig": "config",
    "CLASSIFIERS": "config",
    "ProbePlan": "plan",
    "ProbeMeta": "meta",
    "ProbeResult": "results",
    "load_results": "results",
    "regression_metrics": "evaluation",
    "results_paths": "results",
    "ProbeTask": "tasks.base",
    "describe_labels": "label_summary",
    "lexical_predictions": "tasks.lexical",
    "per_type_predictions": "tasks.word_items",
    "word_types": "tasks.word_items",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'featx.probing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)

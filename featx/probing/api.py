"""``featx.probe``: the one entry point of every probing run.

A ``ProbeConfig`` (or its fields as keywords) resolves to a ``ProbePlan`` against the features file;
the plan picks its task (classification or regression of a sentence label, word or arc probes; sentence
pairs are probed by the sentence tasks), whose jobs run side by side and whose result is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..options import keywords_of
from .config import ProbeConfig
from .meta import Level, Task
from .plan import ProbePlan, probe_config, resolve_plan
from .results import ProbeResult
from .tasks.base import ProbeTask, run_task


@keywords_of(ProbeConfig)  # from Python, an error names the keyword given (folds=1), the CLI the flag
def probe(config: ProbeConfig | str | Path | None = None, **options: Any) -> ProbeResult:
    """Probe a features file: ``featx.probe("feats.h5", layers="all", poolings="mean,cls")``.

    Takes a ``ProbeConfig`` or its fields as keywords; returns a ``ProbeResult`` whose ``table``
    is the results DataFrame (also written as CSV and JSON unless ``write=False``).
    """
    config = probe_config(config, **options)
    if config.structural is not None:
        from ..errors import InputError

        raise InputError(
            "featx.probe runs label probes; a structural probe has a result of its own",
            f"featx.probing.structural_probe(features, structural='{config.structural}') runs it",
        )
    return run_task(task_for(resolve_plan(config)))


def task_for(plan: ProbePlan) -> ProbeTask:
    """The task that probes ``plan``: word/arc probes, regression, or classification of a sentence label."""
    if plan.level is not Level.SENTENCE:
        from .tasks.words import WordProbe

        return WordProbe.from_plan(plan)
    if plan.task is Task.REGRESSION:
        from .tasks.regression import RegressionProbe

        return RegressionProbe.from_plan(plan)
    from .tasks.classification import ClassificationProbe

    return ClassificationProbe.from_plan(plan)

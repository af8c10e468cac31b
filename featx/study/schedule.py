"""The order a stage hands its tasks to the workers: the longest first, so that the last tasks to start are
short ones and the workers finish together (with the plan's order, two long probes ending a stage would run
one beside an idle worker).

A probe's expected cost comes from its features file's header, read before the stage: rows x (layers x
poolings) x (classes + a fixed part), a fifth more for the probe that computes the lexical baseline. The
constants come from the CPU seconds of the bench's six probes (bench/study.py: 2, 4 and 6 classes took about
5 : 7 : 9 in time, the lexical baseline a few tenths more). It only orders the tasks: a wrong guess costs
time, never a result (every task still runs; outcomes keep the plan's order).
"""

from __future__ import annotations

from collections.abc import Sequence

from .cells import PROBE, Task

FIXED_CLASSES = 3.0  # what a probe does whatever its classes (loading, intervals, tables), in classes' fits
LEXICAL_SHARE = 0.2  # the lexical baseline's TF-IDF fit, against the probe's grid of layers and poolings


def expected_cost(task: Task) -> float:
    """A probe's cost in arbitrary units (0 for anything else, or a features file that cannot be read: the task
    then fails at once with its own error)."""
    if task.kind != PROBE:
        return 0.0
    options = task.args.get("options", {})
    try:
        from ..store import FeatureFile

        with FeatureFile(options["features"]) as features:
            grid = len(features.site_layers()) * len(features.site_poolings())
            label = options.get("label")
            classes = len(features.label_names(label)) if label in features.label_columns else 2
            rows = features.n_rows
    except Exception:  # noqa: BLE001 - only an order is at stake; the task reports the file's problem itself
        return 0.0
    lexical = LEXICAL_SHARE if options.get("lexical") else 0.0
    return float(rows * grid) * (max(2, classes) + FIXED_CLASSES) * (1.0 + lexical)


def longest_first(tasks: Sequence[Task]) -> list[int]:
    """The indices of ``tasks``, the most expensive first (ties, and tasks of no known cost, in plan order)."""
    costs = [expected_cost(task) for task in tasks]
    return sorted(range(len(tasks)), key=lambda index: -costs[index])

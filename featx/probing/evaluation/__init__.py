"""How probes are evaluated, in four steps: the outer plan and its inner holdouts (``plans``), the inner
search over C (``search``), the fits and scores of one outer fold (``core``), and the metrics with their
intervals (``metrics``); beside them the regression metrics (``regression_metrics``) and the paired tests
between layers (``significance``).

Callers use the package as one namespace (``from ..probing import evaluation as ev``; ``ev.make_plan``,
``ev.run_linear_tasks``, ``ev.summarise``); numpy only at import, scikit-learn and torch when a probe runs.
"""

from .core import (
    Scaler,
    TokenBatches,
    final_logreg,
    fit_linear,
    fit_logreg,
    fit_mlp,
    fit_scaler,
    run_attention,
    run_linear_tasks,
    run_majority,
    run_mlp,
    run_stack,
)
from .groups import Groups, check_group_count, group_holdout, grouped_folds, stratified_group_splits
from .metrics import bootstrap_intervals, confusion, metrics_from_confusion, summarise, t_interval
from .plans import (
    DEV_VALUES,
    INNER_HOLDOUT,
    TEST_VALUES,
    TRAIN_VALUES,
    FoldResult,
    Plan,
    check_labels,
    grouped,
    inner_split,
    make_plan,
    split_parts,
    tuned_on,
    usable_split,
)
from .search import PATH_PATIENCE, PATH_TOL, CPath, search_c, search_logreg
from .selection import CLASSIFICATION_METRICS, METRICS, REGRESSION_METRICS, Scoring, check_metric

__all__ = [
    "CLASSIFICATION_METRICS",
    "METRICS",
    "REGRESSION_METRICS",
    "Scoring",
    "check_metric",
    "selection",
    "DEV_VALUES",
    "INNER_HOLDOUT",
    "PATH_PATIENCE",
    "PATH_TOL",
    "TEST_VALUES",
    "TRAIN_VALUES",
    "CPath",
    "FoldResult",
    "Groups",
    "Plan",
    "Scaler",
    "TokenBatches",
    "bootstrap_intervals",
    "check_group_count",
    "check_labels",
    "confusion",
    "core",
    "fit_linear",
    "fit_logreg",
    "final_logreg",
    "fit_mlp",
    "fit_scaler",
    "group_holdout",
    "grouped",
    "grouped_folds",
    "stratified_group_splits",
    "groups",
    "inner_split",
    "make_plan",
    "metrics",
    "metrics_from_confusion",
    "plans",
    "regression_metrics",
    "run_attention",
    "run_linear_tasks",
    "run_majority",
    "run_mlp",
    "run_stack",
    "search",
    "search_c",
    "search_logreg",
    "split_parts",
    "significance",
    "summarise",
    "t_interval",
    "tuned_on",
    "usable_split",
]

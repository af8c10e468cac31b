"""Probing classifiers on stored features: ``probe(...)`` -> ``ProbeResult``.

Modules: ``api`` (``probe``, the one entry point), ``config`` (``ProbeConfig``), ``plan`` (``ProbePlan``,
what a config resolves to against its file), ``meta`` (``ProbeMeta``, the run's typed metadata),
``results`` (``ProbeResult`` and the results files), ``inputs`` (input checks, jobs and workers),
``baseline_checks`` (a ``--baseline`` file's) and ``labels`` (label columns). Subpackages: ``tasks`` (the
``ProbeTask`` of each kind of run), ``solvers``, ``evaluation`` and ``analyses`` (``erase``, ``neurons``, ``sweep``,
``explain``).

Results hold data and write data files (CSV, JSON); their printouts and figures are ``featx.report``'s
(``format_probe``, ``format_erase``, ...), so nothing here imports the report side.

The names below are the package's face, the only names other featx packages import; they load on first use,
so that importing the package stays cheap. Where two inner modules use one name for different things the
face names them apart (``classification_plan``, ``regression_plan``).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_HOMES = {
    # a probing run
    "probe": "api",
    "task_for": "api",
    "resolve_plan": "plan",
    "run_task": "tasks.base",
    "ProbeConfig": "config",
    "CLASSIFIERS": "config",
    "ProbePlan": "plan",
    "ProbeMeta": "meta",
    "ProbeResult": "results",
    "load_results": "results",
    "regression_metrics": "evaluation",
    "results_paths": "results",
    "write_results": "results",
    "ProbeTask": "tasks.base",
    "describe_labels": "label_summary",
    "lexical_predictions": "tasks.lexical",
    "lexical_fold_predictions": "tasks.lexical",
    "per_type_predictions": "tasks.word_items",
    "word_types": "tasks.word_items",
    "type_control": "tasks.word_items",  # the control task of featx fit's word probe, as featx probe's
    "permuted_control": "tasks.sentences",  # ... and of its sentence probe
    "add_labels": "labels",
    "LabelsAddConfig": "labels",
    "chosen_layer": "choice",
    "structural_probe": "tasks.structural",
    "StructuralResult": "tasks.structural",
    "baseline_rivals": "choice",
    # the analyses: results hold data; featx.report formats them
    "erase": "analyses.erase:erase",
    "EraseResult": "analyses.erase",
    "neurons": "analyses.neurons:neurons",
    "NeuronResult": "analyses.neurons",
    "sweep": "analyses.sweep:sweep",
    "sweep_from_probe_options": "analyses.sweep:from_probe_options",
    "SweepResult": "analyses.sweep",
    "explain": "analyses.explain:explain",
    "ExplainConfig": "analyses.explain",
    "EraseConfig": "analyses.erase_config",
    "NeuronConfig": "analyses.neurons",
    # what featx.deploy and featx.report build on: checks, jobs, labels, evaluation, solvers
    "DEFAULT_ALPHAS": "config",
    "DEFAULT_CS": "config",
    "check_bootstrap": "config",
    "check_folds": "shared_options",
    "check_jobs": "config",
    "check_seed": "shared_options",
    "JOB_THREADS": "inputs",
    "job_workers": "inputs",
    "run_jobs": "inputs",
    "torch_threads": "tasks.classification_jobs",
    "stored_column": "labels",
    "default_label": "plan",
    "resolve_task": "plan",
    "HEAD_LABEL": "tasks.word_items",
    "ARC_NAMES": "tasks.word_items",
    "attachment_task": "tasks.word_items",
    "relation_task": "tasks.word_items",
    "gold_attachments": "tasks.word_items",
    "arc_features": "tasks.word_eval",
    "block_reads": "tasks.pairs",
    "require_finite_blocks": "prescan",
    "WordPlan": "tasks.word_items",
    "sentence_folds": "tasks.word_items",
    "run_groups": "tasks.redraw",  # a finished run's folds drawn again (featx compare, featx explain)
    "run_plan": "tasks.redraw",
    "pooled_block": "tasks.pairs",
    "senteval": "tasks.pairs",
    "EvaluationPlan": "evaluation.plans:Plan",
    "classification_plan": "evaluation.plans:make_plan",
    "column_plan": "evaluation.plans",
    "regression_plan": "tasks.regression:make_plan",
    "DEV_VALUES": "evaluation.plans",
    "TEST_VALUES": "evaluation.plans",
    "TRAIN_VALUES": "evaluation.plans",
    "check_labels": "evaluation.plans",
    "inner_split": "evaluation.plans",
    "usable_split": "evaluation.plans",
    "split_parts": "evaluation.plans",
    "few_val_note": "evaluation.plans",
    "few_scored_note": "evaluation.plans",
    "MIN_TEST_ROWS": "evaluation.plans",
    "MIN_VAL_ROWS": "evaluation.plans",
    "MIN_VAL_PER_CLASS": "evaluation.plans",
    "confusion": "evaluation.metrics",
    "metrics_from_confusion": "evaluation.metrics",
    "bootstrap_intervals": "evaluation.metrics",
    "regression_scores": "evaluation.regression_metrics:metrics",
    "regression_bootstrap": "evaluation.regression_metrics:bootstrap",
    "REGRESSION_METRICS": "evaluation.selection",
    "check_metric": "evaluation.selection",
    "Scoring": "evaluation.selection",
    "fold_mean": "evaluation.selection",
    "SIGNIFICANCE_ALPHA": "evaluation.significance:ALPHA",
    "holm": "evaluation.significance",
    "fit_linear": "evaluation.core",
    "fit_mlp": "evaluation.core",
    "fit_scaler": "evaluation.core",
    "STACK_INNER_FOLDS": "evaluation.core",
    "fit_at_c": "evaluation.core",
    "stack_layer": "evaluation.core",  # featx fit's stack: one code path with featx probe's
    "stack_meta": "evaluation.core",
    "STACK_META_C": "evaluation.core",
    "stack_folds": "evaluation.core",
    "stack_splits": "evaluation.core",
    # --group: rows kept together (featx fit reads, folds and checks them as featx probe does)
    "Groups": "evaluation.groups",
    "check_group_count": "evaluation.groups",
    "check_split_groups": "evaluation.groups",
    "check_training_groups": "evaluation.groups",
    "grouped_folds": "evaluation.groups",
    "stratified_group_splits": "evaluation.groups",
    "group_rows": "tasks.groups",
    "group_codes": "tasks.groups",
    "text_groups": "tasks.groups",  # featx study checks a corpus's groups of its texts against its split
    "text_group_names": "tasks.groups",
    "note_shared_texts": "tasks.groups",
    "TEXT_GROUPS": "shared_options",
    "group_option": "shared_options",
    "check_group": "shared_options",
    "DEFAULT_BOOTSTRAP": "shared_options",
    "bootstrap_option": "shared_options",  # --n-bootstrap of fit, lens and intervene (checked by check_bootstrap)
    "control_option": "shared_options",  # --no-control of probe and fit
    "folds_option": "shared_options",  # --folds of fit and lens (checked by check_folds)
    "seed_option": "shared_options",  # --seed of fit, lens and intervene (checked by check_seed)
    "refuse_word_group": "shared_options",
    "build_mlp": "solvers.classifiers",
    "train_head": "solvers.classifiers",
    "fit_ridge": "solvers.ridge",
    "fit_word_head": "tasks.word_eval",
    # what featx.interventions builds on: one label's task, an eraser, one fold's probes and their paired test
    "load_task": "analyses.target",
    "refuse_continuous": "analyses.target",
    "fit_eraser": "analyses.erasure",
    "run_linear_tasks": "evaluation.core",
    "summarise": "evaluation.metrics",
    "paired_p_value": "evaluation.significance",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

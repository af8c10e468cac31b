"""Regression probes of a numeric label column: ridge (and an MLP head) per layer spec and pooling.

The same rigour as the classification probes (``tasks.classification``): the same outer plan (the file's split, else
seeded k-fold), everything fitted inside the training part, the training mean as baseline, a control
task on permuted targets (selectivity = R² - control R²), and paired layer tests on squared errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...options import spoken_value
from ...selection import parse_layer_specs
from ...store import FeatureFile
from .. import evaluation as ev
from ..config import ProbeConfig
from ..evaluation import regression_metrics as rm
from ..inputs import JOB_THREADS, FeatureJob, run_jobs
from ..labels import in_split
from ..meta import ProbeMeta
from ..plan import ProbePlan
from ..results import IDENTITY_COLUMNS, ProbeResult
from .base import choice_meta, mark_choices, row_order
from .classification_table import chosen_row
from .groups import read_groups
from .lexical import (
    LexicalTexts,
    add_lexical_test,
    lexical_meta,
    read_texts,
    run_job_or_lexical,
    take_lexical,
    with_lexical_job,
)
from .pairs import baseline_meta
from .regression_jobs import CURVE_COLUMNS, RegressionInputs, mean_record, run_curve_job, run_probe_job
from .sentences import SentenceLayout, SentenceTask, control_targets, read_layout, sources
from .tested_rows import rows_sha256

CLASSIFIER_NAMES = {"logreg": "ridge", "ridge": "ridge", "mlp": "mlp"}
REGRESSION_COLUMNS = [
    *IDENTITY_COLUMNS,
    *[f"{name}{suffix}" for name in rm.METRICS for suffix in ("", "_low", "_high")],
    "control_r2",
    "control_pearson",
    "control_spearman",
    "selectivity",
    "alpha",
    "fit_seconds",
    "n_train",
    "n_test",
    "evaluation",
    "selection_score",
    "is_best",
    "is_best_on_test",
    *rm.SIGNIFICANCE,
]


def regression_classifiers(config: ProbeConfig) -> list[str]:
    names = config.classifiers if isinstance(config.classifiers, (list, tuple)) else str(config.classifiers).split(",")
    chosen = []
    for name in (str(part).strip().lower() for part in names if str(part).strip()):
        if name not in CLASSIFIER_NAMES:
            raise InputError(
                f"classifier '{name}' has no regression form",
                "regression probes: ridge (also what logreg means here) and mlp",
            )
        if CLASSIFIER_NAMES[name] not in chosen:
            chosen.append(CLASSIFIER_NAMES[name])
    return chosen


def make_plan(
    values: np.ndarray, split: np.ndarray | None, folds: int, seed: int, groups: ev.Groups | None = None
) -> ev.Plan:
    """The file's train/test split when both parts have rows, else seeded (unstratified) k-fold (by whole
    ``groups``)."""
    from sklearn.model_selection import KFold

    if split is not None:
        train, test, dev = ev.split_parts(split)
        if len(train) >= 2 and len(test) >= 2:
            return ev.grouped(ev.Plan("split", [(train, test)], [dev if len(dev) else None]), groups)
    if len(values) < 2 * folds:
        raise InputError(
            f"only {len(values)} labelled rows for {folds}-fold cross-validation", "use fewer folds or more data"
        )
    if groups is not None:
        ev.check_group_count(groups, folds)
        pairs = ev.grouped_folds(values, groups, folds, seed, stratified=False)
        return ev.grouped(ev.Plan(f"{folds}-fold cv by {groups.column}", pairs, [None] * len(pairs)), groups)
    pairs = list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.zeros(len(values))))
    return ev.Plan(f"{folds}-fold cv", pairs, [None] * len(pairs))


def prediction_table(
    table: pd.DataFrame, predictions: dict, y: np.ndarray, row_info: pd.DataFrame
) -> tuple[pd.DataFrame | None, str]:
    """Per-row out-of-fold predictions of every single layer of the best pooling/classifier (hidden states)."""
    singles = table[(table.features == "main") & (table.kind == "single") & (table.site == "hidden")]
    if singles.empty:
        return None, ""
    best = chosen_row(singles, "r2")
    chosen = singles[(singles.pooling == best.pooling) & (singles.classifier == best.classifier)]
    frame = row_info.copy()
    frame.insert(2, "label", y)
    tested = np.zeros(len(y), bool)
    for index, record in chosen.iterrows():
        tested |= np.isfinite(predictions[index])
        frame[f"layer_{record.layer_spec}"] = predictions[index]
    return frame[tested].reset_index(drop=True), f"{best.pooling}/{best.classifier}"


@dataclass(frozen=True)
class RegressionProbe(SentenceTask):
    """A regression run of a numeric sentence label, resolved against its features file."""

    plan: ProbePlan
    layout: SentenceLayout
    inputs: RegressionInputs
    texts: LexicalTexts | None = None  # the lexical baseline's texts (None: --no-lexical, or none stored)
    n_unlabelled: int | None = None  # the stored rows without a value (ProbeMeta.n_unlabelled)

    @property
    def classifiers(self) -> list[str]:
        """ridge and/or mlp (``--classifier logreg`` means ridge here)."""
        return list(self.plan.classifiers)

    @classmethod
    def from_plan(cls, plan: ProbePlan) -> RegressionProbe:
        config, notes, label = plan.config, plan.notes, plan.label or ""
        classifiers = regression_classifiers(config)
        if config.mdl:
            notes.append("MDL is classification-only: no codelength for a regression label")
        if str(config.device).strip().lower().startswith("cuda"):
            notes.append(f"--device {config.device} moves logreg probes only: the ridge probes run on the CPU")
        with FeatureFile(plan.path, allow_partial=plan.allow_partial) as features:
            values = features.label_values(label)
            if values is None:  # the plan sends numeric columns only (plan.resolve_task)
                raise InputError(
                    f"label column '{label}' is not numeric", f"drop {spoken_value(config, 'task', 'regression')}"
                )
            kept = np.flatnonzero(in_split(np.isfinite(values), features.split, notes, plan.path))
            if len(kept) < 4 or len(np.unique(values[kept])) < 2:
                raise InputError(
                    f"label column '{label}' of {plan.path} has too few distinct values to regress on",
                    f"pick another column with {spoken_value(config, 'label', 'NAME', shown='NAME')}",
                )
            layout = read_layout(features, config, kept, notes, need_tokens=False)
            groups, layout = read_groups(features, config, layout, label, notes)
            texts = read_texts(features, kept, bool(config.lexical), notes)
        y = values[kept]
        folds = make_plan(y, layout.kept_split, int(config.folds), int(config.seed), groups)
        inputs = RegressionInputs(
            config.allow_partial,
            kept,
            y,
            control_targets(y, config),
            folds,
            label,
            tuple(float(a) for a in config.alphas),
            int(config.seed),
            int(config.n_bootstrap),
            JOB_THREADS,
            ev.Scoring(plan.metric),
        )
        specs = [spec.name for spec in layout.specs]
        plan = plan.resolved(label, classifiers, layout.poolings, list(layout.sites), specs, folds, y=y)
        return cls(plan, layout, inputs, texts, int((~np.isfinite(values)).sum()))

    @property
    def solves_logistic(self) -> bool:
        return False  # ridge and the MLP head run on the CPU

    def plan_jobs(self) -> list[tuple[Any, ...]]:
        """One job per source, site, layer spec and pooling; stack is a classification meta-probe."""
        jobs = []
        for source, source_path in sources(self.plan.config, self.plan.path):
            for site, (site_specs, site_poolings) in self.layout.sites.items():
                for spec in site_specs:
                    if spec.kind == "stack":
                        continue
                    jobs += [
                        (FeatureJob(source, source_path, spec, pooling, list(self.classifiers), site), self.inputs)
                        for pooling in site_poolings
                    ]
        if any(spec.kind == "stack" for specs, _ in self.layout.sites.values() for spec in specs):
            self.plan.notes.append(
                "stack is a classification meta-probe: skipped for regression (use cat(...) to combine layers)"
            )
        return with_lexical_job(jobs, self.texts, "ridge", self.inputs)

    def _curve_jobs(self) -> list[FeatureJob]:
        """The learning curves' jobs (none without ``--train-sizes``): the probed or ``--curve-layers`` specs."""
        if self.plan.config.train_sizes is None:
            return []
        layers = self.plan.config.curve_layers
        config = self.plan.config
        specs = (
            parse_layer_specs(layers, self.layout.layers, config=config, name="curve_layers")
            if layers
            else self.layout.specs
        )
        return [
            FeatureJob("main", str(self.plan.path), spec, pooling, list(self.classifiers))
            for spec in specs
            if spec.kind != "stack"
            for pooling in self.layout.poolings
        ]

    @staticmethod
    def run_job(*job: Any) -> Any:
        """A static function, so that a worker is sent the job's arguments only (not the whole task)."""
        return run_job_or_lexical(run_probe_job, job)

    def build_result(self, outputs: list[Any], device: str | None, workers: int) -> ProbeResult:
        table, predictions = self._table(outputs)
        frame, predictions_for = prediction_table(table, predictions, self.inputs.y, self.layout.row_info)
        curve, sizes = self._curves(workers)
        meta = self._meta(workers, predictions_for, sizes, table)
        return ProbeResult(table, meta, notes=list(self.plan.notes), predictions=frame, curve=curve)

    def _table(self, outputs: list[Any]) -> tuple[pd.DataFrame, dict]:
        """The sorted results table (best rows and significance marked) and each row's predictions."""
        config, inputs, layout = self.plan.config, self.inputs, self.layout
        outputs, lexical = take_lexical(outputs, self.plan.notes, self.inputs)
        records = [mean_record(inputs), *([lexical] if lexical else [])]
        records += [record for output in outputs for record in output]
        oof = [record.pop("_predictions", None) for record in records]
        table = pd.DataFrame.from_records(records)
        specs = [spec.name for spec in layout.specs]
        order = row_order(table, list(layout.sites), self.classifiers, layout.poolings, specs)
        table, oof = table.iloc[order].reset_index(drop=True), [oof[i] for i in order]
        metric, test = inputs.scoring.metric, inputs.scoring.p_value
        table = mark_choices(table, metric, ("baseline", "lexical"))
        predictions = {index: values for index, values in enumerate(oof) if values is not None}
        n_bootstrap, seed = max(int(config.n_bootstrap), 1000), int(config.seed)
        table = rm.add_significance(table, predictions, inputs.plan, inputs.y, n_bootstrap, seed, metric, test)
        table = add_lexical_test(table, predictions, inputs.plan, inputs.y, n_bootstrap, seed, metric, p_value=test)
        table = table[REGRESSION_COLUMNS]
        table["layer"] = table["layer"].astype("Int64")
        return table, predictions

    def _curves(self, workers: int) -> tuple[pd.DataFrame | None, list[float] | None]:
        """The learning-curve table (``--train-sizes``) of the probed single and cat specs, or None."""
        config = self.plan.config
        if config.train_sizes is None:
            return None, None
        from ..analyses.curves import parse_train_sizes

        sizes = parse_train_sizes(config.train_sizes)
        jobs = self._curve_jobs()
        parts = run_jobs(run_curve_job, [(job, self.inputs, sizes) for job in jobs], min(workers, len(jobs)))
        return pd.DataFrame.from_records([row for part in parts for row in part], columns=CURVE_COLUMNS), sizes

    def _meta(self, workers: int, predictions_for: str, sizes: list[float] | None, table: pd.DataFrame) -> ProbeMeta:
        config, inputs, layout, y = self.plan.config, self.inputs, self.layout, self.inputs.y
        return ProbeMeta(
            **self.plan.meta_fields(workers),
            file=layout.file,
            target={"mean": float(y.mean()), "std": float(y.std()), "min": float(y.min()), "max": float(y.max())},
            n_rows=int(layout.n_rows),
            n_labelled=int(len(y)),
            n_missing_labels=int(layout.n_rows - len(y)),
            n_unlabelled=self.n_unlabelled,
            alphas=list(config.alphas),
            baseline_file=str(config.baseline) if config.baseline else None,
            predictions_for=predictions_for,
            mdl=False,
            train_sizes=sizes,
            pairs=baseline_meta(config, self.plan.path, layout.kept, y, inputs.plan, layout.specs, layout.poolings),
            lexical=lexical_meta(self.texts, "ridge", table),
            **choice_meta(table, self.plan.metric, predictions_for),
            rows_sha256=rows_sha256(layout.text_keys.__getitem__, y, inputs.plan),
        )

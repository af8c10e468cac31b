"""Classification probes of a sentence-level label: every classifier per layer spec, pooling and site,
beside the majority class, on the file's split or seeded stratified k-fold, with the control task
(permuted labels), paired significance tests between layers, the per-row predictions file and, when
asked, MDL codelengths and learning curves. Sentence pairs probe their SentEval feature and add the
cosine baseline (``tasks.pairs``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...options import spoken_value
from ...store import FeatureFile
from .. import evaluation as ev
from ..evaluation.significance import add_significance
from ..inputs import JOB_THREADS, TOKENS_POOLING, FeatureJob, run_jobs
from ..label_classes import Bins
from ..labels import split_note
from ..meta import ProbeMeta
from ..plan import ProbePlan
from ..results import COLUMNS, CURVE_COLUMNS, ProbeResult
from ..solvers.devices import solver_meta
from .base import choice_meta, mark_choices, row_order
from .classification_jobs import ClassificationInputs, majority_record, run_curve_job, run_probe_job
from .classification_table import check_predictions_choice, label_column, prediction_table
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
from .sentences import SentenceLayout, SentenceTask, SitePlan, control_targets, curve_sites, read_layout, sources
from .tested_rows import rows_sha256


def evaluation_plan(
    y: np.ndarray,
    layout: SentenceLayout,
    plan: ProbePlan,
    label: str,
    class_names: list[str],
    groups: ev.Groups | None = None,
) -> ev.Plan:
    """The outer folds of the run (the file's split, else stratified k-fold; by whole ``groups``), with its notes."""
    config, notes = plan.config, plan.notes
    split, kept = layout.split, layout.kept
    folds = ev.make_plan(y, layout.kept_split, int(config.folds), config.seed, class_names, label, groups)
    note = split_note(folds, split, kept) if split is not None else None
    if note is not None:
        notes.append(note)
    if split is not None and not folds.is_split:
        found = ", ".join(sorted(set(map(str, split[kept])))[:6])
        notes.append(
            f"the split column has no train and test rows to use (values: {found}); "
            f"cross-validating with {config.folds} folds instead"
        )
    scored = sum(len(test) for _, test in folds.folds)  # the test rows of a split; every row under cv
    warning = ev.few_scored_note(scored, folds.is_split, plan.metric)
    if warning is not None:
        notes.append(warning)
    return folds


@dataclass(frozen=True)
class ClassificationProbe(SentenceTask):
    """A sentence-level classification run, resolved against its features file."""

    plan: ProbePlan
    layout: SentenceLayout
    inputs: ClassificationInputs
    curve_sites: SitePlan  # the learning curves' specs and poolings per site (empty: no curves)
    texts: LexicalTexts | None = None  # the lexical baseline's texts (None: --no-lexical, or none stored)
    bins: Bins | None = None  # --bins' edges and the rows that drew them (None without --bins)
    n_unlabelled: int | None = None  # the stored rows without a label (ProbeMeta.n_unlabelled)

    @classmethod
    def from_plan(cls, plan: ProbePlan) -> ClassificationProbe:
        config, notes, classifiers = plan.config, plan.notes, list(plan.classifiers)
        with FeatureFile(plan.path, allow_partial=plan.allow_partial) as features:
            column, bins, n_unlabelled = label_column(features, config, notes, plan.label)
            if "ridge" in classifiers:
                raise InputError(
                    f"ridge is a regression probe, and '{column.name}' is probed as classes",
                    f"use {spoken_value(config, 'classifiers', 'logreg')}, or "
                    f"{spoken_value(config, 'task', 'regression')} for a numeric label",
                )
            kept = np.flatnonzero(column.codes >= 0)
            y = column.codes[kept].astype(np.int64)
            ev.check_labels(y, column.names, column.name, plan.path)
            layout = read_layout(features, config, kept, notes, "attn" in classifiers)
            groups, layout = read_groups(features, config, layout, column.name, notes)
            curves = curve_sites(features, config, layout.sites) if config.train_sizes is not None else {}
            texts = read_texts(features, kept, bool(config.lexical), notes)
        check_predictions_choice(config.predictions, layout.poolings, classifiers)
        # Present classes only, renumbered 0..k-1, so that metrics and probes never see empty classes.
        present = np.unique(y)
        class_names = [column.names[code] for code in present]
        y = np.searchsorted(present, y)
        folds = evaluation_plan(y, layout, plan, column.name, class_names, groups)
        inputs = ClassificationInputs(
            config.allow_partial,
            kept,
            y,
            control_targets(y, config),
            folds,
            len(class_names),
            column.name,
            class_names,
            tuple(float(c) for c in config.cs),
            bool(config.balanced),
            int(config.seed),
            int(config.n_bootstrap),
            JOB_THREADS,
            bool(config.mdl),
            ev.Scoring(plan.metric, len(class_names)),
        )
        specs = [spec.name for spec in layout.specs]
        plan = plan.resolved(
            column.name, classifiers, layout.poolings, list(layout.sites), specs, folds, y=y, names=class_names
        )
        return cls(plan, layout, inputs, curves, texts, bins, n_unlabelled)

    @property
    def solves_logistic(self) -> bool:
        return "logreg" in self.plan.classifiers or bool(self.plan.config.mdl)

    def _pooled_classifiers(self) -> list[str]:
        return [name for name in self.plan.classifiers if name != "attn"]

    def plan_jobs(self) -> list[tuple[Any, ...]]:
        """One job per source, site, layer spec and pooling (the attn probe: per spec, on the tokens)."""
        classifiers, jobs = self.plan.classifiers, []
        for source, source_path in sources(self.plan.config, self.plan.path):
            for site, (site_specs, site_poolings) in self.layout.sites.items():
                for spec in site_specs:
                    usable = [n for n in self._pooled_classifiers() if not (spec.kind == "stack" and n == "mlp")]
                    if usable:
                        jobs += [
                            (FeatureJob(source, source_path, spec, p, usable, site), self.inputs) for p in site_poolings
                        ]
                    if "attn" in classifiers and spec.kind != "stack":
                        jobs.append(
                            (FeatureJob(source, source_path, spec, TOKENS_POOLING, ["attn"], site), self.inputs)
                        )
        if any(spec.kind == "stack" for spec in self.layout.specs) and ("mlp" in classifiers or "attn" in classifiers):
            self.plan.notes.append("stack combines linear probes only: it is skipped for mlp and attn")
        return with_lexical_job(jobs, self.texts, "logreg", self.inputs)

    @staticmethod
    def run_job(*job: Any) -> Any:
        """A static function, so that a worker is sent the job's arguments only (not the whole task)."""
        return run_job_or_lexical(run_probe_job, job)

    def build_result(self, outputs: list[Any], device: str | None, workers: int) -> ProbeResult:
        table, predictions = self._table(outputs)
        frame, predictions_for = prediction_table(
            table,
            predictions,
            self.plan.config.predictions,
            self.inputs.class_names,
            self.inputs.y,
            self.layout.row_info,
        )
        curve, sizes = self._curves(device, workers)
        meta = self._meta(device, workers, predictions_for, sizes)
        meta = replace(
            meta,
            lexical=lexical_meta(self.texts, "logreg", table),
            **choice_meta(table, self.plan.metric, predictions_for),
        )
        return ProbeResult(table, meta, notes=list(self.plan.notes), predictions=frame, curve=curve)

    def _table(self, outputs: list[Any]) -> tuple[pd.DataFrame, dict]:
        """The sorted results table (best rows and significance marked) and each row's predictions."""
        config, inputs = self.plan.config, self.inputs
        outputs, lexical = take_lexical(outputs, self.plan.notes, self.inputs)
        records = [majority_record(inputs), *([lexical] if lexical else [])]
        records += [record for output in outputs for record in output]
        oof = [record.pop("_predictions", None) for record in records]
        table = pd.DataFrame.from_records(records)
        poolings = [*self.layout.poolings, TOKENS_POOLING]
        specs = [spec.name for spec in self.layout.specs]
        order = row_order(table, list(self.layout.sites), list(self.plan.classifiers), poolings, specs)
        table, oof = table.iloc[order].reset_index(drop=True), [oof[i] for i in order]
        metric, test = inputs.scoring.metric, inputs.scoring.p_value
        table = mark_choices(table, metric, ("majority", "lexical"))
        predictions = {index: values for index, values in enumerate(oof) if values is not None}
        n_bootstrap, seed = max(int(config.n_bootstrap), 1000), int(config.seed)
        table = add_significance(
            table, predictions, inputs.plan, inputs.y, n_bootstrap, seed, metric=metric, p_value=test
        )
        table = add_lexical_test(table, predictions, inputs.plan, inputs.y, n_bootstrap, seed, metric, p_value=test)
        table = table[COLUMNS]
        table["layer"] = table["layer"].astype("Int64")
        return table, predictions

    def _curves(self, device: str | None, workers: int) -> tuple[pd.DataFrame | None, list[float] | None]:
        """The learning curves (``--train-sizes``) of the probed single and cat specs, or None."""
        if not self.curve_sites:
            return None, None
        from ..analyses.curves import parse_train_sizes

        sizes = parse_train_sizes(self.plan.config.train_sizes)
        jobs = self._curve_jobs()
        arguments = [(job, self.inputs, sizes) for job in jobs]
        parts = run_jobs(run_curve_job, arguments, min(workers, len(jobs)), device)
        return pd.DataFrame.from_records([row for part in parts for row in part], columns=CURVE_COLUMNS), sizes

    def _curve_jobs(self) -> list[FeatureJob]:
        """The learning curves' jobs (none without ``--train-sizes``)."""
        pooled, path = self._pooled_classifiers(), str(self.plan.path)
        jobs = [
            FeatureJob("main", path, spec, pooling, list(pooled), site)
            for site, (site_specs, site_poolings) in self.curve_sites.items()
            for spec in site_specs
            for pooling in site_poolings
            if pooled
        ]
        jobs += [
            FeatureJob("main", path, spec, TOKENS_POOLING, ["attn"], site)
            for site, (site_specs, _) in self.curve_sites.items()
            for spec in site_specs
            if "attn" in self.plan.classifiers
        ]
        return jobs

    def _meta(self, device: str | None, workers: int, predictions_for: str, sizes: list[float] | None) -> ProbeMeta:
        config, inputs, layout = self.plan.config, self.inputs, self.layout
        counts = np.bincount(inputs.y, minlength=inputs.n_classes)
        return ProbeMeta(
            **self.plan.meta_fields(workers),
            file=layout.file,
            label_names=inputs.class_names,
            class_counts={name: int(count) for name, count in zip(inputs.class_names, counts, strict=False)},
            bins=None if self.bins is None else self.bins.to_dict(),
            n_rows=int(layout.n_rows),
            n_labelled=int(len(inputs.y)),
            n_missing_labels=int(layout.n_rows - len(inputs.y)),
            n_unlabelled=self.n_unlabelled,
            cs=list(config.cs),
            balanced=bool(config.balanced),
            baseline_file=str(Path(config.baseline).resolve()) if config.baseline else None,
            baseline_model=layout.baseline_model if config.baseline else None,
            solver=solver_meta(device),
            predictions_for=predictions_for,
            pairs=baseline_meta(
                config,
                self.plan.path,
                layout.kept,
                inputs.y,
                inputs.plan,
                layout.specs,
                layout.poolings,
                inputs.n_classes,
            ),
            mdl=bool(config.mdl),
            train_sizes=sizes,
            rows_sha256=rows_sha256(
                layout.text_keys.__getitem__, np.asarray(inputs.class_names)[inputs.y], inputs.plan
            ),
        )

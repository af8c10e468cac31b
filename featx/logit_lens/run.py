"""``featx.lens``: extract the answering position's states of every layer, probe them, read them through the
model's own head, and put the lens's accuracy and logit difference beside the probe's, on the same rows.

Rows and split are the probe's: the labelled rows, scored on the test rows of the corpus's train/test split,
else out of fold under seeded stratified k-fold (then every labelled row is scored, and the probe is trained
on the other folds). The lens is trained on nothing; it is scored on exactly the rows the probe is scored on.
Intervals: the lens's are a percentile bootstrap of the scored rows (seeded); the probe's are featx probe's
own (a bootstrap of a split's test rows, Student-t over folds under k-fold).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..options import keywords_of
from .config import LensConfig
from .preflight import AT_POOLING, Prepared, prepare

COLUMNS = [
    "layer",
    "lens_accuracy",
    "lens_accuracy_low",
    "lens_accuracy_high",
    "logit_diff",
    "logit_diff_low",
    "logit_diff_high",
    "probe_accuracy",
    "probe_accuracy_low",
    "probe_accuracy_high",
    "majority_accuracy",
    "majority_accuracy_low",
    "majority_accuracy_high",
    "n_scored",
    "n_answers",
    "evaluation",
]


@dataclass
class LensResult:
    """A lens run: the per-layer ``table`` (``COLUMNS``), how classes map to answers, the files written."""

    table: pd.DataFrame
    mapping: str
    features: Path
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model: str = ""

    def format(self) -> str:
        """The table as the command prints it."""
        lines = [f"answers: {self.mapping}", "layer  lens acc [95% CI]      logit diff [95% CI]     probe acc [95% CI]"]
        for row in self.table.itertuples():
            lines.append(
                f"{row.layer:>5}  {row.lens_accuracy:.3f} [{row.lens_accuracy_low:.3f}, {row.lens_accuracy_high:.3f}]"
                f"  {row.logit_diff:+7.3f} [{row.logit_diff_low:+.3f}, {row.logit_diff_high:+.3f}]"
                f"  {row.probe_accuracy:.3f} [{row.probe_accuracy_low:.3f}, {row.probe_accuracy_high:.3f}]"
            )
        first = self.table.iloc[0]
        lines.append(
            f"majority class (the training rows' most common label, scored on the same rows): "
            f"{first.majority_accuracy:.3f} [{first.majority_accuracy_low:.3f}, {first.majority_accuracy_high:.3f}]"
        )
        lines.append(f"scored rows: {first.n_scored} ({first.evaluation}); both curves on the same rows")
        return "\n".join(lines + self.notes)


def lens_logits(features: Path, prepared: Prepared, rows: np.ndarray | None = None) -> dict[int, np.ndarray]:
    """Per stored layer: the answer tokens' lens logits ``(rows, answers)`` at the answering position."""
    import torch

    from ..store import FeatureFile

    out = {}
    with FeatureFile(features) as stored:
        for layer in stored.layers:
            states = stored.features(AT_POOLING, layer, dtype=np.float32)
            states = states if rows is None else states[rows]
            last = not prepared.head.masked and layer == prepared.n_layers
            with torch.no_grad():
                logits = prepared.head.logits(torch.from_numpy(states), last, prepared.token_ids)
            out[int(layer)] = logits.numpy().astype(np.float64)
    return out


def _bootstrap(values: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for start in range(0, n_boot, 100):  # 100 resamples at a time: memory stays rows x 100
        count = min(100, n_boot - start)
        means[start : start + count] = values[rng.integers(0, len(values), (count, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def score_layer(logits: np.ndarray, y: np.ndarray, class_answers: list[int], n_boot: int, seed: int) -> dict:
    """Accuracy of the arg-max answer and the mean logit difference (correct minus best other), with
    bootstrap intervals; ``logits`` columns in answer order, ``y`` class codes."""
    by_class = logits[:, class_answers]
    correct = by_class[np.arange(len(y)), y]
    others = by_class.copy()
    others[np.arange(len(y)), y] = -np.inf
    diff = correct - others.max(axis=1)
    hits = (by_class.argmax(axis=1) == y).astype(np.float64)
    acc_low, acc_high = _bootstrap(hits, n_boot, seed)
    diff_low, diff_high = _bootstrap(diff, n_boot, seed)
    return {
        "lens_accuracy": float(hits.mean()),
        "lens_accuracy_low": acc_low,
        "lens_accuracy_high": acc_high,
        "logit_diff": float(diff.mean()),
        "logit_diff_low": diff_low,
        "logit_diff_high": diff_high,
    }


def _probe(config: LensConfig, features: Path) -> tuple[Any, pd.DataFrame, dict[str, float]]:
    """featx's logreg probe of the label at the answering position, every stored layer, no files written; and
    its majority-class baseline (on the same scored rows), the line a lens accuracy must clear."""
    from ..probing import ProbeConfig, resolve_plan, run_task, task_for

    probe_config = ProbeConfig(
        features,
        label=config.label,
        layers="all",
        poolings=AT_POOLING,
        classifiers="logreg",
        task="classification",
        folds=config.folds,
        seed=config.seed,
        n_bootstrap=config.n_bootstrap,  # the probe's and the majority's intervals take the lens's resamples
        jobs=config.jobs,
        control=False,
        lexical=False,
        write=False,
        has_group=False,  # featx lens has no --group: its notes name none
        progress=config.progress,  # featx lens -q: no bar over its probe's layers either
    )
    task = task_for(resolve_plan(probe_config))
    table = run_task(task).table
    rows = table[(table["classifier"] == "logreg") & (table["kind"] == "single") & (table["pooling"] == AT_POOLING)]
    majority = table[table["kind"] == "majority"].iloc[0]
    baseline = {f"majority_{key}": float(majority[key]) for key in ("accuracy", "accuracy_low", "accuracy_high")}
    return task, rows.set_index(rows["layer"].astype(int)), baseline


def lens_table(config: LensConfig, prepared: Prepared, features: Path) -> tuple[pd.DataFrame, list[str]]:
    """The per-layer table, the lens and the probe scored on the probe's test rows, and the probe's notes."""
    task, probe_rows, majority = _probe(config, features)
    inputs = task.inputs
    scored = np.concatenate([test for _, test in inputs.plan.folds])  # indices into the kept rows
    answer_of = dict(zip(prepared.class_names, prepared.class_answers, strict=True))
    answers_of_class = [answer_of[name] for name in inputs.class_names]  # the corpus's classes, checked before
    logits = lens_logits(features, prepared, np.asarray(inputs.kept)[scored])
    records = []
    for layer, values in logits.items():
        scores = score_layer(values, inputs.y[scored], answers_of_class, config.n_bootstrap, config.seed)
        record = {"layer": layer, **scores}
        probe = probe_rows.loc[layer] if layer in probe_rows.index else None
        for key in ("accuracy", "accuracy_low", "accuracy_high"):
            record[f"probe_{key}"] = float(probe[key]) if probe is not None else float("nan")
        record.update(majority)
        record.update(n_scored=len(scored), n_answers=len(prepared.token_ids), evaluation=inputs.plan.evaluation)
        records.append(record)
    return pd.DataFrame.from_records(records, columns=COLUMNS), list(task.plan.notes)


FIGURE_FORMATS = ("png", "svg")  # what the command's figure is written as (featx.report.save_lens_figure)


def _beside(prefix: Path, suffix: str) -> Path:
    return prefix.with_name(prefix.name + suffix)


def check_outputs(config: LensConfig) -> None:
    """Before the first forward pass: what the run writes at its prefix (the table, the JSON record and, unless
    ``figure`` is off, the figure) replaces neither the corpus nor anything but an earlier lens run's own files,
    which it writes again (``featx.own_files``); the features file has its own rule (``overwrite``)."""
    from ..own_files import is_featx_figure, json_of, refuse_foreign, table_with
    from ..safe_files import refuse_inputs

    table, record = _beside(config.prefix(), ".csv"), _beside(config.prefix(), ".json")
    figures = [table.with_suffix(f".{extension}") for extension in FIGURE_FORMATS] if config.figure else []
    refuse_inputs([table, record, *figures], [config.corpus])
    refuse_foreign([table], "lens table", table_with(",".join(COLUMNS[:2]) + ","))
    refuse_foreign([record], "lens record", json_of("lens"))
    refuse_foreign(figures, "figure", is_featx_figure)


@keywords_of(LensConfig)
def lens(config: LensConfig | str | Path | None = None, **options: Any) -> LensResult:
    """The logit lens beside the probe: ``featx.lens("reviews.csv", template="Review: {text}\\nSentiment:",
    answers=" good, bad", label="sentiment", model="gpt2")``. Every check first (the head, the answers'
    tokens, the answering position, the label), then one extraction, the probe and the lens."""
    from ..extraction import extract, make_config, quick_up_to_date
    from ..io import write_csv

    config = LensConfig.build(config, **options)
    check_outputs(config)
    prepared = prepare(config)
    extraction = make_config(config.corpus, **prepared.extract_options)
    summary = quick_up_to_date(extraction) or extract(extraction)  # the same request again: the file as it is
    features = Path(summary.output)
    table, notes = lens_table(config, prepared, features)
    prefix = config.prefix()
    mapping = prepared.answers.describe(prepared.class_names, config.label)
    notes = [*summary.notes, *notes]
    files = [write_csv(table, _beside(prefix, ".csv"))]  # the figure: featx.report.save_lens_figure
    files.append(_write_json(table, _meta(config, prepared, features, mapping, notes), prefix))
    return LensResult(table, mapping, features, files, notes, model=prepared.model)


def _meta(config: LensConfig, prepared: Prepared, features: Path, mapping: str, notes: list[str]) -> dict[str, Any]:
    """What a lens run was, as the other commands' results record it: the model, the rows, the options that change
    its figures (the answers, the layers, the folds, the seed, the bootstrap's resamples)."""
    from .._version import __version__

    return {
        "command": "lens",
        "featx_version": __version__,
        "features_file": str(features.resolve()),
        "model": prepared.model,
        "corpus": str(Path(config.corpus).resolve()),
        "label": config.label,
        "template": config.template,
        "chat_template": config.chat_template,
        "answers": mapping,
        "layers": config.layers,
        "folds": config.folds,
        "seed": config.seed,
        "n_bootstrap": config.n_bootstrap,
        "notes": notes,
    }


def _write_json(table: pd.DataFrame, meta: dict[str, Any], prefix: Path) -> Path:
    """``PREFIX.json`` beside the CSV: ``{"meta": ..., "results": one record a layer}`` (NaN as null)."""
    import json

    from ..safe_files import atomic_write_text

    path = _beside(prefix, ".json")
    payload = {"meta": meta, "results": json.loads(table.to_json(orient="records"))}
    atomic_write_text(path, json.dumps(payload, indent=1, allow_nan=False))
    return path

"""The probes of ``featx intervene``: per label and stored layer at or above the edit, a logreg probe trained on the
training rows and scored on the test rows (the file's split; its folds without one, as ``featx probe``) of the
original vectors (before), the edited pass's (after) and the random control's, with 95% intervals and paired tests
of after against before and after against the control (``featx.probing``'s own evaluation; with ``--group``, the
folds, the C holdouts and the resamples by whole groups)."""

from __future__ import annotations

import numpy as np

from ..store import open_features

PROBE_FIELDS = ("before", "after", "control")


def _fold_results(task, X: np.ndarray, seed: int) -> list:
    from ..probing import DEFAULT_CS, run_linear_tasks

    results = []
    for index, ((train, test), dev) in enumerate(zip(task.plan.folds, task.plan.dev, strict=False)):
        fold_seed = seed + 1000 * index
        results.append(
            run_linear_tasks(
                "logreg", X, [task.y], train, test, dev, task.n_classes, DEFAULT_CS, False, fold_seed, task.plan.groups
            )[0]
        )
    return results


def _predictions(task, folds: list) -> np.ndarray:
    out = np.full(len(task.y), -1)
    for (_, test), result in zip(task.plan.folds, folds, strict=False):
        out[test] = result.predictions
    return out


def _summary(task, folds, n_boot: int, seed: int) -> tuple[float, float, float]:
    from ..probing import summarise

    row = summarise(task.plan, task.y, folds, task.n_classes, n_boot, seed)
    return row["accuracy"], row["accuracy_low"], row["accuracy_high"]


def label_rows(plan, name: str, role: str, layers, edited, control) -> list[dict]:
    """One record per layer: the label's probe accuracy before, after and after the control, with intervals and
    the unadjusted p-values (``p_after``: after vs before; ``p_control``: after vs the control)."""
    from ..probing import load_task, paired_p_value

    config = plan.config
    n_boot, seed = config.n_bootstrap, config.seed
    records = []
    with open_features(plan.features) as features:
        task = load_task(features, name, 5, seed, config.group)
        stored = {layer: features.features(plan.pooling, layer)[task.kept] for layer in layers}
    for layer in layers:
        matrices = {
            "before": stored[layer],
            "after": edited.array(layer, plan.pooling)[task.kept],
            "control": control.array(layer, plan.pooling)[task.kept],
        }
        folds = {key: _fold_results(task, X, seed) for key, X in matrices.items()}
        preds = {key: _predictions(task, value) for key, value in folds.items()}
        record: dict = {"kind": "probe", "name": name, "role": role, "layer": layer}
        record["majority"] = _summary(task, task.majority(), n_boot, seed)[0]
        for key in PROBE_FIELDS:
            record[key], record[f"{key}_low"], record[f"{key}_high"] = _summary(task, folds[key], n_boot, seed)
        boots = max(n_boot, 1000)
        record["p_after"] = paired_p_value(task.plan, task.y, preds["before"], preds["after"], boots, seed)
        record["p_control"] = paired_p_value(task.plan, task.y, preds["control"], preds["after"], boots, seed)
        records.append(record)
    return records


__all__ = ["PROBE_FIELDS", "label_rows"]

"""The probes of ``featx intervene``: per label and stored layer at or above the edit, a logreg probe trained on the
training rows and scored on the test rows (the file's split; its folds without one, as ``featx probe``) of the
original vectors (before), the edited pass's (after) and the random control's, with 95% intervals and paired tests
of after against before and after against the control (``featx.probing``'s own evaluation; with ``--group``, the
folds, the C holdouts and the resamples by whole groups). Each fold's after and control probes read the pass that
fold's eraser edited (``passes.py``): under cross-validation, one fitted on that fold's training rows only."""

from __future__ import annotations

import numpy as np

from ..store import open_features

PROBE_FIELDS = ("before", "after", "control")


def _fold_result(task, X: np.ndarray, index: int, seed: int):
    """Fold ``index`` of the task's plan: its logreg probe trained on the fold's training rows of ``X``."""
    from ..probing import DEFAULT_CS, run_linear_tasks

    (train, test), dev = task.plan.folds[index], task.plan.dev[index]
    fold_seed = seed + 1000 * index
    return run_linear_tasks(
        "logreg", X, [task.y], train, test, dev, task.n_classes, DEFAULT_CS, False, fold_seed, task.plan.groups
    )[0]


def _predictions(task, folds: list) -> np.ndarray:
    out = np.full(len(task.y), -1)
    for (_, test), result in zip(task.plan.folds, folds, strict=False):
        out[test] = result.predictions
    return out


def _summary(task, folds, n_boot: int, seed: int) -> tuple[float, float, float]:
    from ..probing import summarise

    row = summarise(task.plan, task.y, folds, task.n_classes, n_boot, seed)
    return row["accuracy"], row["accuracy_low"], row["accuracy_high"]


class LabelProbes:
    """One label's probes at the stored ``layers`` from an edit up: before (the stored vectors) at once, after and
    control fold by fold as their passes run (``score``), then one record per layer (``records``)."""

    def __init__(self, plan, task, role: str, layers):
        self.plan, self.task, self.role, self.layers = plan, task, role, tuple(layers)
        n_folds, seed = len(task.plan.folds), plan.config.seed
        with open_features(plan.features) as features:
            stored = {layer: features.features(plan.pooling, layer)[task.kept] for layer in self.layers}
        self.folds: dict[str, dict[int, list]] = {
            key: {layer: [None] * n_folds for layer in self.layers} for key in PROBE_FIELDS
        }
        for layer in self.layers:
            self.folds["before"][layer] = [_fold_result(task, stored[layer], k, seed) for k in range(n_folds)]

    def score(self, key: str, run, folds) -> None:
        """The ``key`` (after, control) probes of ``folds`` on the pass ``run`` (its ``Embeddings``)."""
        for layer in self.layers:
            X = run.array(layer, self.plan.pooling)[self.task.kept]
            for index in folds:
                self.folds[key][layer][index] = _fold_result(self.task, X, index, self.plan.config.seed)

    def records(self) -> list[dict]:
        """One record per layer: the label's probe accuracy before, after and after the control, with intervals and
        the unadjusted p-values (``p_after``: after vs before; ``p_control``: after vs the control)."""
        from ..probing import paired_p_value

        task, config = self.task, self.plan.config
        n_boot, seed = config.n_bootstrap, config.seed
        records = []
        for layer in self.layers:
            folds = {key: self.folds[key][layer] for key in PROBE_FIELDS}
            if any(result is None for value in folds.values() for result in value):
                raise RuntimeError(f"a fold of '{task.label}' at layer {layer} was not scored on any pass")
            preds = {key: _predictions(task, value) for key, value in folds.items()}
            record: dict = {"kind": "probe", "name": task.label, "role": self.role, "layer": layer}
            record["majority"] = _summary(task, task.majority(), n_boot, seed)[0]
            for key in PROBE_FIELDS:
                record[key], record[f"{key}_low"], record[f"{key}_high"] = _summary(task, folds[key], n_boot, seed)
            boots = max(n_boot, 1000)
            record["p_after"] = paired_p_value(task.plan, task.y, preds["before"], preds["after"], boots, seed)
            record["p_control"] = paired_p_value(task.plan, task.y, preds["control"], preds["after"], boots, seed)
            records.append(record)
        return records


__all__ = ["PROBE_FIELDS", "LabelProbes"]

"""What an edit does to the model's outputs, each against the unedited pass of the same rows: the drift of the last
stored layer (the mean cosine of edited to unedited vectors), the bundle's predictions (the share that flip and its
accuracy on the test rows) and the language-modelling loss (``loss.py``). Each reads the measured rows, every one on
the pass of an edit (and its control) fitted without it (``HeldOut``; which rows and edits: ``passes.py``)."""

from __future__ import annotations

import math

import numpy as np

from ..store import open_features
from .bundle_checks import split_test_rows
from .forward import bundle_matrix
from .stats import cosines, mean_interval, share_interval


class HeldOut:
    """The pooled arrays the output rows read (``needs``: (layer, pooling) pairs) of the file rows ``rows``, each
    row's taken from the pass that reads it (``take``)."""

    def __init__(self, rows: np.ndarray, needs):
        self.rows, self.needs = np.asarray(rows), tuple(needs)
        self.arrays: dict[tuple, np.ndarray] = {}

    def take(self, run, rows) -> HeldOut:
        """The rows ``rows`` (file rows, among ``self.rows``) of the pass ``run`` (its ``Embeddings``)."""
        where = np.searchsorted(self.rows, rows)
        for need in self.needs:
            values = np.asarray(run.array(*need))[rows]
            if need not in self.arrays:
                self.arrays[need] = np.zeros((len(self.rows), *values.shape[1:]), values.dtype)
            self.arrays[need][where] = values
        return self

    def array(self, layer: int, pooling: str) -> np.ndarray:
        return self.arrays[(layer, pooling)]


def output_needs(plan) -> list[tuple]:
    """The (layer, pooling) arrays the drift and bundle rows read."""
    needs = [(max(plan.stored_layers), plan.pooling)]
    if plan.bundle is not None:
        needs += [(layer, plan.bundle.pooling) for layer in plan.bundle.layers]
    return list(dict.fromkeys(needs))


def _groups(plan, rows: np.ndarray):
    return None if plan.row_groups is None else plan.row_groups[rows]


def output_record(name: str, role: str, layer: int, values: dict) -> dict:
    record: dict = {"kind": "output", "name": name, "role": role, "layer": layer, "majority": math.nan}
    for key in ("before", "after", "control"):
        record[key], record[f"{key}_low"], record[f"{key}_high"] = values.get(key, (math.nan,) * 3)
    record["p_after"] = record["p_control"] = math.nan
    return record


def drift_row(plan, base: HeldOut, edited: HeldOut, control: HeldOut) -> dict:
    """The mean cosine of the last stored layer's edited (and control) vectors to the unedited ones over the
    measured rows (with ``--group``, its interval by whole groups)."""
    top = max(plan.stored_layers)
    reference = base.array(top, plan.pooling)
    values = {"before": (1.0, 1.0, 1.0)}
    for key, run in (("after", edited), ("control", control)):
        values[key] = mean_interval(cosines(reference, run.array(top, plan.pooling)), _groups(plan, base.rows))
    return output_record("last-layer cosine", "drift", top, values)


def _test_rows(plan, bundle) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows the bundle's accuracy is read on (the test split, else every labelled row) and their classes."""
    with open_features(plan.features) as features:
        if bundle.label not in features.label_columns:
            return None
        codes, names = features.labels(bundle.label), features.label_names(bundle.label)
        test = split_test_rows(features) if features.split is not None else None
    rows = np.flatnonzero(codes >= 0)
    if test is not None:
        rows = np.intersect1d(rows, test)  # the test split's, read as probe reads it (case-blind)
    truth = np.asarray(names, dtype=object)[codes[rows]]
    return rows, truth


def bundle_rows(plan, base: HeldOut, edited: HeldOut, control: HeldOut) -> list[dict]:
    """The share of the bundle's predictions that flip (after, control) over the measured rows and its accuracy
    on the test rows among them, before and after (with ``--group``, their intervals by whole groups)."""
    bundle = plan.bundle
    if bundle is None:
        return []
    layer = max(bundle.layers)
    predicted = {
        key: bundle.predict_features(bundle_matrix(run, bundle))
        for key, run in (("before", base), ("after", edited), ("control", control))
    }
    flips = {"before": (0.0, 0.0, 0.0)}
    for key in ("after", "control"):
        flips[key] = share_interval(predicted[key] != predicted["before"], groups=_groups(plan, base.rows))
    rows = [output_record(f"{bundle.label} bundle: flipped", "bundle", layer, flips)]
    found = _test_rows(plan, bundle) if bundle.classes is not None else None
    if found is not None:
        found = _measured_test(base.rows, *found)
    if found is not None and len(found[0]):
        test, truth = found
        groups = _groups(plan, base.rows[test])
        accuracy = {
            key: share_interval(np.asarray(value)[test] == truth, groups=groups) for key, value in predicted.items()
        }
        rows.append(output_record(f"{bundle.label} bundle: accuracy", "bundle", layer, accuracy))
    return rows


def _measured_test(rows: np.ndarray, test: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The test rows among the measured ``rows`` (as positions in them) and their classes."""
    kept = np.isin(test, rows)
    return np.searchsorted(rows, test[kept]), truth[kept]


def reproduction_note(plan, base) -> str | None:
    """A note when the unedited pass does not give back the stored vectors (another device or dtype, a changed
    library): the before column is read from the file, after and control from this run's passes."""
    top = max(plan.stored_layers)
    with open_features(plan.features) as features:
        stored = features.features(plan.pooling, top)
        tolerance = 1e-2 if str(features.attrs.get("store_dtype")) in ("float16", "bfloat16") else 1e-4
    fresh = base.array(top, plan.pooling)
    scale = float(np.abs(stored).max()) or 1.0
    gap = float(np.abs(fresh - stored).max()) / scale
    if gap <= tolerance:
        return None
    return (
        f"the unedited pass differs from the stored layer {top} by up to {gap:.2g} of its largest value (another "
        "device, dtype or library version?): before is read from the file, after and control from this run"
    )


__all__ = ["HeldOut", "bundle_rows", "drift_row", "output_needs", "output_record", "reproduction_note"]

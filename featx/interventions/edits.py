"""The edits ``featx intervene`` runs, as ``featx.extraction.EditMap``s (the arithmetic the forward pass's hooks
apply): the eraser of the label fitted on given stored rows (featx erase's LEACE or INLP; which rows: ``passes.py``),
a bundle's span (``project``, ``mean``, through ``featx extract --intervene``'s own resolution), the random control
of the same rank (seeded), and the steering directions (the bundle's at the edited layer when it reads it, else the
stored training rows' class-mean difference) with a random direction of equal norm."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..store import open_features
from .plan import InterventionPlan


def model_info(plan: InterventionPlan):
    from ..extraction import ModelInfo

    p = plan.provenance
    return ModelInfo(p.model, p.model_sha256, p.hidden_size, p.n_layers, dict(plan.site_widths or {}))


def _at(plan: InterventionPlan, layer: int) -> str:
    """``L``, or ``L:SITE`` with ``--site``: where an edit spec applies."""
    return f"{layer}:{plan.config.site}" if plan.config.site else str(layer)


def stored(features, plan: InterventionPlan, layer: int) -> np.ndarray:
    """The stored vectors the edit fits on: of layer ``layer``, or of ``--site`` in it."""
    return features.features(plan.pooling, layer, site=plan.config.site or "hidden")


def _identity(kind: str, layer: int, d: int, shift: np.ndarray | None = None, site: str | None = None):
    from ..extraction import EditMap, Intervention

    empty = np.zeros((d, 0))
    return EditMap(
        Intervention(kind, layer, site=site),
        np.zeros(d),
        empty,
        empty.T.copy(),
        np.zeros(d) if shift is None else shift,
    )


def erase_map(plan: InterventionPlan, layer: int, X: np.ndarray, y: np.ndarray, n_classes: int, groups=None):
    """The eraser (``--method``) of the label's class codes ``y`` fitted on the stored rows ``X`` of ``layer``, as an
    ``EditMap``; ``groups`` (``--group``): INLP's holdout takes whole groups. No rows: the identity."""
    from ..extraction import EditMap, Intervention
    from ..probing import fit_eraser

    config = plan.config
    if not len(y):
        return _identity("erase", layer, X.shape[1], site=config.site)
    eraser = fit_eraser(config.method, X, y, n_classes, 50, config.seed, groups)
    return EditMap(
        Intervention("erase", layer, site=config.site),
        eraser.mean,
        eraser.left,
        eraser.right,
        np.zeros(len(eraser.mean)),
    )


def edit_map(plan: InterventionPlan, layer: int):
    """The bundle's span at ``layer`` (``--edit project`` or ``mean``); ``--edit erase``'s erasers are fitted in
    ``passes.py`` (``erase_map`` on each fold's rows and on the training rows)."""
    from ..extraction import parse_intervention, resolve_edits

    spec = f"{plan.config.edit}:{plan.config.bundle}@{layer}"
    return resolve_edits((parse_intervention(spec),), model_info(plan))[0]


def control_map(plan: InterventionPlan, layer: int, rank: int):
    """``random:RANK@L`` with the run's seed (the identity for a rank-0 edit)."""
    from ..extraction import parse_intervention, resolve_edits

    spec = parse_intervention(f"random:{max(rank, 1)}@{_at(plan, layer)}", plan.config.seed)
    if rank == 0:
        return _identity("random", layer, model_info(plan).width(spec), site=plan.config.site)
    return resolve_edits((spec,), model_info(plan))[0]


def _class_mean_direction(plan: InterventionPlan, layer: int, toward: str) -> np.ndarray:
    from ..probing import load_task

    with open_features(plan.features) as features:
        if plan.label not in features.label_columns:
            raise InputError(
                f"--edit steer at layer {layer}: the bundle does not read it and {plan.features.name} has no "
                f"'{plan.label}' column to take the class-mean direction from",
                "steer at a layer the bundle reads, or give a file with the bundle's label column",
            )
        task = load_task(features, plan.label, 5, plan.config.seed)
        rows = task.training_rows()
        X = stored(features, plan, layer)[task.kept[rows]].astype(np.float64)
    if toward not in task.class_names:
        raise InputError(
            f"--toward {toward}: no training row of '{plan.label}' has that class", "steer toward a class with rows"
        )
    inside = task.y[rows] == task.class_names.index(toward)
    return X[inside].mean(axis=0) - X[~inside].mean(axis=0)


def steering_directions(plan: InterventionPlan) -> tuple[np.ndarray, np.ndarray, str]:
    """The unit direction toward ``--toward`` at the edited layer (the bundle's where it reads that layer, else the
    training rows' class-mean difference), a seeded random unit direction, and where the first came from."""
    from ..extraction import parse_intervention, resolve_edits

    layer, toward, bundle = plan.at[0], str(plan.config.toward), plan.bundle
    if bundle is not None and layer in bundle.layers and bundle.spec.kind != "stack" and not plan.config.site:
        spec = f"steer:{plan.config.bundle}:{toward}:1@{layer}"  # alpha 1: the shift is the unit direction
        vector = resolve_edits((parse_intervention(spec),), model_info(plan))[0].shift
        source = f"the bundle's direction toward {toward} at layer {layer}"
    else:
        vector = _class_mean_direction(plan, layer, toward)
        where = f"layer {layer}" + (f"'s {plan.config.site}" if plan.config.site else "")
        source = f"the class-mean difference ({toward} minus the rest) of the training rows at {where}"
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        raise InputError(f"--toward {toward}: the direction at layer {layer} is zero", "steer at another layer")
    random = np.random.default_rng(plan.config.seed).standard_normal(len(vector))
    return vector / norm, random / np.linalg.norm(random), source


def steer_map(plan: InterventionPlan, direction: np.ndarray, alpha: float):
    return _identity("steer", plan.at[0], len(direction), shift=alpha * direction, site=plan.config.site)


def run_steered(plan: InterventionPlan, forward, direction: np.ndarray, alpha: float, config=None):
    """``forward.run`` with ``alpha`` times the unit ``direction`` added at the edited layer; an alpha too large for
    the model's arithmetic (every state above the edit inf or NaN) is one line naming it, not a storage error."""
    from ..errors import NonFiniteError

    try:
        return forward.run((steer_map(plan, direction, alpha),), config)
    except NonFiniteError:
        raise InputError(
            f"--edit steer: steering toward {plan.config.toward} at layer {plan.at[0]} with alpha {alpha:g} made the "
            "model's states inf or NaN (more than its arithmetic can carry)",
            "give smaller --alphas: the unedited pass is finite",
        ) from None


__all__ = [
    "control_map",
    "edit_map",
    "erase_map",
    "model_info",
    "run_steered",
    "steer_map",
    "steering_directions",
    "stored",
]

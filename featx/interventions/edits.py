"""The edits ``featx intervene`` runs, as ``featx.extraction.EditMap``s (the arithmetic the forward pass's hooks
apply): the eraser of the label fitted on given stored rows (featx erase's LEACE or INLP; which rows: ``passes.py``),
a bundle's span (``project``, ``mean``, through ``featx extract --intervene``'s own resolution), the random control
of the same rank and centring (seeded), the bundle's steering direction and the steering edit itself (which rows
each steering direction is computed from and steers: ``steer_rows.py``)."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .config import said
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


def control_map(plan: InterventionPlan, layer: int, edit):
    """The random control of ``edit`` (an ``EditMap``): ``random:RANK@L`` with the run's seed, RANK the directions
    the edit removes, centred on the edit's own mean (an eraser's: the mean of the rows it was fitted on; the
    bundle's training mean for ``--edit mean``; zero, uncentred, for ``--edit project``), so that it moves the
    states as an edit of that rank and centring does. The identity for a rank-0 edit."""
    from dataclasses import replace

    from ..extraction import parse_intervention, resolve_edits

    rank = int(edit.left.shape[1])
    spec = parse_intervention(f"random:{max(rank, 1)}@{_at(plan, layer)}", plan.config.seed)
    if rank == 0:
        return _identity("random", layer, model_info(plan).width(spec), site=plan.config.site)
    return replace(resolve_edits((spec,), model_info(plan))[0], mean=np.asarray(edit.mean, np.float64))


def bundle_direction(plan: InterventionPlan) -> np.ndarray:
    """The bundle's direction toward ``--toward`` at the edited layer (where it reads it: ``steer_rows.py``)."""
    from ..extraction import parse_intervention, resolve_edits

    spec = f"steer:{plan.config.bundle}:{plan.config.toward}:1@{plan.at[0]}"  # alpha 1: the shift is the direction
    return resolve_edits((parse_intervention(spec),), model_info(plan))[0].shift


def steer_map(plan: InterventionPlan, direction: np.ndarray, alpha: float):
    return _identity("steer", plan.at[0], len(direction), shift=alpha * direction, site=plan.config.site)


def run_steered(plan: InterventionPlan, forward, direction: np.ndarray, alpha: float, config=None, rows=None):
    """``forward.run`` (of the file ``rows``, default every row) with ``alpha`` times the unit ``direction`` added at
    the edited layer; an alpha too large for the model's arithmetic (every state above the edit inf or NaN) is one
    line naming it, not a storage error."""
    from ..errors import NonFiniteError

    try:
        return forward.run((steer_map(plan, direction, alpha),), config, rows)
    except NonFiniteError:
        raise InputError(
            f"{said('edit', 'steer')}: steering toward {plan.config.toward} at layer {plan.at[0]} with alpha "
            f"{alpha:g} made the model's states inf or NaN (more than its arithmetic can carry)",
            "give smaller --alphas: the unedited pass is finite",
        ) from None


__all__ = [
    "bundle_direction",
    "control_map",
    "edit_map",
    "erase_map",
    "model_info",
    "run_steered",
    "steer_map",
    "stored",
]

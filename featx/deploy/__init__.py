"""Deployed probes: ``fit`` (a probe trained on a features file, its layer and pooling chosen on the training
rows; of a sentence label, or of a word label with folds by sentence), the bundle it is saved as (``load``),
and ``predict`` over a corpus (a word probe: over every word of its sentences).

Modules: ``config`` (``FitConfig``, ``PredictConfig``), ``plan`` (``FitPlan``), ``rows`` (which rows train, val
and test, from the split), ``choose`` (the cross-validated choice), ``head`` (``Head``, the fitted arrays, and
``fit_head``), ``control`` (the control task beside fit's score), ``features`` (what a head reads), ``probe``
(``Probe``), ``bundle`` and ``checks`` (writing and checking bundles), ``model_ref`` (the model's fingerprints),
``fitting`` and ``prediction`` (``predict_inputs``: what it reads), ``directions`` (a linear head's per-layer
directions, exported as safetensors). The names below are the package's face, imported on
first use, so that importing the package stays cheap.
"""

from __future__ import annotations

from ..lazy import lazy_exports

_HOMES = {
    "FitConfig": "config",
    "PredictConfig": "config",
    "FitPlan": "plan",
    "FitResult": "fitting",
    "Head": "head",
    "fit_head": "head",
    "Probe": "probe",
    "fit": "fitting",
    "fit_any": "choose",
    "load": "bundle",
    "write_bundle": "bundle",
    "predict": "prediction",
    "DirectionsConfig": "directions",
    "export_directions": "directions",
    "PredictResult": "prediction",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

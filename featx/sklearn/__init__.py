"""scikit-learn estimators over featx: ``HiddenStates`` (texts in, one layer's pooled hidden states out) for
Pipelines, cross-validation and grid searches, and ``FittedProbe`` (a saved probe bundle as a classifier or
regressor of texts).

Each estimator is its own module, imported on first use, so ``import featx.sklearn`` stays cheap.
"""

from __future__ import annotations

from ..lazy import lazy_exports

_HOMES = {
    "FittedProbe": "fitted_probe",
    "HiddenStates": "hidden_states",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

"""scikit-learn estimators over featx: ``HiddenStates`` (texts in, one layer's pooled hidden states out) for
Pipelines, cross-validation and grid searches, and ``FittedProbe`` (a saved probe bundle as a classifier or
regressor of texts).

Each estimator is its own module, imported on first use, so ``import featx.sklearn`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module

_LAZY = {
    "FittedProbe": "fitted_probe",
    "HiddenStates": "hidden_states",
}

__all__ = [*_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

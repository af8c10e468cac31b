"""scikit-learn estimators over featx: ``HiddenStates`` (texts -> one layer's pooled hidden states, a
transformer) and ``FittedProbe`` (a saved probe bundle as a classifier or regressor of texts).

The names below are imported on first use, so that importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {"FittedProbe": "fitted_probe", "HiddenStates": "hidden_states"}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'featx.sklearn' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)

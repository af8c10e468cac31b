"""Old import paths of the extraction modules, kept for one release (featx 0.2 removes them)."""

from __future__ import annotations

import importlib
import sys
import warnings


def alias(old: str, new: str) -> None:
    """Make ``import old`` give the module ``new`` itself (so monkeypatching either patches both)."""
    warnings.warn(f"{old} moved to {new}; the old import path goes away in the next release",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)

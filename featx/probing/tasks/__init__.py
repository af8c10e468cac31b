"""The probing tasks, one ``ProbeTask`` each (``base``): ``classification`` (sentence labels as classes,
with ``classification_jobs`` and ``classification_table``), ``regression`` (numeric sentence labels, with
``regression_jobs``) and ``words`` (word and arc labels, with ``word_jobs``, ``word_items``, ``word_eval``
and ``word_predictions``). ``sentences`` holds what the sentence tasks read besides the label, ``pairs`` the
sentence-pair feature and cosine baseline."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ProbeTask", "run_task"]


def __getattr__(name: str) -> Any:  # imported on first use: the task modules import the probing modules
    if name not in __all__:
        raise AttributeError(f"module 'featx.probing.tasks' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.base"), name)

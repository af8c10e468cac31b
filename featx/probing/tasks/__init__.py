"""The probing tasks, one ``ProbeTask`` each (``base``): ``classification`` (sentence labels as classes,
with ``classification_jobs`` and ``classification_table``), ``regression`` (numeric sentence labels, with
``regression_jobs``) and ``words`` (word and arc labels, with ``word_jobs``, ``word_items``, ``word_eval``
and ``word_predictions``). ``sentences`` holds what the sentence tasks read besides the label, ``pairs`` the
sentence-pair feature and cosine baseline."""

from __future__ import annotations

from ...lazy import lazy_exports

_HOMES = {"ProbeTask": "base", "run_task": "base"}  # on first use: the task modules import the probing modules

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

"""Interventions inside the forward pass as one experiment (``featx intervene``, docs/intervene.md): does the
model use a label? Erase it (or a bundle's span) at a layer, run the model on, and probe every layer above, beside a
random control of the same rank; the other labels, the last layer's drift, a bundle's predictions and the LM loss
alongside. ``--edit steer``: a steering dose-response read by a bundle above the edit.

``config``      ``InterveneConfig``: the options, declared once, checked when made
``provenance``  the features file's model, corpus and options, read back and checked
``plan``        ``InterventionPlan``: the request resolved against the file and bundle (every bad input refused)
``edits``       the edits as ``featx.extraction.EditMap``s: the eraser, the bundle's span, the controls, steering
``passes``      which edited pass each probe's fold reads (under cross-validation, its own fold's eraser)
``forward``     the model loaded once and run over the file's rows with or without edits
``steer_rows``  which rows each steering direction is computed from and steers (never a row it was computed from)
``probes``, ``outputs``, ``loss``, ``steering``  what is measured; ``result``: the table and its files
``contrast``    the steering read through a decoder's contrast answers (``--template``, ``--answers``)
``run``         ``intervene``: the whole experiment
"""

from __future__ import annotations

from ..lazy import lazy_exports

_HOMES = {
    "InterveneConfig": "config",
    "InterventionPlan": "plan",
    "make_plan": "plan",
    "InterveneResult": "result",
    "format_table": "result",
    "TABLE_COLUMNS": "result",
    "STEER_COLUMNS": "result",
    "intervene": "run",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

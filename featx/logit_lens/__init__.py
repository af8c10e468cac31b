"""The logit lens beside the probe: ``lens(...)`` reads every layer's state at the answering position through the
model's own final norm and unembedding (an MLM's head for an encoder) and scores the answer tokens against the
label, next to featx's probe on the same rows and split.

Modules: ``config`` (``LensConfig``), ``answers`` (``--answers``: parsing, the label mapping, single tokens),
``head`` (the head read from the checkpoint, ``LensHead``), ``preflight`` (``prepare``: every check before a
forward pass), ``run`` (``lens``, ``LensResult``, the per-layer scores). The figure is ``featx.report``'s
(``save_lens_figure``), as every figure is. The names below are the package's face; they load on first use so
that ``import featx`` stays free of torch (the package is not ``featx.lens``: that name is the function).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_HOMES = {
    "lens": "run",
    "LensResult": "run",
    "lens_logits": "run",
    "score_layer": "run",
    "check_outputs": "run",
    "LensConfig": "config",
    "Answers": "answers",
    "parse_answers": "answers",
    "answer_token_ids": "answers",
    "LensHead": "head",
    "load_head": "head",
    "Prepared": "preflight",
    "prepare": "preflight",
    "check_decoder_prompt": "preflight",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

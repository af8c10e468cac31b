"""Extraction: one batched forward pass over a corpus, every layer of every site pooled, streamed to HDF5.

Public API (what the CLI and notebooks call):

``ExtractConfig``   every option, validated once, frozen (``config.py``)
``ExtractionPlan``  the run resolved once from the config, the corpus and the model (``plan.py``)
``extract``         run it: single process, one shard, or a torchrun rank (``orchestrate.py``)
``estimate``        what it would cost, from the same plan (``estimation.py``)
``merge``           the shards of a sharded run into one file (``merge.py``)
``quick_up_to_date``  the no-torch answer for an unchanged request (``freshness.py``)
``embed``       in-memory texts in, ``Embeddings`` out: the same plan, runner and loop, no file (``embedding.py``;
                in-memory sentences of words in, word vectors out: ``word_embedding.py``)

The stages, each its own module: ``corpus`` and ``word_corpus`` (the corpus checks; reading the files
themselves is ``featx.io``'s), ``tokenize``, ``batching`` (windows and batches), ``modeling``,
``model_checks`` and ``model_files`` (loading, and refusing folders that would load wrong), ``devices``
(``--device`` and ``--dtype`` for torch), ``native`` (featx's own BERT, MPNet and RoBERTa and tokenizer, used instead of
transformers where certainly equivalent), ``onednn`` (the CPU fast path), ``deberta`` (DeBERTa's relative attention
on the band of positions in use, CPU), ``pooling``, ``sites`` (hooks), ``windows``
(``--long window``), ``runner`` (forward + on-device pooling), ``loop`` (the batch loop) and ``threads``
(its background writer and batch prefetch), ``sharding`` and ``distributed`` (shards, torchrun).

Heavy modules (torch) load on first use, so ``from featx.extraction import ExtractConfig`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module

from .config import ExtractConfig, ExtractSummary, make_config, output_path
from .freshness import quick_up_to_date

_LAZY = {
    "ExtractionPlan": "plan",
    "resolve_plan": "plan",
    "extract": "orchestrate",
    "estimate": "estimation",
    "Estimate": "estimate_summary",
    "merge": "merge",
    "MergeSummary": "merge",
    "embed": "embedding",
    "Embeddings": "embedding",
}

__all__ = ["ExtractConfig", "ExtractSummary", "make_config", "output_path", "quick_up_to_date", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Tokens and the order of work: a corpus tokenised once, then cut into batches and commit blocks.

``tokenize``        a whole corpus tokenised once into flat arrays
``word_tokens``     word inputs tokenised as their words, with each word's subwords
``batching``        commit blocks of rows in corpus order, length-sorted batches within one
``long_windows``    ``--long window``: overlapping windows over a text longer than the model's maximum
"""

from ...lazy import lazy_exports

__all__ = ["batching", "long_windows", "tokenize", "word_tokens"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

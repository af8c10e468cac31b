"""One batch's forward pass and what is kept of it.

``runner``          ``Runner``: the forward pass and on-device pooling of every site
``pair_runner``     the forward passes of sentence pairs
``sites``           activations inside a layer, recorded with forward hooks
``pooling``         poolings as pure functions of states and a mask
``word_pooling``    word vectors from their subwords' states
``truncation``      the truncated forward: the embeddings plus the first K blocks only
"""

from ...lazy import lazy_exports

__all__ = ["pair_runner", "pooling", "runner", "sites", "truncation", "word_pooling"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

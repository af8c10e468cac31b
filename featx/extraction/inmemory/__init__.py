"""In-memory encoding: texts or sentences of words in, features out, no features file; the same plan,
runner and loop as ``featx extract`` (``featx.embed``, ``featx.sklearn.HiddenStates``, ``featx predict``).

``pipeline``     the one in-memory pipeline (``run_in_memory``, ``MemorySink``): the input kind is the corpus's
``sentences``    ``embed`` and ``encode``: the features of in-memory texts and pairs
``words``        ``encode_words``: the word vectors of in-memory sentences
"""

from ...lazy import lazy_exports

__all__ = ["pipeline", "sentences", "words"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

"""In-memory encoding: texts or sentences of words in, features out, no features file; the same plan,
runner and loop as ``featx extract`` (``featx.embed``, ``featx.sklearn.HiddenStates``, ``featx predict``).

``sentences``    ``embed`` and ``encode``: the features of in-memory texts and pairs
``words``        ``encode_words``: the word vectors of in-memory sentences
"""

from ...lazy import lazy_exports

__all__ = ["sentences", "words"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

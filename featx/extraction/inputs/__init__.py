"""What a corpus is, before any token: the inputs of ``featx extract``.

``corpus``         a labelled table of texts (CSV, TSV, JSON Lines, Parquet) read into a validated ``Corpus``
``column_hints``   the hint of a ``--text-col`` that names no column (a known corpus's text columns)
``senteval``       SentEval probing task files (``tr|va|te<TAB>label<TAB>sentence``) and a folder's tasks
``treebank``       word inputs: CoNLL-U treebanks, column files and JSON Lines of tokens
``word_corpus``    one ``Corpus`` of sentences from one or more word input files
``pairs``          sentence pairs (``--text-pair-col``): options, pair tokenisation, stored layout
``templates``      prompt templates, chat templates and ``--system``
``prompts``        a corpus made into prompts and tokenised
``positions``      the token a prompt is read at (``--pool-at``) and the text's own span
"""

from ...lazy import lazy_exports

__all__ = [
    "column_hints",
    "corpus",
    "pairs",
    "positions",
    "prompts",
    "senteval",
    "templates",
    "treebank",
    "word_corpus",
]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

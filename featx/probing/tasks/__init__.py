"""The probing tasks: sentence-level regression, word-level (words and arcs) and sentence pairs, beside
the classification probes of ``featx.probing.api``."""

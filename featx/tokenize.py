"""Deprecated: moved to ``featx.extraction.tokenize``."""

from ._moved import alias

alias(__name__, "featx.extraction.tokenize")

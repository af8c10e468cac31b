"""Deprecated: moved to ``featx.extraction.corpus``."""

from ._moved import alias

alias(__name__, "featx.extraction.corpus")

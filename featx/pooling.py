"""Deprecated: moved to ``featx.extraction.pooling``."""

from ._moved import alias

alias(__name__, "featx.extraction.pooling")

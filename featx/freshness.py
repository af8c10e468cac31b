"""Deprecated: moved to ``featx.extraction.freshness``."""

from ._moved import alias

alias(__name__, "featx.extraction.freshness")

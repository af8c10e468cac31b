"""Deprecated: moved to ``featx.extraction.batching``."""

from ._moved import alias

alias(__name__, "featx.extraction.batching")

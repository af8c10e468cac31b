"""Deprecated: moved to ``featx.extraction.merge``."""

from ._moved import alias

alias(__name__, "featx.extraction.merge")

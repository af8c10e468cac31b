"""Deprecated: moved to ``featx.extraction.modeling``."""

from ._moved import alias

alias(__name__, "featx.extraction.modeling")

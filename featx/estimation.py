"""Deprecated: moved to ``featx.extraction.estimation``."""

from ._moved import alias

alias(__name__, "featx.extraction.estimation")

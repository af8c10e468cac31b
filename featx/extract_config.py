"""Deprecated: moved to ``featx.extraction.config``."""

from ._moved import alias

alias(__name__, "featx.extraction.config")

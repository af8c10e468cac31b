"""Deprecated: moved to ``featx.extraction.sites``."""

from ._moved import alias

alias(__name__, "featx.extraction.sites")

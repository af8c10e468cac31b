"""Deprecated: moved to ``featx.extraction.model_files``."""

from ._moved import alias

alias(__name__, "featx.extraction.model_files")

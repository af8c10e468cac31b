"""Deprecated: moved to ``featx.extraction.onednn``."""

from ._moved import alias

alias(__name__, "featx.extraction.onednn")

"""``featx report``: the self-contained HTML report (``page``) and its sections."""

from ...lazy import lazy_exports

__all__ = ["analyses", "page", "parts", "sections"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

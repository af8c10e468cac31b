"""``featx report``: the self-contained HTML report (``page``) and its sections."""

__all__ = ["analyses", "page", "parts", "sections"]

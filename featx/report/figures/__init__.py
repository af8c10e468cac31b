"""Every matplotlib figure: the ``featx plot`` figure and its panels, learning curves, the analyses'
figures, the structural probes' figure, and the shared style (palette, markers, saving)."""

from ...lazy import lazy_exports

__all__ = [
    "analyses",
    "classes",
    "compare",
    "curves",
    "diagnostics",
    "heatmap",
    "intervene",
    "learning",
    "lens",
    "pairs",
    "plot",
    "plot_files",
    "projection",
    "structural",
    "style",
    "word_panels",
]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

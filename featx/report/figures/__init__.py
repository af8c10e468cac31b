"""Every matplotlib figure: the ``featx plot`` figure and its panels, learning curves, the analyses'
figures, and the shared style (palette, markers, saving)."""

__all__ = [
    "analyses",
    "classes",
    "compare",
    "curves",
    "diagnostics",
    "heatmap",
    "learning",
    "pairs",
    "plot",
    "plot_files",
    "projection",
    "style",
    "word_panels",
]

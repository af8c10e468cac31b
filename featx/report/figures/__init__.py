"""Every matplotlib figure: the ``featx plot`` figure and its panels, learning curves, the analyses'
figures, and the shared style (palette, markers, saving)."""

__all__ = ["analyses", "curves", "heatmap", "learning", "pairs", "plot", "projection", "style", "word_panels"]

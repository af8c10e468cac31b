"""The presentation side of featx: figures, comparisons, layer similarity and the HTML report.

Modules: ``load`` (reading results, choosing rows), ``style`` (palette, saving), ``curves`` (metric by
layer, MDL, per-class F1, PCA), ``heatmap`` (layer × pooling grid), ``learning`` (learning curves),
``figures`` (the ``featx plot`` figure), ``compare`` + ``paired`` (``featx compare``), ``similarity``
(``featx similarity``, linear CKA) and ``html`` (``featx report``). ``featx.plots`` re-exports the
plotting functions under their old names.
"""

"""The rows of one (layer, pooling) on their first two principal components, coloured by label: the
notebook's and the report's look at a layer's geometry."""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from .style import CYCLE, MARKERS, RC, axes_or_new


def _projection(features, layer: int, pooling: str, label: str, split, max_points: int, seed: int, site: str):
    """The chosen rows' first two principal components: ``(points, variance ratios, label codes, label names,
    whether every row had the same vector)``."""
    from sklearn.decomposition import PCA

    from ...store import FeatureFile, open_features

    opened = features if isinstance(features, FeatureFile) else open_features(features)
    try:
        X = opened.features(pooling, layer, site=site)
        codes = opened.labels(label)
        names = opened.label_names(label)
        keep = codes >= 0
        if split is not None:
            if opened.split is None:
                raise InputError(f"{opened.path} has no split column, so split='{split}' cannot be used")
            keep &= opened.split == split
    finally:
        if opened is not features:
            opened.close()
    index = np.flatnonzero(keep)
    if index.size < 3:
        raise InputError(f"only {index.size} labelled rows to project; need at least 3")
    if index.size > max_points:
        index = np.sort(np.random.default_rng(seed).choice(index, max_points, replace=False))
    X, codes = X[index], codes[index]
    centred = X - X.mean(axis=0)
    constant = float((centred**2).sum()) <= 1e-12 * max(1.0, float((X**2).sum()))
    if constant:  # e.g. CLS at layer 0: the same vector for every row, nothing to project
        points, ratio = np.zeros((len(X), 2)), np.zeros(2)
    else:
        pca = PCA(n_components=2, random_state=seed)
        points = pca.fit_transform(centred)
        ratio = pca.explained_variance_ratio_
    return points, ratio, codes, names, constant


def plot_projection(
    features,
    layer: int,
    pooling: str,
    label: str,
    ax=None,
    split: str | None = None,
    max_points: int = 3000,
    seed: int = 0,
    title: bool | str = True,
    site: str = "hidden",
):
    """The rows of one (layer, pooling) projected on their first two principal components, coloured by label.

    ``features`` is a features file path or an open ``featx.FeatureFile``. ``split`` keeps only rows
    of that split; at most ``max_points`` rows are drawn (a seeded random subset). ``site`` picks a
    stored site other than the hidden states (``featx extract --site``).
    """
    import matplotlib.pyplot as plt

    points, ratio, codes, names, constant = _projection(features, layer, pooling, label, split, max_points, seed, site)
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        for code, name in enumerate(names):
            chosen = codes == code
            if chosen.any():
                ax.scatter(
                    points[chosen, 0],
                    points[chosen, 1],
                    s=9,
                    alpha=0.6,
                    linewidths=0,
                    color=CYCLE[code % len(CYCLE)],
                    marker=MARKERS[code % len(MARKERS)],
                    label=str(name),
                )
        ax.set_xlabel(f"PC1 ({ratio[0]:.0%} of variance)")
        ax.set_ylabel(f"PC2 ({ratio[1]:.0%} of variance)")
        ax.legend(title=label, frameon=False, markerscale=2, loc="best")
        if constant:
            ax.text(0.5, 0.9, "every row has the same vector here", transform=ax.transAxes, ha="center")
        if title:
            where = "" if site == "hidden" else f"{site}, "
            ax.set_title(
                title if isinstance(title, str) else f"layer {layer}, {where}{pooling} pooling: PCA by {label}",
                loc="left",
            )
    return ax

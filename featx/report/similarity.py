"""Layer-by-layer similarity: linear CKA between every pair of layers of one features file, or of two
features files of the same rows (two models, a model and its random-init baseline).

Linear CKA (Kornblith et al. 2019) of column-centred X (n × p) and Y (n × q):
``||Xᵀ Y||²_F / (||Xᵀ X||_F · ||Yᵀ Y||_F)``; 1 = the same representation up to rotation and scale.
Its baseline (``chance``): the expected CKA of the same two layers with the rows matched at random, in closed form
``||X||²_F ||Y||²_F / ((n - 1) ||Xᵀ X||_F ||Yᵀ Y||_F)`` (shuffling the rows of Y leaves ``Yᵀ Y`` as it is, and the
mean of ``||Xᵀ P Y||²_F`` over the permutations P is ``tr(XXᵀ) tr(YYᵀ) / (n - 1)`` for centred X and Y): about
``p / (n + p)`` for unrelated isotropic layers of p dimensions (0.26 for 90 rows of 32, 0.11 for 3,000 rows of 384).
Only p × q cross-products are formed (never the n × n Gram matrices), and layers are read one at a
time through ``featx.open(...).features``: at most two layers are in memory when the file is large. Every layer
compared is checked for inf and NaN first (``FeatureFile.require_finite``, as the commands that fit do), so a bad
layer is refused before any product, with the error its read would raise.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..checks import path_like, whole
from ..errors import InputError
from ..io import write_csv
from ..options import Check, Options, keywords_of, on_command_line, option
from .figures.style import FORMATS, RC, axes_or_new, save
from .files import check_redrawn, make_folder

CACHE_BYTES = 1 << 30  # layers are kept in memory only while the whole file fits in this


@dataclass
class Similarity:
    """``matrix[i, j]`` = CKA of layer ``layers_a[i]`` of file a and ``layers_b[j]`` of file b (NaN: a
    constant layer); ``chance[i, j]`` = the CKA those two layers have on average with their rows shuffled
    (``linear_cka_chance``), the baseline of each cell."""

    matrix: np.ndarray
    layers_a: list[int]
    layers_b: list[int]
    name_a: str
    name_b: str
    pooling: str
    n_rows: int  # rows, or words of a word-level file's word vectors (``unit``)
    written: list[Path] = field(default_factory=list)
    unit: str = "rows"
    chance: np.ndarray | None = None

    def frame(self) -> pd.DataFrame:
        """The matrix as a table: rows = layers of file a, columns = layers of file b, 4 decimals."""
        frame = pd.DataFrame(
            self.matrix,
            index=pd.Index(self.layers_a, name=f"layer of {self.name_a}"),
            columns=[f"layer {layer}" for layer in self.layers_b],
        )
        return frame.round(4)

    def table(self) -> pd.DataFrame:
        """The CSV ``featx similarity`` writes: ``frame``'s columns (``layer J``, so a reader of those keeps working),
        then the chance level of each cell (``chance layer J``, ``linear_cka_chance``), 4 decimals."""
        chance = np.full(self.matrix.shape, np.nan) if self.chance is None else self.chance
        extra = pd.DataFrame(chance, index=self.frame().index, columns=[f"chance layer {j}" for j in self.layers_b])
        return pd.concat([self.frame(), extra.round(4)], axis=1)

    @property
    def what(self) -> str:
        """``mean pooling``, or for word vectors ``first word pooling``."""
        return f"{self.pooling} {'word ' if self.unit == 'words' else ''}pooling"

    def format(self) -> str:
        """The terminal text of ``featx similarity``: what the matrix holds, then the matrix."""
        return (
            f"linear CKA, {self.what}, {self.n_rows:,} {self.unit}: rows = layers of {self.name_a}, "
            f"columns = layers of {self.name_b}\n"
            + self.frame().to_string(float_format=lambda v: f"{v:.3f}", na_rep="-")
            + self.chance_line()
        )

    def chance_line(self) -> str:
        """The baseline under the matrix: the range over its cells of the CKA of their layers, rows shuffled."""
        if self.chance is None or not np.isfinite(self.chance).any():
            return ""
        low, high = float(np.nanmin(self.chance)), float(np.nanmax(self.chance))
        return (
            f"\nchance (rows shuffled): {low:.3f} to {high:.3f} over the cells, the CKA each pair of layers has on "
            f"average with its {self.unit} matched at random; a cell near it shares no more than that"
        )


class _Layers:
    """Centred float64 layers of one file, read one at a time (cached while the file is small)."""

    def __init__(self, opened, pooling: str, site: str, words: bool = False):
        self.opened, self.pooling, self.site, self.words = opened, pooling, site, words
        self.layers = opened.site_layers(site)
        self.n = int(opened.word_offsets()[-1]) if words else opened.n_rows
        size = self.n * opened.site_width(site) * 8 * len(self.layers)
        self.cache: dict[int, np.ndarray] | None = {} if size <= CACHE_BYTES else None
        self.self_norm: dict[int, float] = {}
        self.squares: dict[int, float] = {}  # ||X||²_F of each centred layer (the chance level's numerator)

    def get(self, layer: int) -> np.ndarray:
        if self.cache is not None and layer in self.cache:
            return self.cache[layer]
        if self.words:
            X = self.opened.word_features(self.pooling, layer, dtype=np.float64)
        else:
            X = self.opened.features(self.pooling, layer, dtype=np.float64, site=self.site)
        X -= X.mean(axis=0)
        if layer not in self.self_norm:
            self.self_norm[layer] = float(np.linalg.norm(X.T @ X))
            self.squares[layer] = float(np.einsum("ij,ij->", X, X))
        if self.cache is not None:
            self.cache[layer] = X
        return X

    def norm(self, layer: int) -> float:
        if layer not in self.self_norm:
            self.get(layer)
        return self.self_norm[layer]


def linear_cka(X: np.ndarray, Y: np.ndarray) -> float:
    """Linear CKA of two row-aligned matrices (centred here); NaN when either is constant."""
    X = np.asarray(X, dtype=np.float64) - np.asarray(X, dtype=np.float64).mean(axis=0)
    Y = np.asarray(Y, dtype=np.float64) - np.asarray(Y, dtype=np.float64).mean(axis=0)
    denominator = np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y)
    return float(np.linalg.norm(X.T @ Y) ** 2 / denominator) if denominator > 1e-12 else float("nan")


def linear_cka_chance(X: np.ndarray, Y: np.ndarray) -> float:
    """The expected linear CKA of ``X`` and ``Y`` with the rows of ``Y`` shuffled (every order alike), in closed form
    (module docstring); NaN when either is constant."""
    X = np.asarray(X, dtype=np.float64) - np.asarray(X, dtype=np.float64).mean(axis=0)
    Y = np.asarray(Y, dtype=np.float64) - np.asarray(Y, dtype=np.float64).mean(axis=0)
    return _chance(
        float(np.sum(X * X)), float(np.sum(Y * Y)), np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y), len(X)
    )


def _chance(squares_x: float, squares_y: float, denominator: float, n: int) -> float:
    return squares_x * squares_y / ((n - 1) * denominator) if denominator > 1e-12 and n > 1 else float("nan")


def _check_pooling(opened, pooling: str, site: str, words: bool) -> None:
    """A word pooling asked of the sentence poolings (or word vectors of another site, or of a file without
    words) is refused with what the file stores and how to read it."""
    if words:
        if site != "hidden":
            raise InputError(f"word vectors are stored for site 'hidden' only, not '{site}'", "leave --site out")
        if not opened.has_words:
            raise InputError(
                f"{opened.path} has no word vectors (a features file of sentences)",
                f"leave {_words_flag()} out to compare its sentence poolings: {', '.join(opened.site_poolings(site))}",
            )
        return
    poolings = opened.site_poolings(site)
    if pooling not in poolings and site == "hidden" and opened.has_words and pooling in opened.word_poolings():
        raise InputError(
            f"'{pooling}' is a word pooling of {opened.path} (one vector per word), not one of its sentence poolings "
            f"({', '.join(poolings) or 'none stored'})",
            f"add {_words_flag()} to compare its word vectors ({', '.join(opened.word_poolings())}), or choose a "
            "sentence pooling",
        )


def _words_flag() -> str:
    return "--words" if on_command_line() else "words=True"


def _check_same_words(a, b) -> None:
    """Two files' word vectors are compared word by word: the same words of the same rows."""
    if not np.array_equal(a.word_offsets(), b.word_offsets()) or a.word_forms() != b.word_forms():
        raise InputError(
            f"{a.path} and {b.path} do not hold the same words",
            "extract both from the same word input (CoNLL-U, columns, JSON Lines of tokens)",
        )


def _check_same_rows(a, b) -> None:
    if a.n_rows != b.n_rows:
        raise InputError(
            f"{b.path} has {b.n_rows} rows, {a.path} has {a.n_rows}: CKA needs the same rows",
            "extract both from the same corpus (e.g. "
            f"{'featx extract ... --random-init' if on_command_line() else 'featx.extract(..., random_init=True)'})",
        )
    # The rows themselves, not the corpus file's digest: another file of the same rows (a label column added, the
    # split column dropped, a TSV copy) holds the same rows, as featx compare pairs results by their rows.
    if a.ids != b.ids or a.texts != b.texts or a.pair_texts != b.pair_texts:
        raise InputError(
            f"{a.path} and {b.path} do not hold the same rows (their texts or row ids differ)",
            "extract both from the same rows of a corpus, in the same order",
        )


def _name(opened) -> str:
    model = str(opened.attrs.get("model") or Path(opened.path).name).replace("default:", "")
    return model + (" (random init)" if opened.attrs.get("random_init") else "")


@dataclass(frozen=True)
class SimilarityConfig(Options):
    """What ``featx similarity`` compares and where it writes (``output``: the figure, its suffix replaced
    by each of ``formats``, and the matrix at ``.csv``; default ``FEATURES stem [.vs. OTHER stem]
    .POOLING.SITE.cka.png``, so runs of another pooling or site do not overwrite each other)."""

    features: str | os.PathLike
    other: str | os.PathLike | None = None
    pooling: str = option("mean", flag="--pooling", help="Which stored pooling to compare.")
    site: str = option("hidden", flag="--site", help="Which stored site.")
    words: bool = option(
        False, flag="--words", help="Compare the word vectors of a word-level file (--pooling: a word pooling)."
    )
    output: str | os.PathLike | None = option(
        None,
        flag=("-o", "--output"),
        kind="path",
        help="Figure path (.png and .svg; the matrix and its chance level go to .csv). "
        "Default: FEATURES stem + .POOLING.SITE.cka.png.",
    )
    write: bool = False
    formats: Iterable[str] = FORMATS
    dpi: int = option(150, flag="--dpi", help="Resolution of the PNG.")

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("features", "other", "output"),
        whole("dpi", "--dpi", hint="give --dpi a value of at least 1"),
    )


def default_output(
    features: str | os.PathLike,
    other: str | os.PathLike | None = None,
    *,
    pooling: str,
    site: str,
    words: bool = False,
) -> Path:
    """``FEATURES stem + .POOLING.SITE.cka.png``, or ``FEATURES stem + .vs. + OTHER stem + .POOLING.SITE.cka.png``,
    beside FEATURES: runs of another pooling or site write files of their own (word vectors: ``.POOLING-words``)."""
    features = Path(features)
    stem = features.name[: -len(features.suffix)] if features.suffix else features.name
    if other is not None:
        other = Path(other)
        stem += ".vs." + (other.name[: -len(other.suffix)] if other.suffix else other.name)
    return features.with_name(f"{stem}.{pooling}{'-words' if words else ''}.{site}.cka.png")


TABLE = {".csv": ("similarity matrix", "layer of ")}  # beside the figure (``files.check_redrawn``)


@keywords_of(SimilarityConfig)  # from Python, a message names the keyword given (dpi=0), the CLI the flag
def similarity(features, other=None, **options: Any) -> Similarity:
    """Linear CKA between every layer of ``features`` and every layer of ``other`` (default: itself).

    ``options`` are ``SimilarityConfig``'s fields (``pooling``, ``site``...); with ``output`` (or
    ``write=True``, beside ``features``) the figure and the matrix are written and listed in ``written``.
    ``features`` may also be a whole ``SimilarityConfig``.
    """
    config = SimilarityConfig.build(features, **({"other": other} if other is not None else {}), **options)
    output = None
    if config.output is not None or config.write:
        where: dict[str, Any] = {"pooling": config.pooling, "site": config.site, "words": config.words}
        output = config.output or default_output(config.features, config.other, **where)
        check_redrawn(output, config.formats, TABLE, inputs=[config.features, config.other])  # before the work
    result = _similarity(config.features, config.other, config.pooling, config.site, config.words)
    if output is not None:  # checked above, before the work
        result.written = _save(result, Path(output), config.formats, config.dpi)
    return result


def write_similarity(
    result: Similarity, output: str | os.PathLike, formats: Iterable[str] = FORMATS, dpi: int = 150
) -> list[Path]:
    """The figure at ``output`` (one file per format) and the table at ``output`` with ``.csv`` (``Similarity.table``:
    the matrix and its chance level), once ``check_redrawn`` passes."""
    check_redrawn(output, formats, TABLE)
    return _save(result, Path(output), formats, dpi)


def _save(result: Similarity, output: Path, formats: Iterable[str], dpi: int) -> list[Path]:
    """``write_similarity`` after its check (``similarity`` checks before any work, and saves with this)."""
    import matplotlib.pyplot as plt

    make_folder(output.parent)
    fig, written = similarity_figure(result, output=output, formats=formats, dpi=dpi)
    plt.close(fig)
    return [*written, write_csv(result.table(), output.with_suffix(".csv"), index=True)]


def _similarity(features, other, pooling: str, site: str, words: bool = False) -> Similarity:
    from ..store import FeatureRead, open_features

    a = open_features(features)
    b = open_features(other) if other is not None else a
    kind, files = "words" if words else "pooled", (a, b) if b is not a else (a,)
    try:
        for opened in files:
            _check_pooling(opened, pooling, site, words)
        if other is not None:
            _check_same_rows(a, b)
            if words:
                _check_same_words(a, b)
        left, right = _Layers(a, pooling, site, words), (_Layers(b, pooling, site, words) if b is not a else None)
        if left.n < 3:
            raise InputError(f"{a.path} has {left.n} {'words' if words else 'rows'}; CKA needs at least 3")
        for opened in files:  # inf or NaN in any layer: refused before the first product
            opened.require_finite(FeatureRead(kind, layer, pooling, site) for layer in opened.site_layers(site))
        matrix, chance = _cka_matrix(left, right)
        name_a, name_b = _name(a), _name(b)
        if other is not None and name_a == name_b:
            name_a, name_b = Path(a.path).name, Path(b.path).name
        unit = "words" if words else "rows"
        layers_b = (right or left).layers
        return Similarity(matrix, left.layers, layers_b, name_a, name_b, pooling, left.n, unit=unit, chance=chance)
    finally:
        for opened in files:
            opened.close()


def _cka_matrix(left: _Layers, right: _Layers | None) -> tuple[np.ndarray, np.ndarray]:
    """The CKA of every pair of layers, and its chance level (``linear_cka_chance``)."""
    same = right is None
    right = right or left
    matrix = np.full((len(left.layers), len(right.layers)), np.nan)
    chance = matrix.copy()
    for i, layer_a in enumerate(left.layers):
        X = left.get(layer_a)
        norm_x = left.norm(layer_a)
        for j, layer_b in enumerate(right.layers):
            if same and j < i:
                matrix[i, j], chance[i, j] = matrix[j, i], chance[j, i]
                continue
            Y = X if same and i == j else right.get(layer_b)
            denominator = norm_x * right.self_norm[layer_b]
            if denominator > 1e-12:
                matrix[i, j] = float(np.linalg.norm(X.T @ Y) ** 2 / denominator)
                chance[i, j] = _chance(left.squares[layer_a], right.squares[layer_b], denominator, left.n)
    return matrix, chance


def plot_similarity(result: Similarity, ax=None, title: bool | str = True):
    """The CKA matrix as a heatmap (0–1, values in the cells when there are few layers)."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        cmap = mpl.colormaps["cividis"]
        image = ax.imshow(np.ma.masked_invalid(result.matrix), cmap=cmap, vmin=0, vmax=1, origin="lower", aspect="auto")
        if max(result.matrix.shape) <= 13:
            for (i, j), value in np.ndenumerate(result.matrix):
                text = "–" if not np.isfinite(value) else f"{value:.2f}"
                dark = (
                    np.isfinite(value)
                    and sum(w * c for w, c in zip((0.299, 0.587, 0.114), cmap(value)[:3], strict=False)) < 0.5
                )
                ax.text(j, i, text, ha="center", va="center", fontsize=8.5, color="white" if dark else "black")
        ax.set_xticks(range(len(result.layers_b)), [str(layer) for layer in result.layers_b])
        ax.set_yticks(range(len(result.layers_a)), [str(layer) for layer in result.layers_a])
        ax.set_xlabel(f"layer of {result.name_b}")
        ax.set_ylabel(f"layer of {result.name_a}")
        ax.figure.colorbar(image, ax=ax, fraction=0.05, pad=0.02, label="linear CKA")
        if title:
            ax.set_title(
                title
                if isinstance(title, str)
                else f"linear CKA by layer ({result.what}, {result.n_rows:,} {result.unit}; – = a constant layer)"
                + _chance_title(result),
                loc="left",
            )
    return ax


def _chance_title(result: Similarity) -> str:
    """The chance level under the figure's title: ``\nchance (rows shuffled): 0.21–0.36`` (none without it)."""
    if result.chance is None or not np.isfinite(result.chance).any():
        return ""
    low, high = float(np.nanmin(result.chance)), float(np.nanmax(result.chance))
    return f"\nchance (rows shuffled): {low:.2f}" + (f"–{high:.2f}" if f"{high:.2f}" != f"{low:.2f}" else "")


def similarity_figure(
    result: Similarity, output: str | os.PathLike | None = None, formats: Iterable[str] = FORMATS, dpi: int = 150
):
    """The CKA heatmap under the two files' names, as ``(figure, written)``; saved if ``output`` is given."""
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(7.5, 6), layout="constrained")
        plot_similarity(result, ax=ax)
        same = result.name_a == result.name_b
        fig.suptitle(result.name_a if same else f"{result.name_a} vs {result.name_b}", fontsize=13, x=0.01, ha="left")
        written = save(fig, output, formats, dpi) if output is not None else []
    return fig, written

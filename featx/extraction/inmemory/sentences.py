"""``embed``: the features of in-memory texts, without a features file.

The texts (and pairs) are checked as a corpus's are and run through the in-memory pipeline (``pipeline.py``: the
plan, tokenisation, batch loop and ``Runner`` of ``featx extract``, with arrays in memory instead of the HDF5 writer),
so the values are bit for bit what ``featx extract`` with the same options stores. ``Embeddings`` holds the result.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...checks import parse_whole
from ...errors import InputError
from ...io import blank_text
from ...options import keyword_doc, keywords_of, renamed
from ...store import HIDDEN_SITE
from ..config import ExtractConfig
from .pipeline import IN_MEMORY, PAIR_COL, TEXT_COL, memory_corpus, run_in_memory


def _values(texts, name: str) -> list:
    """``texts`` as a list of its items: a list or tuple, a 1-D numpy array, a pandas Series or one-column DataFrame."""
    if isinstance(texts, (str, bytes)):
        raise InputError(f"{name} is a single string, not a list of texts", f"wrap it in a list: [{name}]")
    columns = getattr(texts, "columns", None)
    if columns is not None:  # a DataFrame: its one column
        if len(columns) != 1:
            raise InputError(
                f"{name} is a table of {len(columns)} columns; give one column of texts",
                "pass the column itself, e.g. frame['text']",
            )
        texts = texts.iloc[:, 0]
    if hasattr(texts, "to_numpy") and not isinstance(texts, np.ndarray):  # a Series
        texts = texts.to_numpy(dtype=object)
    if isinstance(texts, np.ndarray):
        if texts.ndim == 2 and texts.shape[1] == 1:
            texts = texts[:, 0]
        if texts.ndim != 1:
            raise InputError(f"{name} is an array of shape {texts.shape}; give a 1-D array of texts")
        return texts.tolist()
    if isinstance(texts, (list, tuple)):
        return list(texts)
    raise InputError(
        f"{name} is a {type(texts).__name__}, not a list of texts",
        "give a list of strings, a numpy array, a pandas Series or a one-column DataFrame",
    )


def as_texts(texts, name: str = "texts") -> list[str]:
    """The texts of ``texts``, checked as extract checks a corpus's: at least one, each a string with some text."""
    values = _values(texts, name)
    if not values:
        raise InputError(f"{name} is empty", "give at least one text")
    for position, value in enumerate(values):
        if not isinstance(value, str):
            raise InputError(
                f"{name}[{position}] is {type(value).__name__} {value!r:.40}, not a string",
                "give every text as a str (missing values: drop those rows first)",
            )
    empty = [position for position, value in enumerate(values) if blank_text(value)]
    if empty:
        shown = ", ".join(str(position) for position in empty[:10]) + (" ..." if len(empty) > 10 else "")
        raise InputError(
            f"{name}: {len(empty)} empty or whitespace-only text(s), at position(s) {shown}",
            "fill them in or leave them out: each text gets one row of features",
        )
    return [str(value) for value in values]


class Embeddings:
    """Pooled features of in-memory texts: ``array(layer, pooling, site)`` is a float32 ``(rows, width)`` array.

    ``layers`` and ``poolings`` are the hidden site's; ``sites`` every site held (``pair_b``: side b of
    separate-mode pairs); ``model`` says what computed them (model, weights' sha256, dtypes, lengths, featx version);
    ``truncated`` whether each row was cut at the maximum length (either side of a pair), as extract counts them.
    """

    def __init__(self, arrays: dict, layouts: Sequence, model: dict, rows: int, truncated: np.ndarray | None = None):
        self._arrays = arrays
        self._layouts = {layout.name: layout for layout in layouts}
        self.model = model
        self.rows = rows
        self.truncated = np.zeros(rows, bool) if truncated is None else np.asarray(truncated, bool)

    @property
    def layers(self) -> list[int]:
        return list(self._layouts[HIDDEN_SITE].layers)

    @property
    def poolings(self) -> list[str]:
        return list(self._layouts[HIDDEN_SITE].poolings)

    @property
    def sites(self) -> list[str]:
        return list(self._layouts)

    def array(self, layer: int, pooling: str, site: str = HIDDEN_SITE) -> np.ndarray:
        """The ``(rows, width)`` float32 features of one layer (negative: from the model's top) and pooling."""
        layout = self._layouts.get(site)
        if layout is None:
            raise InputError(f"site '{site}' was not embedded", f"these embeddings hold {', '.join(self._layouts)}")
        top = int(self.model["n_model_layers"])
        number = _layer_number(layer)
        resolved = number + top if number < 0 else number
        if resolved not in layout.layers:
            raise InputError(
                f"layer {layer} was not embedded: these embeddings hold layers {', '.join(map(str, layout.layers))}",
                "ask embed for it with layers=...",
            )
        if pooling not in layout.poolings:
            raise InputError(
                f"pooling '{pooling}' was not embedded: these embeddings hold {', '.join(layout.poolings)}",
                "ask embed for it with poolings=...",
            )
        values = self._arrays[layout.pooled_paths[pooling]][:, list(layout.layers).index(resolved)]
        return np.ascontiguousarray(values, dtype=np.float32)

    def __repr__(self) -> str:
        return (
            f"Embeddings({self.rows} rows, layers {self.layers}, poolings {self.poolings}, model {self.model['model']})"
        )


def _layer_number(layer) -> int:
    """``array``'s layer as a whole number (an int, numpy integer or digits); anything else (a pooling name given
    first, as ``FeatureFile.features(pooling, layer)`` takes them, or 1.5) is refused, never cut to a number."""
    if isinstance(layer, (int, np.integer)) and not isinstance(layer, bool):
        return int(layer)
    number = parse_whole(layer.strip(), signed=True) if isinstance(layer, str) else None
    if number is not None:
        return number
    raise InputError(
        f"layer {layer!r} is not a layer number",
        "Embeddings.array(layer, pooling, site) takes the layer first (FeatureFile.features takes the pooling first), "
        "e.g. array(3, 'mean')",
    )


def embed_config(texts: list[str], pairs: list[str] | None, **options) -> ExtractConfig:
    """The ``ExtractConfig`` of an embedding request (its corpus is ``IN_MEMORY``)."""
    pair_options = {"text_pair_col": PAIR_COL, "pair_mode": options.pop("pair_mode")} if pairs is not None else {}
    if pairs is None and options.get("pair_mode") is not None:
        raise InputError("pair_mode applies to sentence pairs only", "give text_pairs too, or leave pair_mode out")
    options.pop("pair_mode", None)
    if pairs is not None and len(pairs) != len(texts):
        raise InputError(
            f"text_pairs has {len(pairs)} texts but texts has {len(texts)}", "give one second text per text"
        )
    return ExtractConfig(corpus=IN_MEMORY, text_col=TEXT_COL, **pair_options, **options)


def encode(loaded, config: ExtractConfig, texts: list[str], pairs: list[str] | None = None) -> Embeddings:
    """Run ``config``'s extraction of ``texts`` (and ``pairs``) with an already loaded model, into memory.

    ``texts`` and ``pairs`` are checked lists (``as_texts``); ``loaded.max_length`` is the length used."""
    corpus = memory_corpus(texts, [*texts, *(pairs or [])], pairs=pairs)
    run = run_in_memory(loaded, config, corpus)
    return Embeddings(run.arrays, run.plan.sites, run.model, len(corpus), run.truncated)


# The keywords of ``embed``: the extraction options that make sense without a corpus file (declared once, as
# ``ExtractConfig``'s fields), and the defaults that differ from ``featx extract``'s.
EMBED_KEYWORDS = (
    "model",
    "layers",
    "poolings",
    "pair_mode",
    "max_length",
    "long",
    "stride",
    "dtype",
    "device",
    "batch_size",
    "max_tokens",
    "store_dtype",
    "sites",
    "progress",
    "trust_remote_code",
    "random_init",
    "init_seed",
)
EMBED_DEFAULTS = {"poolings": "mean", "store_dtype": "float32", "progress": False}


def embed_options(options: dict) -> dict:
    """``embed``'s keywords checked (an old spelling of a renamed one taken with a warning) over its defaults;
    ``layers`` and ``poolings`` may be lists."""
    options = renamed(ExtractConfig, options)
    unknown = sorted(set(options) - set(EMBED_KEYWORDS))
    if unknown:
        raise InputError(f"unknown embed option(s): {', '.join(unknown)}", f"embed takes: {', '.join(EMBED_KEYWORDS)}")
    chosen = {**EMBED_DEFAULTS, **options}
    for name in ("layers", "poolings"):
        value = chosen.get(name)
        if isinstance(value, (list, tuple)):
            chosen[name] = ",".join(map(str, value))
        elif name == "layers" and value is not None:
            chosen[name] = str(value)
    return chosen


def embed(texts, *, text_pairs=None, **options) -> Embeddings:
    """The pooled features of ``texts`` (a list, numpy array, pandas Series or one-column DataFrame of str), as
    ``featx extract`` with the same options would store them, held in memory. ``text_pairs``: each text's second
    text (sentence pairs, ``pair_mode`` cross or separate). Everything is checked before the model is loaded.

    Keywords (``featx extract``'s options of the same name; ``layers`` and ``poolings`` may be lists):

    """
    with keywords_of(ExtractConfig):  # an error names the keyword given (batch_size=0), not the flag
        text_list = as_texts(texts, "texts")
        pair_list = as_texts(text_pairs, "text_pairs") if text_pairs is not None else None
        config = embed_config(text_list, pair_list, **{"pair_mode": None, **embed_options(options)})
        from ..model.loading import load_configured

        return encode(load_configured(config), config, text_list, pair_list)


embed.__doc__ = (embed.__doc__ or "") + keyword_doc(ExtractConfig, EMBED_KEYWORDS, EMBED_DEFAULTS)


def _one(name: str, value, is_one: bool, example: str) -> None:
    if not is_one:
        raise InputError(
            f"{name}={value!r} is not one {name}: featx.embed returns one array",
            f"give one, e.g. {name}={example}; for several, featx.extraction.embed(texts, {name}s=...) returns "
            "them all (its .array(layer, pooling, site) gives each)",
        )


def embed_one(texts, *, layer=-1, pooling: str = "mean", site: str = HIDDEN_SITE, **options) -> np.ndarray:
    """``featx.embed``: the ``(rows, width)`` float32 features of one ``layer``, ``pooling`` and ``site``, each
    checked to be one (``layers=``, ``poolings=`` and ``sites=`` are ``embed``'s) before the model loads."""
    for name in ("layer", "pooling", "site"):
        if f"{name}s" in options:
            raise InputError(
                f"featx.embed takes one {name}=, not {name}s=",
                f"give {name}=...; for several, featx.extraction.embed(texts, {name}s=...) returns them all",
            )
    spelled = isinstance(layer, str) and parse_whole(layer.strip(), signed=True) is not None
    whole = isinstance(layer, (int, np.integer)) or spelled
    _one("layer", layer, whole and not isinstance(layer, bool), "3 or layer=-1 (the top)")
    _one("pooling", pooling, isinstance(pooling, str) and "," not in pooling, "'mean'")
    _one("site", site, isinstance(site, str) and "," not in site, "'ffn'")
    if options.get("text_pairs") is not None and options.get("pair_mode") == "separate":
        raise InputError(
            "featx.embed returns one array, and pair_mode='separate' encodes two arrays (each text and its pair alone)",
            "featx.extraction.embed(texts, text_pairs=..., pair_mode='separate') gives both: its .array(layer, "
            "pooling) is the first texts', .array(layer, pooling, site='pair_b') the second texts'",
        )
    sites = {} if site == HIDDEN_SITE else {"sites": site}
    embedded = embed(texts, layers=str(int(layer)), poolings=pooling, **sites, **options)
    return embedded.array(int(layer), pooling, site=site)

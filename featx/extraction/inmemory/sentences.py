"""``embed``: the features of in-memory texts, without a features file.

The same path as ``featx extract``: an ``ExtractConfig``, the ``ExtractionPlan``, the tokenisation, the batch loop
and the ``Runner``, with the HDF5 writer replaced by arrays in memory (``MemorySink``), so the values are bit for bit
what ``featx extract`` with the same options stores (``store_dtype="float16"`` rounds as the file does) and the pass
stops after the highest requested layer (``truncation.py``). ``Embeddings`` holds the result.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..._version import __version__
from ...errors import InputError
from ...options import keyword_doc, renamed
from ...store import HIDDEN_SITE
from ..config import ExtractConfig
from ..inputs.corpus import Corpus

IN_MEMORY = "<in-memory texts>"  # the corpus name of an embedding request: no file is read or written
TEXT_COL, PAIR_COL = "text", "text_pair"


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
    empty = [position for position, value in enumerate(values) if not value.strip()]
    if empty:
        shown = ", ".join(str(position) for position in empty[:10]) + (" ..." if len(empty) > 10 else "")
        raise InputError(
            f"{name}: {len(empty)} empty or whitespace-only text(s), at position(s) {shown}",
            "fill them in or leave them out: each text gets one row of features",
        )
    return [str(value) for value in values]


def _corpus(texts: list[str], pairs: list[str] | None) -> Corpus:
    digest = hashlib.sha256()
    for text in texts + (pairs or []):
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return Corpus(
        path=Path(IN_MEMORY),
        texts=list(texts),
        ids=[str(row) for row in range(len(texts))],
        text_col=TEXT_COL,
        id_col=None,
        labels={},
        split=None,
        sha256=digest.hexdigest(),
        pair_texts=list(pairs) if pairs is not None else None,
        pair_col=PAIR_COL if pairs is not None else None,
    )


class MemorySink:
    """The batch loop's sink (``threads.Sink``) that keeps every pooled dataset in memory: ``{path: (rows, L, W)}``."""

    def __init__(self, plan, n_rows: int, word_offsets: np.ndarray | None = None):
        dtype = np.dtype(plan.store_dtype)
        self.arrays = {
            path: np.zeros((n_rows, len(site.layers), site.width), dtype=dtype)
            for site in plan.sites
            for path in site.pooled_paths.values()
        }
        # word inputs: each word vector dataset flat over the words, row r owning word_offsets[r]:word_offsets[r+1]
        self.word_offsets = word_offsets
        self.word_paths = set(plan.word_paths)
        if self.word_paths and word_offsets is None:
            raise ValueError("word vectors need the corpus's word offsets")
        shape = (len(plan.hidden.layers), plan.hidden.width)
        for path in plan.word_paths:
            self.arrays[path] = np.zeros((int(word_offsets[-1]), *shape), dtype=dtype)  # type: ignore[index]
        self._rows_done = 0

    def _span(self, path: str, start: int, stop: int) -> slice:
        """Where rows ``[start, stop)`` sit in ``path``'s array: the rows, or (word vectors) their words."""
        if path in self.word_paths:
            offsets = self.word_offsets
            assert offsets is not None
            return slice(int(offsets[start]), int(offsets[stop]))
        return slice(start, stop)

    @property
    def rows_done(self) -> int:
        return self._rows_done

    def batches_done(self, window_start: int) -> int:
        return 0  # nothing to resume in memory

    def read_window(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        for path, buffer in values.items():
            buffer[...] = self.arrays[path][self._span(path, start, stop)]

    def write_window(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        for path, rows in values.items():
            self.arrays[path][self._span(path, start, stop)] = rows

    def commit(self, rows_done: int) -> None:
        self._rows_done = rows_done

    def commit_batches(self, window_start: int, batches_done: int) -> None:
        pass


class Embeddings:
    """Pooled features of in-memory texts: ``array(layer, pooling, site)`` is a float32 ``(rows, width)`` array.

    ``layers`` and ``poolings`` are the hidden site's; ``sites`` every site held (``pair_b``: side b of
    separate-mode pairs); ``model`` says what computed them (model, weights' sha256, dtypes, lengths, featx version).
    """

    def __init__(self, arrays: dict, layouts: Sequence, model: dict, rows: int):
        self._arrays = arrays
        self._layouts = {layout.name: layout for layout in layouts}
        self.model = model
        self.rows = rows

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
        resolved = int(layer) + top if int(layer) < 0 else int(layer)
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


def model_info(loaded, plan) -> dict:
    """What computed a set of embeddings (JSON-ready)."""
    from ..model.devices import dtype_name

    return {
        "model": loaded.name,
        "model_path": loaded.path,
        "model_sha256": loaded.weights_sha256,
        "compute_dtype": dtype_name(loaded.dtype),
        "store_dtype": plan.store_dtype,
        "max_length": int(loaded.max_length),
        "long": plan.long_inputs,
        "stride": plan.window.stride if plan.window else None,
        "n_model_layers": int(loaded.n_layers),
        "blocks_run": int(plan.blocks_run),
        "implementation": loaded.implementation,
        "causal": bool(loaded.causal),
        "featx_version": __version__,
    }


def encode(loaded, config: ExtractConfig, texts: list[str], pairs: list[str] | None = None) -> Embeddings:
    """Run ``config``'s extraction of ``texts`` (and ``pairs``) with an already loaded model, into memory.

    ``texts`` and ``pairs`` are checked lists (``as_texts``); ``loaded.max_length`` is the length used."""
    from ..forward.runner import Runner
    from ..run import loop
    from ..run.resolve import resolve_plan
    from ..tokens.word_tokens import tokenize_input

    corpus = _corpus(texts, pairs)
    plan = resolve_plan(config, corpus.sha256, loaded)
    tokenized = tokenize_input(loaded, corpus, plan)
    sink = MemorySink(plan, len(corpus))
    runner = Runner(loaded, plan)
    loop.run(plan, sink, tokenized, runner, plan.pad_id, pin_memory=loaded.device.type == "cuda")
    return Embeddings(sink.arrays, plan.sites, model_info(loaded, plan), len(corpus))


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
    text_list = as_texts(texts, "texts")
    pair_list = as_texts(text_pairs, "text_pairs") if text_pairs is not None else None
    config = embed_config(text_list, pair_list, **{"pair_mode": None, **embed_options(options)})
    from ..model.loading import load_configured

    return encode(load_configured(config), config, text_list, pair_list)


embed.__doc__ = (embed.__doc__ or "") + keyword_doc(ExtractConfig, EMBED_KEYWORDS, EMBED_DEFAULTS)

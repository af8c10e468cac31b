"""The one in-memory pipeline of ``embed`` (texts, pairs) and ``encode_words`` (sentences of words).

The same path as ``featx extract``: an ``ExtractConfig``, the ``ExtractionPlan``, the tokenisation, the batch loop
and the ``Runner``, with the HDF5 writer replaced by arrays in memory (``MemorySink``), so the values are bit for bit
what ``featx extract`` with the same options stores (``store_dtype="float16"`` rounds as the file does) and the pass
stops after the highest requested layer (``forward/truncation.py``). The kind of input is the corpus's: a
``Corpus`` of texts (``memory_corpus``), or one with ``words`` (a ``WordTable``) for word vectors.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._version import __version__
from ...errors import InputError
from ...store import HIDDEN_SITE
from ..config import ExtractConfig
from ..inputs.corpus import IN_MEMORY, Corpus
from ..inputs.treebank import WordTable
from ..plan import ExtractionPlan

TEXT_COL, PAIR_COL = "text", "text_pair"


def memory_corpus(
    texts: list[str], keys: list[str], pairs: list[str] | None = None, words: WordTable | None = None
) -> Corpus:
    """The ``Corpus`` of checked in-memory ``texts`` (with their second texts ``pairs``, or their ``words``), rows
    numbered from 0; its digest is over ``keys`` (what identifies the input), each followed by a NUL byte."""
    digest = hashlib.sha256()
    for key in keys:
        digest.update(key.encode("utf-8", "surrogatepass") + b"\0")
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
        words=words,
    )


class MemorySink:
    """The batch loop's sink (``threads.Sink``, written commit block by commit block) that keeps every pooled
    dataset in memory: ``{path: (rows, L, W)}``."""

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

    def batches_done(self, block_start: int) -> int:
        return 0  # nothing to resume in memory

    def read_block(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        for path, buffer in values.items():
            buffer[...] = self.arrays[path][self._span(path, start, stop)]

    def write_block(self, start: int, stop: int, values: dict[str, np.ndarray]) -> None:
        for path, rows in values.items():
            self.arrays[path][self._span(path, start, stop)] = rows

    def commit(self, rows_done: int) -> None:
        self._rows_done = rows_done

    def commit_batches(self, block_start: int, batches_done: int) -> None:
        pass


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


@dataclass(frozen=True)
class MemoryRun:
    """What an in-memory run computed: the plan, every dataset as an array (``{path: array}``), the word offsets of
    a word input (else None), ``model_info`` and which rows were truncated."""

    plan: ExtractionPlan
    arrays: dict
    word_offsets: np.ndarray | None
    model: dict
    truncated: np.ndarray  # (rows,) bool: each row cut at the maximum length (extract's "N truncated")


def run_in_memory(loaded, config: ExtractConfig, corpus: Corpus) -> MemoryRun:
    """Run ``config``'s extraction of ``corpus`` (``memory_corpus``) with an already loaded model, into memory;
    a corpus with words must ask for word vectors."""
    from ..forward.runner import Runner
    from ..run import loop
    from ..run.resolve import resolve_plan
    from ..tokens.word_tokens import tokenize_input

    plan = resolve_plan(config, corpus.sha256, loaded)
    if corpus.words is not None and (HIDDEN_SITE not in [site.name for site in plan.sites] or not plan.word_poolings):
        raise InputError("no word vectors were asked for", "give word_pooling=first, last or mean")
    tokenized = tokenize_input(loaded, corpus, plan)
    sink = MemorySink(plan, len(corpus), tokenized.word_offsets)
    runner = Runner(loaded, plan)
    loop.run(plan, sink, tokenized, runner, plan.pad_id, pin_memory=loaded.device.type == "cuda")
    return MemoryRun(plan, sink.arrays, tokenized.word_offsets, model_info(loaded, plan), tokenized.rows_truncated)


__all__ = [
    "IN_MEMORY",
    "PAIR_COL",
    "TEXT_COL",
    "MemoryRun",
    "MemorySink",
    "memory_corpus",
    "model_info",
    "run_in_memory",
]

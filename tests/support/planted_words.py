"""An in-memory word-level source (the word methods of ``FeatureFile``) with planted signal, for the
word-probing tests: every word's tag is a function of its type, and the tag is written into chosen layers."""

from __future__ import annotations

import numpy as np

TAGS = ["NOUN", "VERB", "DET", "ADJ"]
RELATIONS = ["nsubj", "obj", "det", "amod", "root"]


class PlantedWords:
    """``n_sentences`` sentences of 3-9 words over ``n_types`` word types; each type has one tag (its
    ``upos``), relations are random, heads point to another word of the sentence (one root each)."""

    def __init__(
        self,
        n_sentences: int = 120,
        n_types: int = 40,
        layers: int = 4,
        hidden: int = 8,
        signal: dict[int, float] | None = None,
        split: bool = True,
        seed: int = 0,
        arc_signal: int | None = None,
    ):
        rng = np.random.default_rng(seed)
        lengths = rng.integers(3, 10, size=n_sentences)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        n = int(self.offsets[-1])
        self.sentence = np.repeat(np.arange(n_sentences), lengths).astype(np.int64)
        self.types = rng.integers(0, n_types, size=n)
        type_tag = rng.integers(0, len(TAGS), size=n_types)
        self.upos = type_tag[self.types].astype(np.int32)
        self.forms = [f"W{t}" if i % 2 else f"w{t}" for i, t in enumerate(self.types)]  # case must not matter
        self.heads = np.full(n, -1, np.int32)
        for s in range(n_sentences):
            start, stop = self.offsets[s], self.offsets[s + 1]
            root = rng.integers(0, stop - start)
            for i in range(stop - start):
                if i != root:
                    self.heads[start + i] = rng.choice([j for j in range(stop - start) if j != i])
        self.deprel = rng.integers(0, len(RELATIONS) - 1, size=n).astype(np.int32)
        self.deprel[self.heads < 0] = len(RELATIONS) - 1
        self.layers = list(range(layers))
        self.n_rows = n_sentences
        self.ids = [f"s{i}" for i in range(n_sentences)]
        self.split = (
            np.array(["test" if s % 4 == 0 else "train" for s in range(n_sentences)], dtype=object) if split else None
        )
        self.label_columns: list[str] = []
        self.attrs = {"model": "planted"}
        self.path = "planted"
        self.states = {}
        signal = signal or {}
        for pooling in ("first", "last", "mean"):
            data = rng.standard_normal((n, layers, hidden)).astype(np.float32)
            for layer, strength in signal.items():
                data[np.arange(n), layer, self.upos] += strength
                if arc_signal == layer:  # a dependent's vector also says which relation it bears
                    data[np.arange(n), layer, len(TAGS) + self.deprel % (hidden - len(TAGS))] += strength
            self.states[pooling] = data

    has_words = True

    def word_poolings(self):
        return ["first", "last", "mean"]

    def word_offsets(self):
        return self.offsets

    def word_sentence(self):
        return self.sentence

    def word_forms(self):
        return list(self.forms)

    def word_features(self, pooling, layer, dtype=np.float32):
        return self.states[pooling][:, layer, :].astype(dtype)

    def word_label_columns(self):
        return ["upos", "deprel"]

    def word_labels(self, column):
        return {"upos": self.upos, "deprel": self.deprel}[column].copy()

    def word_label_names(self, column):
        return list(TAGS) if column == "upos" else list(RELATIONS)

    def word_heads(self):
        return self.heads.copy()

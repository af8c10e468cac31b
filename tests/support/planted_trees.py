"""An in-memory treebank source (the word methods of ``FeatureFile``) whose chosen layer encodes every sentence's
dependency tree exactly, for the structural probe tests.

Each sentence is a random tree. At ``exact_layer`` a word's vector is the sum of one unit vector per edge on its
path from the root (the edge into word ``k`` is axis ``k``), so that ``||h_i - h_j||^2`` is the tree distance of
``i`` and ``j`` and ``||h_i||^2`` the depth of ``i``: a structural probe can read both exactly. The other layers
are noise."""

from __future__ import annotations

import numpy as np

TAGS = ["NOUN", "VERB", "PUNCT"]


class PlantedTrees:
    def __init__(
        self,
        n_sentences: int = 40,
        layers: int = 2,
        exact_layer: int = 1,
        split: bool = True,
        seed: int = 0,
        lengths: tuple[int, int] = (5, 10),
    ):
        rng = np.random.default_rng(seed)
        lengths = rng.integers(*lengths, size=n_sentences)  # each sentence's words, from lengths[0] to lengths[1] - 1
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        n, hidden = int(self.offsets[-1]), int(lengths.max())
        self.heads = np.full(n, -1, np.int32)
        exact = np.zeros((n, hidden), np.float32)
        for s, length in enumerate(lengths.tolist()):
            start = int(self.offsets[s])
            order = rng.permutation(length)
            for position in range(1, length):  # each word attaches to one placed before it
                word, head = int(order[position]), int(order[rng.integers(position)])
                self.heads[start + word] = head
            for word in order.tolist():  # parents first: a word's vector is its head's plus its own edge
                head = int(self.heads[start + word])
                if head >= 0:
                    exact[start + word] = exact[start + head]
                    exact[start + word, word] = 1.0
        self.upos = rng.integers(0, 2, size=n).astype(np.int32)  # no punctuation unless a test plants it
        self.layers = list(range(layers))
        self.n_rows = n_sentences
        self.ids = [f"s{i}" for i in range(n_sentences)]
        self.split = np.array(["test" if s % 4 == 0 else "train" for s in range(n_sentences)], dtype=object)
        self.split = self.split if split else None
        self.attrs = {"model": "planted"}
        self.path = "planted-trees"
        noise = rng.standard_normal((n, layers, hidden)).astype(np.float32)
        noise[:, exact_layer] = exact
        self.states = noise

    has_words = True

    def word_poolings(self):
        return ["mean"]

    def word_offsets(self):
        return self.offsets

    def word_sentence(self):
        return np.repeat(np.arange(self.n_rows), np.diff(self.offsets))

    def word_forms(self):
        return [f"w{i}" for i in range(int(self.offsets[-1]))]

    def word_features(self, pooling, layer, dtype=np.float32):
        return self.states[:, layer, :].astype(dtype)

    def word_label_columns(self):
        return ["upos"]

    def word_labels(self, column):
        return self.upos.copy()

    def word_label_names(self, column):
        return list(TAGS)

    def word_heads(self):
        return self.heads.copy()

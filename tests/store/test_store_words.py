"""The word-level datasets of a features file: written window by window, read back through
``FeatureFile``'s word API, and refused with a clear StoreError when hostile."""

from __future__ import annotations

from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from featx.errors import InputError, StoreError
from featx.store import HEAD_UNKNOWN, FeatureFile, FeatureWriter, hidden_layout, schema

SENTENCE_WORDS = [3, 1, 4, 2]  # words of each of the four sentences


def _label(codes, names):
    return SimpleNamespace(codes=np.asarray(codes, dtype=np.int32), names=names)


class _Sentences:
    """The least the writer needs of a corpus of words and its tokenisation (duck-typed)."""

    def __init__(self):
        n = len(SENTENCE_WORDS)
        self.texts = [f"sentence {i}" for i in range(n)]
        self.ids = [f"s{i}" for i in range(n)]
        self.split = ["dev", "dev", "test", "test"]
        self.labels = {}
        offsets = np.r_[0, np.cumsum(SENTENCE_WORDS)].astype(np.int64)
        n_words = int(offsets[-1])
        heads = np.concatenate([np.r_[-1, np.zeros(k - 1, np.int32)] for k in SENTENCE_WORDS]).astype(np.int32)
        heads[-1] = HEAD_UNKNOWN  # a word whose head the input did not give ('_'), stored apart from the root
        self.words = SimpleNamespace(
            offsets=offsets,
            forms=[f"w{i}" for i in range(n_words)],
            heads=heads,
            labels={
                "upos": _label(np.arange(n_words) % 3, ["ADJ", "NOUN", "VERB"]),
                "feats.Number": _label(np.where(np.arange(n_words) % 2, 0, -1), ["Sing"]),
            },
        )
        self.n_subwords = np.arange(n_words, dtype=np.int32) % 2 + 1
        lengths = np.asarray(SENTENCE_WORDS) + 2
        self.offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        self.full_lengths = lengths.astype(np.int32)
        self.lengths = lengths.astype(np.int32)
        self.input_ids = np.zeros(int(self.offsets[-1]), np.int32)
        self.word_ids = None

    def __len__(self):
        return len(self.texts)

    @property
    def truncated(self):
        return self.lengths < self.full_lengths


def write_words_file(path, commit_rows=None):
    """A small file of word inputs: two layers of width 4, word poolings first and mean."""
    sentences = _Sentences()
    writer = FeatureWriter.create(
        path,
        {schema.FINGERPRINT: "fp"},
        sentences,
        sentences,
        [hidden_layout([0, 2], 4, ["mean"])],
        np.float32,
        False,
        word_poolings=("first", "mean"),
    )
    rng = np.random.default_rng(0)
    n_words = int(sentences.words.offsets[-1])
    words = {f"words/pooled/{p}": rng.normal(size=(n_words, 2, 4)).astype(np.float32) for p in ("first", "mean")}
    rows = {"pooled/mean": rng.normal(size=(4, 2, 4)).astype(np.float32)}
    offsets = sentences.words.offsets
    stops = [2, 4] if commit_rows is None else [commit_rows]
    start = 0
    for stop in stops:  # two commit blocks, as the extraction writes them
        values = {path: v[start:stop] for path, v in rows.items()}
        values.update({path: v[offsets[start] : offsets[stop]] for path, v in words.items()})
        writer.write_block(start, stop, values)
        writer.commit(stop)
        start = stop
    if commit_rows is None:
        writer.finish()
    else:
        writer.close()
    return sentences, words


def test_reader_api_on_a_written_file(tmp_path):
    sentences, words = write_words_file(tmp_path / "w.h5")
    with FeatureFile(tmp_path / "w.h5") as features:
        assert features.has_words and features.word_poolings() == ["first", "mean"]
        np.testing.assert_array_equal(features.word_offsets(), sentences.words.offsets)
        np.testing.assert_array_equal(features.word_sentence(), np.repeat(np.arange(4), SENTENCE_WORDS))
        assert features.word_forms() == sentences.words.forms
        np.testing.assert_array_equal(features.word_features("first", 2), words["words/pooled/first"][:, 1])
        np.testing.assert_array_equal(features.word_features("mean", -1), words["words/pooled/mean"][:, 1])
        assert features.word_label_columns() == ["upos", "feats.Number"]
        np.testing.assert_array_equal(
            features.word_labels("feats.Number"), sentences.words.labels["feats.Number"].codes
        )
        assert features.word_label_names("upos") == ["ADJ", "NOUN", "VERB"]
        np.testing.assert_array_equal(features.word_heads(), sentences.words.heads)
        np.testing.assert_array_equal(features.word_n_subwords(), sentences.n_subwords)
        assert list(features.split) == sentences.split and features.n_rows == 4
        with pytest.raises(InputError, match="word pooling 'last' is not stored"):
            features.word_features("last", 0)
        with pytest.raises(InputError, match="no word label column 'ner'"):
            features.word_labels("ner")


def test_a_partial_file_shows_the_words_of_its_committed_rows(tmp_path):
    sentences, words = write_words_file(tmp_path / "w.h5", commit_rows=2)
    with FeatureFile(tmp_path / "w.h5", allow_partial=True) as features:
        assert features.n_rows == 2 and len(features.word_forms()) == 4
        np.testing.assert_array_equal(features.word_features("mean", 0), words["words/pooled/mean"][:4, 0])
        assert len(features.word_heads()) == 4 == len(features.word_labels("upos")) == len(features.word_sentence())


def test_a_file_without_words_says_so(tmp_path):
    from support.store_files import write_store_file

    path, _ = write_store_file(tmp_path)
    with FeatureFile(path) as features:
        assert not features.has_words
        with pytest.raises(InputError, match="no word-level features"):
            features.word_offsets()


def _tamper(path, change):
    with h5py.File(path, "r+") as file:
        change(file)


def _replace(name, data):
    def change(file):
        del file[name]
        file.create_dataset(name, data=data)

    return change


HOSTILE = {
    "offsets not ending at n_words": (_replace("words/offsets", np.array([0, 3, 4, 8, 9])), "non-decreasing run"),
    "offsets going back": (_replace("words/offsets", np.array([0, 3, 2, 8, 10])), "non-decreasing run"),
    "offsets of another row count": (_replace("words/offsets", np.array([0, 3, 10])), "words/offsets"),
    "a head outside its sentence": (
        _replace("words/head", np.r_[np.full(9, -1), 2].astype(np.int32)),
        "word 9 has head 2, outside its sentence of 2 words",
    ),
    "a head below -2 (unknown)": (_replace("words/head", np.full(10, -3, np.int32)), "outside its sentence"),
    "word vectors of another width": (
        _replace("words/pooled/first", np.zeros((10, 2, 5), np.float32)),
        "words/pooled/first",
    ),
    "word vectors of another dtype than store_dtype": (
        _replace("words/pooled/mean", np.zeros((10, 2, 4), np.float16)),
        "dataset 'words/pooled/mean' has dtype float16, but the file's store_dtype is float32",
    ),
    "a missing word pooling": (lambda f: f.__delitem__("words/pooled/mean"), "words/pooled/mean' is missing"),
    "an unknown word pooling": (lambda f: f.attrs.__setitem__("word_poolings", '["max"]'), "word_poolings"),
    "n_words not a number": (lambda f: f.attrs.__setitem__("n_words", "ten"), "n_words"),
    "forms of another length": (_replace("words/form", np.array([b"a"] * 3)), "words/form"),
    "label codes beyond the names": (lambda f: f["words/labels/upos"].__setitem__(slice(None), 7), "outside its"),
    "a word label without names": (lambda f: f["words/labels/upos"].attrs.__delitem__("names"), "class names"),
    "words without subwords": (_replace("words/n_subwords", np.zeros(10, np.int32)), "without subwords"),
    "word labels a dataset": (_replace("words/labels", np.zeros(3)), "'words/labels' is not a group"),  # a traceback
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_words_group_is_refused(tmp_path, case):
    write_words_file(tmp_path / "w.h5")
    change, message = HOSTILE[case]
    _tamper(tmp_path / "w.h5", change)
    with pytest.raises(StoreError, match=message):
        FeatureFile(tmp_path / "w.h5")

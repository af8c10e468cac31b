"""The lexical baseline's TF-IDF from counts made once equals scikit-learn's vectorizers fitted per fold."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion
from support.tiny import WORDS

from featx.probing.tasks.lexical import LexicalTexts, featuriser
from featx.probing.tasks.lexical_tfidf import NgramCounts, tfidf_union


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    extra = ["Café", "naïve", "ÉTÉ", "don't", "U.S.", "x", "!!", "42", "émigré's", "snake_case"]
    return [" ".join(rng.choice(WORDS + extra) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def _reference(fit_texts: list[str]) -> FeatureUnion:
    word = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    char = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=2)
    return FeatureUnion([("words", word), ("chars", char)]).fit(fit_texts)


def _same(a, b) -> None:
    assert a.shape == b.shape
    assert abs(sparse.csr_matrix(a) - sparse.csr_matrix(b)).max() < 1e-12


@pytest.mark.parametrize("seed", [0, 1])
def test_each_fold_equals_vectorizers_fitted_on_its_training_texts(seed):
    texts = _texts(120, seed) + ["Same text twice", "same TEXT twice"]
    train = np.sort(np.random.default_rng(seed).choice(len(texts), 90, replace=False))
    test = np.setdiff1d(np.arange(len(texts)), train)
    reference = _reference([texts[i] for i in train])
    transform = tfidf_union(NgramCounts.of(texts), train)
    for rows in (train, test, test[:1]):
        _same(transform(rows), reference.transform([texts[i] for i in rows]))


def test_pairs_fit_one_vocabulary_on_both_sides():
    a, b = _texts(60, 2), _texts(60, 3)
    train, test = np.arange(0, 60, 2), np.arange(1, 60, 2)
    reference = _reference([a[i] for i in train] + [b[i] for i in train])
    got = featuriser(LexicalTexts(a, b), train)(test)
    ra, rb = (reference.transform([side[i] for i in test]) for side in (a, b))
    _same(got, sparse.hstack([ra, rb, abs(ra - rb)]))


def test_no_term_in_two_training_texts_is_a_value_error():
    texts = ["alpha", "beta", "gamma delta", "alpha beta"]
    with pytest.raises(ValueError, match="no terms remain"):
        tfidf_union(NgramCounts.of(texts), np.array([0]))


def test_char_wb_counts_per_distinct_word_are_scikit_learns():
    """Counted per distinct word, the char_wb n-gram counts are CountVectorizer's matrix: the same columns and
    counts (whitespace runs, tabs and newlines, case, accents, one-letter and long words, an empty text)."""
    from sklearn.feature_extraction.text import CountVectorizer

    from featx.probing.tasks.lexical_tfidf import CHAR_NGRAMS, char_wb_counts

    texts = [
        "The cat  sat\ton the mat.",
        "",
        "A b c Élan ÉLAN élan   naïve\nCAFÉ",
        "supercalifragilistic words, words; words!",
        "  leading and trailing  ",
        "x",
    ]
    expected = CountVectorizer(analyzer="char_wb", ngram_range=CHAR_NGRAMS).fit_transform(texts)
    got = char_wb_counts(texts)
    assert sparse.issparse(got) and got.format == "csr"
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert (got != expected).nnz == 0

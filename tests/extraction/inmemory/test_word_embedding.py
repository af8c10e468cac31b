"""``encode_words``: word vectors of in-memory sentences, as ``featx extract`` stores them for a word input, with
the forward pass cut at the highest layer asked for."""

from __future__ import annotations

import numpy as np
import pytest
from support.report_runs import treebank

import featx
from featx.errors import InputError
from featx.extraction.inmemory.words import as_sentences, encode_words, word_config
from featx.extraction.model.loading import load_configured


@pytest.mark.parametrize("pooling", ["first", "last", "mean"])
def test_in_memory_words_equal_the_extracted_file(tiny_model, tmp_path, pooling):
    conllu = treebank(tmp_path / "toy.conllu", 12, 3, "s")
    extracted = featx.extract(conllu, model=str(tiny_model), output=tmp_path / "toy.h5", store_dtype="float32")
    with featx.open(extracted.output) as file:
        offsets, forms = file.word_offsets(), file.word_forms()
        stored = file.word_features(pooling, 1)
    sentences = [forms[offsets[s] : offsets[s + 1]] for s in range(len(offsets) - 1)]
    options = {"layers": "1", "poolings": "mean", "word_pooling": pooling, "store_dtype": "float32"}
    config = word_config(model=str(tiny_model), **options)
    vectors = encode_words(load_configured(config), config, as_sentences(sentences))
    np.testing.assert_allclose(vectors.array(1, pooling), stored, rtol=1e-5, atol=1e-6)
    assert np.array_equal(vectors.word_offsets, offsets)
    assert vectors.model["blocks_run"] == 1  # embeddings plus one block: layer 1 is the highest asked for
    with pytest.raises(InputError, match="layer 2, word pooling 'first' was not encoded"):
        vectors.array(2, "first")


def test_strings_are_split_on_whitespace_and_bad_sentences_refused():
    assert as_sentences(["the  cat\tsat", ("a", "b")]) == [["the", "cat", "sat"], ["a", "b"]]
    for bad, message in [
        ([""], r"sentences\[0\] has no words"),
        ([["ok"], ["", "x"]], r"sentences\[1\] has an empty word"),
        ([None], r"sentences\[0\] is a NoneType"),
        ({"a": 1}, "is a dict, not a list of sentences"),
    ]:
        with pytest.raises(InputError, match=message):
            as_sentences(bad)

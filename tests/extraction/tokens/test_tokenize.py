import numpy as np
from support.tiny import SENTENCES
from transformers import AutoTokenizer

from featx.extraction.tokens.tokenize import tokenize_texts

TEXTS = [row[0] for row in SENTENCES]


def test_chunks_give_the_same_flat_arrays_as_one_pass(tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    whole = tokenize_texts(tokenizer, TEXTS, 10, with_word_ids=True)
    chunked = tokenize_texts(tokenizer, TEXTS, 10, with_word_ids=True, chunk_size=5)
    for name in ("input_ids", "offsets", "full_lengths", "word_ids"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(chunked, name))
    assert whole.input_ids.dtype == np.int32 and whole.word_ids.dtype == np.int32
    for row, text in enumerate(TEXTS):
        expected = tokenizer(text, truncation=True, max_length=10)["input_ids"]
        assert chunked.row(row).tolist() == expected
    assert chunked.truncated.any() and (chunked.lengths <= 10).all()

"""Shared fixtures: tiny random BERT models saved to disk so the real loading code runs."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True, scope="session")
def _featx_cache_dir(tmp_path_factory):
    """The weight-fingerprint cache of a test run lives in a temporary folder, never in ~/.cache."""
    previous = os.environ.get("FEATX_CACHE_DIR")
    os.environ["FEATX_CACHE_DIR"] = str(tmp_path_factory.mktemp("featx-cache"))
    yield
    if previous is None:
        os.environ.pop("FEATX_CACHE_DIR", None)
    else:
        os.environ["FEATX_CACHE_DIR"] = previous


WORDS = ["the", "a", "an", "cat", "cats", "dog", "dogs", "film", "films", "critic", "critics", "teacher", "teachers", "plan", "plans", "will", "did", "do", "does", "not", "is", "are", "was", "were", "be", "love", "loved", "loves", "hate", "hated", "hates", "good", "bad", "great", "awful", "today", "yesterday", "tomorrow", "and", "or", "but", "very", "really", "quite", "new", "old", "red", "blue", "green", "this", "that", "these", "those", "it", "they", "we", "you", "i", "he", "she", "walk", "walked", "walks", "run", "ran", "runs", "see", "saw", "sees", "book", "books", "city", "cities", "house", "houses", "?", ".", ",", "!"]


def _vocab() -> list[str]:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789")
    pieces = ["##" + letter for letter in letters]
    words = [word for word in dict.fromkeys(WORDS) if word not in letters]
    return specials + letters + pieces + words


def build_tiny_bert(folder: Path, layers: int = 2, hidden: int = 32, seed: int = 0, max_positions: int = 64) -> Path:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(_vocab()) + "\n")
    vocab = {token: index for index, token in enumerate(_vocab())}
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=True, model_max_length=max_positions)
    tokenizer.save_pretrained(str(folder))
    config = BertConfig(
        vocab_size=len(_vocab()),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=hidden * 2,
        max_position_embeddings=max_positions,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    model = BertModel(config)
    model.save_pretrained(str(folder), safe_serialization=True)
    return folder


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 2-layer, 32-dim random BERT with a small WordPiece vocabulary, saved like a hub folder."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


SENTENCES = [
    ("the cat loved the film", "pos", "past", "train"),
    ("the critics hated the plans", "neg", "past", "train"),
    ("a dog will love this book", "pos", "future", "train"),
    ("the teachers do not see the city", "neg", "present", "train"),
    ("it is a very good house", "pos", "present", "train"),
    ("they walked to the red house yesterday and it was really great", "pos", "past", "train"),
    ("she hates awful films", "neg", "present", "test"),
    ("we saw new books today", "pos", "past", "test"),
    ("he will not run tomorrow", "neg", "future", "test"),
    ("zebra quokka xylophone", "neg", "present", "test"),
    ("blue", "pos", "present", "train"),
    ("the old dog runs and the new cat walks and the red critic sees the blue plan today", "neg", "present", "test"),
]


def write_csv(path: Path, rows, header=("text", "sentiment", "tense", "split")) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def corpus_csv(tmp_path) -> Path:
    return write_csv(tmp_path / "corpus.csv", SENTENCES)


@pytest.fixture
def minilm_path() -> Path:
    from featx.extraction.modeling import default_model_path

    return default_model_path()

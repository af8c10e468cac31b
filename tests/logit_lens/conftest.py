"""Tiny models with their heads (GPT-2, Llama, Qwen2, Gemma, BERT- and RoBERTa-MLM), built once per session, and a
small corpus."""

from __future__ import annotations

import pytest
from support.lens_models import build_with_head, lens_corpus
from support.prompt_models import add_chat_template


@pytest.fixture(scope="session")
def head_models(tmp_path_factory):
    """A function of a family name giving its saved tiny model with a head (each built on first use; Qwen2's
    tokenizer with its ChatML chat template, as Qwen2 ships it)."""
    built = {}

    def get(name: str):
        if name not in built:
            built[name] = build_with_head(name, tmp_path_factory.mktemp(f"lens-{name}"))
            if name == "qwen2":
                add_chat_template(built[name])
        return built[name]

    return get


@pytest.fixture
def corpus(tmp_path):
    return lens_corpus(tmp_path / "corpus.csv", rows=12)

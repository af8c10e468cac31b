"""Tiny random models with their heads for the logit lens tests: the zoo's GPT-2, Llama, Mistral, Qwen2, Qwen3 and Gemma
saved as their ``*ForCausalLM`` / ``GPT2LMHeadModel`` classes, and the zoo's BERT, RoBERTa and XLM-R as their
``*ForMaskedLM``; a small
labelled corpus whose answers (``" good"``, ``" bad"``) are single tokens of the zoo's tokenizers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.families import BY_NAME, build_family
from support.tiny import SENTENCES, write_csv

HEADS = {
    "gpt2": "GPT2LMHeadModel",
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "gemma": "GemmaForCausalLM",
    "bert": "BertForMaskedLM",
    "roberta": "RobertaForMaskedLM",
    "xlm-roberta": "XLMRobertaForMaskedLM",
}


def build_with_head(name: str, folder: Path, seed: int = 0, **config: object) -> Path:
    """The zoo family ``name`` saved with its LM (or MLM) head; ``config`` overrides its config arguments."""
    family = BY_NAME[name]
    family = replace(family, model=HEADS[name], config_args={**family.config_args, **config})
    return build_family(family, folder, seed)


def lens_corpus(path: Path, rows: int = 24) -> Path:
    """``rows`` labelled rows (sentiment pos/neg, a train/test split with both classes on each side), texts of
    several lengths so that batches hold neighbours of other lengths."""
    out = []
    for index in range(rows):
        text, sentiment = SENTENCES[index % len(SENTENCES)][:2]
        out.append((text, sentiment, "past", "test" if index % 3 == 0 else "train"))
    return write_csv(path, out)

"""Tiny models for the prompt tests: a SentencePiece-style Llama (``▁`` word marks, BOS from the post-processor),
a chat template (ChatML, as Qwen2 ships it) given to a zoo tokenizer, and a plain-forward reference of prompts
that finds its token positions from the Hugging Face tokenizer's own offsets (not featx's code).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from support.families import DECODER
from support.tiny import SENTENCES, WORDS

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PROMPT_WORDS = "Review: Sentiment: Answer: Question: Be brief. user assistant system"


def build_sentencepiece_llama(folder: Path, seed: int = 0) -> Path:
    """A random 2-layer Llama whose tokenizer marks words with ``▁`` (Metaspace, as SentencePiece does)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaModel, PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    alphabet = sorted(set("".join(row[0] for row in SENTENCES) + PROMPT_WORDS + "\n:?.,!{}()▁" + "".join(WORDS)))
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False, initial_alphabet=alphabet
    )
    backend.train_from_iterator([row[0] for row in SENTENCES] + [" ".join(WORDS), PROMPT_WORDS] * 3, trainer=trainer)
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=64,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        model_input_names=["input_ids", "attention_mask"],
    )
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(folder))
    config = LlamaConfig(vocab_size=backend.get_vocab_size(), bos_token_id=1, eos_token_id=2, **DECODER)
    torch.manual_seed(seed)
    LlamaModel(config).eval().save_pretrained(str(folder), safe_serialization=True)
    return folder


def add_chat_template(folder: Path, template: str = CHATML) -> Path:
    """Give the tokenizer saved in ``folder`` a chat template."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.chat_template = template
    tokenizer.save_pretrained(str(folder))
    return folder


def prompt_reference(folder: Path, prompts, spans, marker: str | None, add_special_tokens: bool = True):
    """Per-prompt plain forward (no padding): ``{pooling: (rows, layers, hidden)}`` for last, mean, at (the token
    holding the marker's last character, else the last), span_mean, span_max and span_last (tokens whose
    offsets overlap the span ``(start, end)``, special tokens excluded)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    out: dict[str, list] = {name: [] for name in ("last", "mean", "at", "span_mean", "span_max", "span_last")}
    for prompt, (first, last) in zip(prompts, spans, strict=True):
        encoded = tokenizer(
            prompt,
            add_special_tokens=add_special_tokens,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_tensors="pt",
        )
        offsets = encoded.pop("offset_mapping")[0].numpy()
        special = encoded.pop("special_tokens_mask")[0].numpy().astype(bool)
        with torch.no_grad():
            hidden = model(**encoded, output_hidden_states=True).hidden_states
        states = torch.stack(hidden, 1)[0].double().numpy()  # (layers, tokens, hidden)
        in_span = np.flatnonzero((offsets[:, 0] < last) & (offsets[:, 1] > first) & ~special)
        at = len(offsets) - 1
        if marker is not None:
            char = prompt.rfind(marker) + len(marker) - 1
            at = int(np.flatnonzero((offsets[:, 0] <= char) & (offsets[:, 1] > char) & ~special)[-1])
        out["last"].append(states[:, -1])
        out["mean"].append(states.mean(1))
        out["at"].append(states[:, at])
        out["span_mean"].append(states[:, in_span].mean(1))
        out["span_max"].append(states[:, in_span].max(1))
        out["span_last"].append(states[:, in_span[-1]])
    return {name: np.stack(values) for name, values in out.items()}

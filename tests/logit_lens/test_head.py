"""The logit lens equals ``final_norm(h_l) @ W_U`` computed by hand from a plain transformers forward, at every
layer, for GPT-2, Llama, Mistral, Qwen2, Qwen3 and Gemma (Qwen2's prompts in its chat template; Qwen3's attention
has its own query and key norms; Gemma's norm scales by 1 + weight; a BERT-, a RoBERTa- and an XLM-R-MLM: their MLM
heads, each family's tensors by its own names), read from a
featx extraction whose batches pad rows (on the right, whatever the tokenizer's side: Llama's pads left) beside
neighbours of other lengths; the last layer's lens is the model's own logits."""

from __future__ import annotations

import numpy as np
import pytest

from featx.logit_lens import LensConfig, lens_logits, prepare

TEMPLATES = {
    "decoder": "Review: {text}\nSentiment:",
    "bert": "{text} it was [MASK] .",
    "roberta": "{text} it was <mask> .",
}
TEMPLATES["xlm-roberta"] = TEMPLATES["roberta"]
ANSWERS = {"decoder": " the, walk", "bert": "pos=good,neg=bad", "roberta": "pos= the,neg= walk"}
ANSWERS["xlm-roberta"] = ANSWERS["roberta"]
MASKED = ("bert", "roberta", "xlm-roberta")


def _reference(folder, prompts, masked: bool, chat: bool = False):
    """Per prompt, unpadded: every layer's lens by hand and the model's own logits at the answering position."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    loader = AutoModelForMaskedLM if masked else AutoModelForCausalLM
    model = loader.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    lens, own = [], []
    with torch.no_grad():
        for prompt in prompts:
            if chat:  # the chat template's prompt, tokenised as apply_chat_template(tokenize=True) does
                messages = [{"role": "user", "content": prompt}]
                prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=not chat)
            out = model(**encoded, output_hidden_states=True)
            ids = encoded["input_ids"][0].tolist()
            at = ids.index(tokenizer.mask_token_id) if masked else len(ids) - 1
            states = [hidden[0, at] for hidden in out.hidden_states]
            if masked:
                mlm_head = model.cls if hasattr(model, "cls") else model.lm_head
                by_hand = [mlm_head(state) for state in states]
            else:
                norm = model.transformer.ln_f if hasattr(model, "transformer") else model.model.norm
                unembed = model.get_output_embeddings().weight
                by_hand = [norm(state) @ unembed.T for state in states[:-1]] + [states[-1] @ unembed.T]
            lens.append(torch.stack(by_hand).numpy())
            own.append(out.logits[0, at].numpy())
    return np.stack(lens, axis=1), np.stack(own)  # (layers, rows, vocab), (rows, vocab)


LENS_FAMILIES = ["gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma", "bert", "roberta", "xlm-roberta"]


@pytest.mark.parametrize("name", LENS_FAMILIES)
def test_the_lens_is_the_final_norm_and_unembedding_of_every_layer(name, head_models, corpus, tmp_path):
    import torch

    import featx

    kind = name if name in MASKED else "decoder"
    config = LensConfig(
        corpus,
        model=str(head_models(name)),
        template=TEMPLATES[kind],
        answers=ANSWERS[kind],
        label="sentiment",
        output=str(tmp_path / "lens"),
        dtype="float32",
        progress=False,
        chat_template=name == "qwen2",
    )
    prepared = prepare(config)
    summary = featx.extract(config.corpus, **{**prepared.extract_options, "batch_size": 5})
    texts = [line.split(",")[0] for line in corpus.read_text().splitlines()[1:]]
    prompts = [config.template.replace("{text}", text) for text in texts]
    by_hand, own = _reference(head_models(name), prompts, name in MASKED, chat=name == "qwen2")
    answers = lens_logits(summary.output, prepared)
    with featx.open(summary.output) as stored:
        layers, whole = list(stored.layers), ~stored.truncated  # a row cut to fit is not its plain forward
        full = [
            prepared.head.logits(
                torch.from_numpy(stored.features("at", layer)), layer == layers[-1] and kind == "decoder"
            )
            for layer in layers
        ]
    assert layers == list(range(len(by_hand))) and whole.sum() >= len(whole) - (2 if name == "qwen2" else 0)
    worst = max(float(np.abs(full[layer].numpy() - by_hand[layer])[whole].max()) for layer in layers)
    print(name, f"lens {worst:.1e}")
    for layer in layers:
        np.testing.assert_allclose(full[layer].numpy()[whole], by_hand[layer][whole], atol=1e-5, rtol=0)
        np.testing.assert_allclose(answers[layer][whole], by_hand[layer][whole][:, prepared.token_ids], atol=1e-5)
    np.testing.assert_allclose(full[-1].numpy()[whole], own[whole], atol=1e-5, rtol=0)  # the model's own logits

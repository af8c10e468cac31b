"""The logit lens equals ``final_norm(h_l) @ W_U`` computed by hand from a plain transformers forward, at every
layer, for GPT-2, Llama and Qwen2 (a BERT-MLM: its MLM head), read from a featx extraction whose batches pad
rows (on the right, whatever the tokenizer's side: Llama's pads left) beside neighbours of other lengths; the
last layer's lens is the model's own logits."""

from __future__ import annotations

import numpy as np
import pytest

from featx.logit_lens import LensConfig, lens_logits, prepare

TEMPLATES = {"decoder": "Review: {text}\nSentiment:", "mlm": "{text} it was [MASK] ."}
ANSWERS = {"decoder": " the, walk", "mlm": "pos=good,neg=bad"}


def _reference(folder, prompts, masked: bool):
    """Per prompt, unpadded: every layer's lens by hand and the model's own logits at the answering position."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    loader = AutoModelForMaskedLM if masked else AutoModelForCausalLM
    model = loader.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    lens, own = [], []
    with torch.no_grad():
        for prompt in prompts:
            encoded = tokenizer(prompt, return_tensors="pt")
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


@pytest.mark.parametrize("name", ["gpt2", "llama", "qwen2", "bert"])
def test_the_lens_is_the_final_norm_and_unembedding_of_every_layer(name, head_models, corpus, tmp_path):
    import torch

    import featx

    kind = "mlm" if name == "bert" else "decoder"
    config = LensConfig(
        corpus,
        model=str(head_models(name)),
        template=TEMPLATES[kind],
        answers=ANSWERS[kind],
        label="sentiment",
        output=str(tmp_path / "lens"),
        dtype="float32",
        progress=False,
    )
    prepared = prepare(config)
    summary = featx.extract(config.corpus, **{**prepared.extract_options, "batch_size": 5})
    texts = [line.split(",")[0] for line in corpus.read_text().splitlines()[1:]]
    prompts = [config.template.replace("{text}", text) for text in texts]
    by_hand, own = _reference(head_models(name), prompts, kind == "mlm")
    answers = lens_logits(summary.output, prepared)
    with featx.open(summary.output) as stored:
        layers = list(stored.layers)
        full = [
            prepared.head.logits(torch.from_numpy(stored.features("at", layer)), layer == layers[-1] and kind != "mlm")
            for layer in layers
        ]
    assert layers == list(range(len(by_hand)))
    for layer in layers:
        np.testing.assert_allclose(full[layer].numpy(), by_hand[layer], atol=1e-5, rtol=0)
        np.testing.assert_allclose(answers[layer], by_hand[layer][:, prepared.token_ids], atol=1e-5, rtol=0)
    np.testing.assert_allclose(full[-1].numpy(), own, atol=1e-5, rtol=0)  # the last layer: the model's logits

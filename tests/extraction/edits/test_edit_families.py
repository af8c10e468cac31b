"""Every family of the zoo: an edit through ``featx extract --intervene`` equals a plain transformers forward of
each row alone with a hand-written forward hook doing the same arithmetic on block L - 1's output (featx's rows
run in padded batches with neighbours of other lengths)."""

from __future__ import annotations

import pytest
from support.families import FAMILIES
from support.parity import pooled_reference, relative_error, run_family
from support.tiny import SENTENCES

import featx
from featx.extraction import ModelInfo, parse_intervention, resolve_edits

TOLERANCE = 1e-5
BLOCKS = {
    "distilbert": "transformer.layer",
    # transformers records ALBERT's hidden states at its inner layer (one module called once per layer)
    "albert": "encoder.albert_layer_groups.0.albert_layers",
    "modernbert": "layers",
    "t5-encoder": "encoder.block",
    "t5-encoder-only": "encoder.block",
    "bart-encoder": "layers",
    "gpt2": "h",
    "llama": "layers",
    "mistral": "layers",
    "qwen2": "layers",
    "gemma": "layers",
}


def hooked_reference(family, folder, texts, edit, layer):
    """Per-row plain forward, with a forward hook on block call ``layer - 1`` replacing its output by
    ``x - ((x - mean) @ right.T) @ left.T + shift`` (float64 arrays, computed in float32)."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = getattr(transformers, family.reference).from_pretrained(str(folder), dtype=torch.float32).eval()
    model = model.get_encoder() if family.encoder_of else model
    mean, left, right, shift = (
        torch.tensor(a, dtype=torch.float32) for a in (edit.mean, edit.left, edit.right, edit.shift)
    )
    calls = []

    def hook(module, args, output):
        calls.append(1)
        if len(calls) != layer:
            return None
        x = output if isinstance(output, torch.Tensor) else output[0]
        edited = x - ((x - mean) @ right.T) @ left.T + shift
        return edited if isinstance(output, torch.Tensor) else (edited, *output[1:])

    block = model.get_submodule(BLOCKS.get(family.name, "encoder.layer"))[0]  # ALBERT: its one shared layer
    handle = block.register_forward_hook(hook)
    states = []
    with torch.no_grad():
        for text in texts:
            calls.clear()
            encoded = tokenizer(text, return_tensors="pt")
            hidden = model(**encoded, output_hidden_states=True).hidden_states
            states.append(torch.stack(hidden, 1)[0].double().numpy())
    handle.remove()
    return states


@pytest.mark.slow  # ~1 s a family once its model is built
@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_edit_equals_a_hand_hooked_forward(family, family_models, family_corpus, tmp_path):
    folder = family_models(family)
    summary = run_family(folder, family_corpus, tmp_path / "edited.h5", poolings="mean,last", intervene="random:5@1")
    with featx.open(summary.output) as features:
        info = ModelInfo(features.attrs["model"], features.attrs["model_sha256"], features.hidden_size, 3)
        recorded = features.attrs["intervention"]
        got = {(p, layer): features.features(p, layer) for p in ("mean", "last") for layer in features.layers}
    (edit,) = resolve_edits((parse_intervention("random:5@1"),), info)
    assert '"kind": "random"' in recorded and summary.layers == [0, 1, 2]
    reference = hooked_reference(family, folder, [row[0] for row in SENTENCES], edit, 1)
    for (pooling, layer), values in got.items():
        expected = pooled_reference(reference, pooling)[:, layer]
        assert relative_error(values, expected) <= TOLERANCE, (pooling, layer)

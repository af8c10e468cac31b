"""``EditHooks`` on a plain transformers model (``featx/extraction/edits/hooks.py``): at the embeddings (L = 0),
a middle layer and the top (L = N: the stored top layer itself, after Llama's final norm), on a batch padded on
the left and on the right with rows of other lengths, the edited states equal a hand-written hook's doing the
same arithmetic, at every real token."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.families import BY_NAME, padded_batch, reference_model

from featx.extraction import EditHooks, ModelInfo, apply_edit, parse_intervention, resolve_edits

BLOCKS = {"bert": "encoder.layer", "llama": "layers"}


def _hand_hooked(load, name, layer, edit, ids, mask):
    """A forward hook replacing block ``layer - 1``'s output (or a pre-hook replacing block 0's input, L = 0), on a
    freshly loaded model: transformers records hidden states by hooks it adds at the first forward pass, and a
    replacing hook added after those would change what the blocks above see but not the recorded state."""
    model = load()
    blocks = model.get_submodule(BLOCKS[name])
    mean, left, right, shift = (
        torch.tensor(a, dtype=torch.float32) for a in (edit.mean, edit.left, edit.right, edit.shift)
    )

    def change(x):
        return x - ((x - mean) @ right.T) @ left.T + shift

    if layer == len(blocks):  # the top: the stored state itself (after a final norm), which nothing reads after
        hidden = list(_plain(model, ids, mask))
        hidden[-1] = change(hidden[-1])
        return hidden
    if layer == 0:

        def hook(module, args, kwargs):
            if args:
                return (change(args[0]), *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": change(kwargs["hidden_states"])}

        handle = blocks[0].register_forward_pre_hook(hook, with_kwargs=True)
    else:

        def hook(module, args, output):
            if isinstance(output, torch.Tensor):
                return change(output)
            return (change(output[0]), *output[1:])

        handle = blocks[layer - 1].register_forward_hook(hook)
    with torch.inference_mode():
        hidden = list(model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)
    handle.remove()
    if layer == 0:  # the hand-written pre-hook changed what block 0 read, not the returned tuple's first state
        hidden[0] = change(hidden[0])
    return hidden


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("name", ["bert", "llama"])
def test_edit_hooks_equal_a_hand_written_hook(name, side, family_models):
    family = BY_NAME[name]

    def load():
        return reference_model(family, family_models(family))

    model = load()
    blocks = model.get_submodule(BLOCKS[name])
    info = ModelInfo("tiny", "", model.config.hidden_size, len(blocks) + 1)
    ids, mask = padded_batch(side)
    real = mask.bool()
    for layer in range(len(blocks) + 1):
        (edit,) = resolve_edits((parse_intervention(f"random:3@{layer}", seed=layer),), info)
        expected = _hand_hooked(load, name, layer, edit, ids, mask)
        with EditHooks(model, BLOCKS[name], len(blocks), [edit]), torch.inference_mode():
            got = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        for k, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert float((a - b)[real].abs().max()) <= 1e-5 * float(b[real].abs().max()), (layer, k)
        assert not torch.allclose(got[layer][real], _plain(model, ids, mask)[layer][real])


def _plain(model, ids, mask):
    with torch.inference_mode():
        return model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states


def test_apply_edit_is_the_maps_arithmetic():
    info = ModelInfo("tiny", "", 8, 3)
    (edit,) = resolve_edits((parse_intervention("random:3@1", seed=2),), info)
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    got = apply_edit(torch.from_numpy(x), edit).numpy()
    np.testing.assert_allclose(got, edit(x), atol=1e-5)
    half = apply_edit(torch.from_numpy(x).bfloat16(), edit)
    assert half.dtype == torch.bfloat16

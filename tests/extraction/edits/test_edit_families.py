"""Every family of the zoo: edits through ``featx extract --intervene`` at the embeddings, the middle layer and
the top equal a plain transformers forward of each row alone with hand-written hooks doing the same arithmetic
(replacing block 0's input and each block's output below the top), the top edit being the same arithmetic on
the stored top layer (after the final norm of decoders, T5 and ModernBERT), within 1e-5 at every stored layer;
and the edits below the top with the truncated forward (``--layers 0:2``: one block runs) the same at layers 0 and
1; featx's rows run in padded batches with neighbours of other lengths."""

from __future__ import annotations

import pytest
from support.families import FAMILIES, reference_model
from support.parity import pooled_reference, relative_error, run_family
from support.tiny import SENTENCES

import featx
from featx.extraction import ModelInfo, parse_interventions, resolve_edits

TOLERANCE = 1e-5
SPEC = "random:4@0,random:5@1,random:3@2"  # the embeddings, the middle and the top of the zoo's 2-block models
CUT_SPEC = "random:4@0,random:5@1"  # the same below the top, with --layers 0:2 (an edit above it is refused)
# The edits with the truncated forward, one family per way its blocks differ (each run costs suite time; the whole
# zoo matched within 1e-6 when checked by script): ALBERT's one layer called per block (the edit's hook and the stop
# on one module), GPT-2's Conv1D blocks, a decoder's rotary blocks (Llama), T5's position bias handed between blocks.
CUT_FAMILIES = ("albert", "gpt2", "llama", "t5-encoder")
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


def _change(edit):
    import torch

    mean, left, right, shift = (
        torch.tensor(a, dtype=torch.float32) for a in (edit.mean, edit.left, edit.right, edit.shift)
    )
    return lambda x: x - ((x - mean) @ right.T) @ left.T + shift


def hooked_reference(family, folder, texts, edits):
    """Per-row plain forward with hand-written hooks: a pre-hook replacing block 0's input by ``edits[0]`` of it,
    and forward hooks replacing block call k's output by ``edits[k + 1]`` of it (``x - ((x - mean) @ right.T) @
    left.T + shift``, in float32) below the top. ``hidden_states[0]`` and the top state are what the model
    returns, edited by hand: the top edit acts on the stored top layer, whatever norm made it."""
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = reference_model(family, folder)
    changes = [_change(edit) for edit in edits]
    calls = []

    def before(module, args, kwargs):
        if calls:
            return None
        if args:
            return (changes[0](args[0]), *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": changes[0](kwargs["hidden_states"])}

    def after(module, args, output):
        calls.append(1)
        if len(calls) == len(edits) - 1:  # the top: the stored state is edited below, after any final norm
            return None
        x = output if isinstance(output, torch.Tensor) else output[0]
        edited = changes[len(calls)](x)
        return edited if isinstance(output, torch.Tensor) else (edited, *output[1:])

    blocks = model.get_submodule(BLOCKS.get(family.name, "encoder.layer"))
    handles = [blocks[0].register_forward_pre_hook(before, with_kwargs=True)]
    handles += [block.register_forward_hook(after) for block in dict.fromkeys(blocks)]  # ALBERT: one shared layer
    states = []
    with torch.no_grad():
        for text in texts:
            calls.clear()
            hidden = list(model(**tokenizer(text, return_tensors="pt"), output_hidden_states=True).hidden_states)
            hidden[0] = changes[0](hidden[0])
            hidden[-1] = changes[-1](hidden[-1])  # nothing in the base model reads the top state after it
            states.append(torch.stack(hidden, 1)[0].double().numpy())
    for handle in handles:
        handle.remove()
    return states


@pytest.mark.slow  # ~1 s a family once its model is built
@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_edit_equals_a_hand_hooked_forward(family, family_models, family_corpus, tmp_path):
    folder = family_models(family)
    summary = run_family(
        folder, family_corpus, tmp_path / "edited.h5", poolings="mean,last", intervene=SPEC, intervene_seed=1
    )
    with featx.open(summary.output) as features:
        info = ModelInfo(features.attrs["model"], features.attrs["model_sha256"], features.hidden_size, 3)
        recorded = features.attrs["intervention"]
        got = {(p, layer): features.features(p, layer) for p in ("mean", "last") for layer in features.layers}
    edits = resolve_edits(parse_interventions(SPEC, seed=1), info)
    assert '"kind": "random"' in recorded and summary.layers == [0, 1, 2]
    reference = hooked_reference(family, folder, [row[0] for row in SENTENCES], edits)
    for (pooling, layer), values in got.items():
        expected = pooled_reference(reference, pooling)[:, layer]
        assert relative_error(values, expected) <= TOLERANCE, (pooling, layer)
    if family.name in CUT_FAMILIES:
        check_truncated_edit(family.name, folder, family_corpus, tmp_path, (info, edits, reference))


def check_truncated_edit(name, folder, corpus, tmp_path, full_run) -> None:
    """The edits at the embeddings and the middle with ``--layers 0:2``: one block runs (the pass stops at the
    middle layer's edit), and layers 0 and 1 are the hooked forward's (whose top edit touches neither)."""
    info, edits, reference = full_run
    summary = run_family(
        folder, corpus, tmp_path / "cut.h5", poolings="mean,last", intervene=CUT_SPEC, intervene_seed=1, layers="0:2"
    )
    for mine, full in zip(resolve_edits(parse_interventions(CUT_SPEC, seed=1), info), edits[:2], strict=True):
        assert (mine.left == full.left).all() and (mine.right == full.right).all()  # the same random directions
    worst = 0.0
    with featx.open(summary.output) as features:
        assert int(features.attrs["blocks_run"]) == 1 and features.layers == [0, 1]
        for pooling in ("mean", "last"):
            for layer in features.layers:
                expected = pooled_reference(reference, pooling)[:, layer]
                worst = max(worst, relative_error(features.features(pooling, layer), expected))
    print(name, f"edit cut {worst:.1e}")
    assert worst <= TOLERANCE

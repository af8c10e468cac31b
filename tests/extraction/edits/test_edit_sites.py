"""Edits at a site inside a layer (``--intervene KIND:ARGS@L:SITE``, ``featx/extraction/edits/inner.py``) equal a
plain transformers forward with a hand-written hook on the same module doing the same arithmetic (a module's output
replaced, a module's input edited in place), within 1e-5 at every layer: on batches padded on the left and on the
right with neighbours of other lengths (``EditHooks``), and through ``featx extract`` for every family of the zoo
whose sites featx names, each row of the reference run alone."""

from __future__ import annotations

import pytest
import torch
from support.families import BY_NAME, FAMILIES, padded_batch, reference_model
from support.parity import pooled_reference, relative_error, run_family
from support.tiny import SENTENCES

import featx
from featx.extraction import EditHooks, ModelInfo, parse_interventions, resolve_edits
from featx.extraction.forward.sites import FAMILIES as SITE_MODULES
from featx.extraction.forward.sites import architecture_family

TOLERANCE = 1e-5
SITES = ("attn_out", "ffn", "pre_ln")
SPEC = "random:3@1:ffn,random:4@2:attn_out,random:2@2:pre_ln"  # three sites in the zoo's 2-block models


def _module(model, site: str, layer: int) -> tuple[torch.nn.Module, str]:
    spec = SITE_MODULES[architecture_family(model)]
    module, mode = spec[site]
    return model.get_submodule(f"{spec['layers']}.{layer - 1}.{module}"), mode


def _change(edit):
    mean, left, right, shift = (
        torch.tensor(a, dtype=torch.float32) for a in (edit.mean, edit.left, edit.right, edit.shift)
    )
    return lambda x: x - ((x - mean) @ right.T) @ left.T + shift


def hand_hooks(model, edits) -> list:
    """Per edit, a hook on its site's module: the output replaced by the edit of it, or the input edited in place
    (the residual sum a pre-LN block carries on is that same tensor)."""
    handles = []
    for edit in edits:
        module, mode = _module(model, edit.intervention.site, edit.layer)
        change = _change(edit)
        if mode == "input":

            def before(module, args, change=change):
                args[0].copy_(change(args[0]))

            handles.append(module.register_forward_pre_hook(before))
        else:

            def after(module, args, output, change=change):
                if isinstance(output, torch.Tensor):
                    return change(output)
                return (change(output[0]), *output[1:])

            handles.append(module.register_forward_hook(after))
    return handles


def widths(model, ids) -> dict[str, int]:
    """Each site's width, read by hand from one forward pass."""
    seen, handles = {}, []
    for site in SITES:
        module, mode = _module(model, site, 1)

        def record(module, inputs, output=None, site=site, mode=mode):
            value = inputs if mode == "input" else output
            seen[site] = int((value if isinstance(value, torch.Tensor) else value[0]).shape[-1])

        handles.append(
            module.register_forward_pre_hook(record) if mode == "input" else module.register_forward_hook(record)
        )
    with torch.inference_mode():
        model(input_ids=ids)
    for handle in handles:
        handle.remove()
    return seen


def _hidden(model, ids, mask):
    with torch.inference_mode():
        return model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("name", ["bert", "llama"])
def test_site_edit_hooks_equal_a_hand_written_hook(name, side, family_models):
    family = BY_NAME[name]
    folder = family_models(family)
    model, reference = reference_model(family, folder), reference_model(family, folder)  # featx's hooks; by hand
    ids, mask = padded_batch(side)
    n_blocks = model.config.num_hidden_layers
    info = ModelInfo("tiny", "", model.config.hidden_size, n_blocks + 1, widths(model, ids))
    real = mask.bool()
    path = SITE_MODULES[architecture_family(model)]["layers"]
    for site in SITES:
        for layer in range(1, n_blocks + 1):
            edits = resolve_edits(parse_interventions(f"random:3@{layer}:{site}", seed=layer), info)
            handles = hand_hooks(reference, edits)
            expected = _hidden(reference, ids, mask)
            for handle in handles:
                handle.remove()
            with EditHooks(model, path, n_blocks, edits):
                got = _hidden(model, ids, mask)
            for k, (a, b) in enumerate(zip(got, expected, strict=True)):
                assert float((a - b)[real].abs().max()) <= TOLERANCE * float(b[real].abs().max()), (site, layer, k)
            plain = _hidden(model, ids, mask)
            assert torch.equal(got[layer - 1], plain[layer - 1])  # below the edit: untouched
            assert not torch.allclose(got[layer][real], plain[layer][real])  # the block's output saw the edit


def hooked_reference(family, folder, texts, spec, seed):
    """Per-row plain forward with ``hand_hooks``: a list of ``(layers, tokens, hidden)`` float64 arrays."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = reference_model(family, folder)
    probe = tokenizer(texts[0], return_tensors="pt")["input_ids"]
    info = ModelInfo("tiny", "", model.config.hidden_size, 3, widths(model, probe))
    handles = hand_hooks(model, resolve_edits(parse_interventions(spec, seed=seed), info))
    states = []
    with torch.no_grad():
        for text in texts:
            hidden = model(**tokenizer(text, return_tensors="pt"), output_hidden_states=True).hidden_states
            states.append(torch.stack(hidden, 1)[0].double().numpy())
    for handle in handles:
        handle.remove()
    return states


@pytest.mark.slow  # ~1 s a family once its model is built
@pytest.mark.parametrize("family", [f for f in FAMILIES if f.sites], ids=lambda family: family.name)
def test_site_edit_equals_a_hand_hooked_forward(family, family_models, family_corpus, tmp_path):
    folder = family_models(family)
    summary = run_family(
        folder, family_corpus, tmp_path / "edited.h5", poolings="mean,last", intervene=SPEC, intervene_seed=1
    )
    with featx.open(summary.output) as features:
        assert '"site": "ffn"' in features.attrs["intervention"]
        got = {(p, layer): features.features(p, layer) for p in ("mean", "last") for layer in features.layers}
    reference = hooked_reference(family, folder, [row[0] for row in SENTENCES], SPEC, 1)
    for (pooling, layer), values in got.items():
        expected = pooled_reference(reference, pooling)[:, layer]
        assert relative_error(values, expected) <= TOLERANCE, (pooling, layer)


def test_site_edits_on_a_model_with_a_head_hook_its_base_model(tmp_path):
    """An LM model (``featx intervene``'s loss runs one) is edited at the same modules as its base model."""
    import transformers
    from support.lens_models import build_with_head

    folder = str(build_with_head("bert", tmp_path / "mlm"))
    with_head = transformers.BertForMaskedLM.from_pretrained(folder, dtype=torch.float32).eval()
    bare = transformers.BertModel.from_pretrained(folder, dtype=torch.float32).eval()
    ids, mask = padded_batch("right")
    info = ModelInfo("tiny", "", bare.config.hidden_size, 3, widths(bare, ids))
    edits = resolve_edits(parse_interventions("random:3@1:ffn", seed=0), info)
    with EditHooks(with_head, "bert.encoder.layer", 2, edits), torch.inference_mode():
        got = with_head.bert(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    with EditHooks(bare, "encoder.layer", 2, edits):
        want = _hidden(bare, ids, mask)
    for a, b in zip(got, want, strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    assert not torch.allclose(want[1], _hidden(bare, ids, mask)[1])

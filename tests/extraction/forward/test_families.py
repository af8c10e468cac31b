"""Every supported family extracts like a plain ``transformers`` forward of each row alone.

One tiny random model per family (``support/families.py``), built once per session. fp32 with the CPU fast
path (``test_family_matches_plain_forward_fp32``) and without it (``test_family_sites``) must match the
reference to 1e-4 relative to the activations' scale (batching several rows of different lengths
together, so this is also the padding-invariance check, with left-padding tokenizers among them), the
``pooler`` pooling at the top layer the model's own ``pooler_output`` and ``at`` (``--pool-at index:N``) each
row's token N (``support.parity.parity``); site attn_heads the attention probabilities of a plain eager forward;
bf16 and fp16 must run and stay close.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.families import FAMILIES
from support.parity import head_reference, parity, pool_at_index, pooled_reference, relative_error, run_family
from support.tiny import SENTENCES

import featx
from featx.extraction import ExtractConfig

TEXTS = [row[0] for row in SENTENCES]
TOLERANCE = 1e-4
ENCODER_OF = ("t5-encoder", "bart-encoder")  # encoder-decoder checkpoints: featx runs the encoder


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_family_matches_plain_forward_fp32(
    family, family_models, family_references, family_corpus, tmp_path, monkeypatch
):
    """With the CPU fast path (its default); ``test_family_sites`` checks the same without it."""
    monkeypatch.setenv("FEATX_ONEDNN", "1")
    summary = run_family(family_models(family), family_corpus, tmp_path / "out.h5", pool_at="index:1")
    assert summary.rows == len(TEXTS)
    assert parity(summary, family_references(family)) <= TOLERANCE
    check_recorded(family, summary)


def check_recorded(family, summary):
    """What the file says about how the model was run."""
    with featx.open(summary.output) as features:
        attrs = features.attrs
        assert bool(attrs["causal"]) == family.causal
        assert ("cls" in features.poolings) == (not family.causal)
        assert {"last", "mean", "at"} <= set(features.poolings)
        assert attrs["padding_side"] == "right"
        assert attrs["model_part"] == ("encoder" if family.name in ENCODER_OF else "model")
        assert attrs["pad_source"] == ("tokenizer" if "pad_token" in family.tokens else "eos")
        assert bool(attrs["bos_added"]) == ("<s> $A" in family.template or "<bos>" in family.template)
    assert any("encoder" in note for note in summary.notes) == (family.name in ENCODER_OF)


HALF_PRECISION = [(family, "bfloat16") for family in FAMILIES] + [
    (family, "float16") for family in FAMILIES if family.name in ("bert", "t5-encoder", "llama")
]


@pytest.mark.parametrize("family,dtype", HALF_PRECISION, ids=lambda value: getattr(value, "name", value))
def test_family_runs_in_half_precision(family, dtype, family_models, family_references, family_corpus, tmp_path):
    """bf16 (with the fast path where it applies) on CPU for every family, fp16 for a few (every family ran
    in fp16 within 1e-3 of fp32 when checked by hand): runs, finite, close to the fp32 reference."""
    summary = run_family(
        family_models(family), family_corpus, tmp_path / "half.h5", dtype=dtype, poolings="mean", layers="0,-1"
    )
    with featx.open(summary.output) as features:
        assert features.attrs["compute_dtype"] == dtype
        expected = pooled_reference(family_references(family), "mean")
        for layer in features.layers:
            got = features.features("mean", layer)
            assert np.isfinite(got).all()
            assert relative_error(got, expected[:, layer]) <= 0.1, layer


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fast_path_swaps_only_what_is_safe(family, dtype, family_models):
    """prepack_linears on each family: the packed model computes what the plain one does; linears whose
    parent reads ``.weight`` (T5's ``wo``) stay plain ``nn.Linear``."""
    import torch
    import transformers

    from featx.extraction.fast import onednn
    from featx.extraction.fast.onednn import PackedLinear, prepack_linears

    torch_dtype = getattr(torch, dtype)
    if not onednn.available():
        pytest.skip("this torch build has no oneDNN linear ops")
    if not onednn.available(torch_dtype):
        pytest.skip("this CPU has no oneDNN bfloat16 path (it needs AVX-512 BW/VL/DQ or AVX-NE-CONVERT)")
    cls = getattr(transformers, family.reference)
    plain = cls.from_pretrained(str(family_models(family)), dtype=torch_dtype).eval()
    packed = cls.from_pretrained(str(family_models(family)), dtype=torch_dtype).eval()
    if family.encoder_of:
        plain, packed = plain.get_encoder(), packed.get_encoder()
    n_linear = sum(type(module) is torch.nn.Linear for module in plain.modules())  # GPT-2 has Conv1D only
    assert (prepack_linears(packed, torch.device("cpu"), torch_dtype) > 0) == (n_linear > 0)
    if family.name == "t5-encoder":
        for block in packed.encoder.block:
            assert type(block.layer[1].DenseReluDense.wo) is torch.nn.Linear
            assert isinstance(block.layer[1].DenseReluDense.wi, PackedLinear)
    ids = torch.tensor([[5, 40, 41, 42, 43, 44], [5, 43, 45, 3, 3, 3]])
    mask = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0]])
    with torch.inference_mode():
        a = plain(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        b = packed(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    tolerance = 1e-5 if dtype == "float32" else 5e-2
    for x, y in zip(a, b, strict=False):
        real = mask.bool()
        scale = x[real].float().abs().max()
        assert ((y[real].float() - x[real].float()).abs().max() / scale) <= tolerance


def site_reference(family, folder, texts, sites=("attn_out", "ffn", "pre_ln")):
    """Mean over real tokens of each site's module, hooked on a plain model run on each row alone:
    ``{site: (rows, layers 1..N, width)}``."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    from featx.extraction.forward.sites import FAMILIES as SITE_FAMILIES
    from featx.extraction.forward.sites import architecture_family

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = getattr(transformers, family.reference).from_pretrained(str(folder), dtype=torch.float32).eval()
    spec = SITE_FAMILIES[architecture_family(model)]
    n_layers = len(model.get_submodule(spec["layers"]))
    recorded = {site: [] for site in sites}

    def hook_for(site, mode):
        def hook(mod, inputs, output=None):
            value = inputs if mode == "input" else output
            recorded[site].append((value[0] if isinstance(value, tuple) else value)[0].double().mean(0).numpy())

        return hook

    handles = []
    for site in sites:
        module, mode = spec[site]
        for layer in range(n_layers):
            target = model.get_submodule(f"{spec['layers']}.{layer}.{module}")
            hook = hook_for(site, mode)
            handles.append(
                target.register_forward_pre_hook(hook) if mode == "input" else target.register_forward_hook(hook)
            )
    with torch.no_grad():
        for text in texts:
            model(**tokenizer(text, return_tensors="pt"))
    for handle in handles:
        handle.remove()
    return {site: np.asarray(values).reshape(len(texts), n_layers, -1) for site, values in recorded.items()}


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_family_sites(family, family_models, family_references, family_corpus, tmp_path, monkeypatch):
    """Without the CPU fast path: hidden (and ``at``, ``--pool-at index:-2``) matches the plain forward, attn_out,
    ffn and pre_ln match a hooked plain forward for every family that names them (the others get the error listing
    what is available), and attn_heads, which every family has, the attention probabilities of a plain eager
    forward (the whole extraction then runs through transformers in eager attention; the fast-path test above
    keeps SDPA and the native encoders)."""
    from featx.errors import InputError

    monkeypatch.setenv("FEATX_ONEDNN", "0")
    model = family_models(family)
    if not family.sites:
        with pytest.raises(InputError, match="Available sites for this model: hidden, attn_heads, module:NAME"):
            run_family(model, family_corpus, tmp_path / "sites.h5", sites="attn_out")
        summary = run_family(model, family_corpus, tmp_path / "hidden.h5", sites="attn_heads", pool_at="index:-2")
        assert parity(summary, family_references(family)) <= TOLERANCE
        check_attention_heads(family, model, summary)
        return
    summary = run_family(model, family_corpus, tmp_path / "sites.h5", sites="attn_out,ffn,pre_ln,attn_heads")
    assert parity(summary, family_references(family)) <= TOLERANCE
    check_attention_heads(family, model, summary)
    with featx.open(summary.output) as features:
        reference = site_reference(family, model, TEXTS)
        for site in ("attn_out", "ffn", "pre_ln"):
            expected = reference[site]
            assert features.site_layers(site) == [1, 2]
            for position, layer in enumerate(features.site_layers(site)):
                got = features.features("mean", layer, site=site)
                assert relative_error(got, expected[:, position]) <= TOLERANCE, (site, layer)


HEAD_ROWS = [0, 5, 10, 11]  # the attention reference's rows: a short, a long, a one-word and the longest text


def check_attention_heads(family, folder, summary) -> None:
    """Each stored pooling of site attn_heads equals the same pooling of ``head_reference`` (rows batched with
    neighbours of other lengths, against a few of them alone)."""
    reference = head_reference(family, folder, [TEXTS[row] for row in HEAD_ROWS])
    worst = 0.0
    with featx.open(summary.output) as features:
        assert features.site_layers("attn_heads") == [1, 2]
        for pooling in features.site_poolings("attn_heads"):
            expected = pooled_reference(reference, pooling, pool_at_index(features))
            for position, layer in enumerate(features.site_layers("attn_heads")):
                got = features.features(pooling, layer, site="attn_heads")[HEAD_ROWS]
                worst = max(worst, float(np.abs(got - expected[:, position]).max()))
    print(family.name, f"attn_heads {worst:.1e}")
    assert worst <= TOLERANCE, worst  # probabilities and entropies: an absolute scale


def test_cls_is_refused_for_causal_models(family_models, family_corpus, tmp_path):
    from support.families import BY_NAME

    from featx.errors import InputError

    with pytest.raises(InputError, match="causal") as error:
        run_family(family_models(BY_NAME["llama"]), family_corpus, tmp_path / "cls.h5", poolings="cls,mean")
    assert "last" in error.value.hint


def test_sharded_checkpoint_extracts_the_same_and_hashes_every_shard(family_models, family_corpus, tmp_path):
    """A model saved in several safetensors shards with an index: same features as one file; the weights
    hash covers every shard (changing one changes it); a missing shard is one clear error."""
    import shutil

    import torch
    import transformers
    from support.families import BY_NAME

    from featx.errors import ModelError
    from featx.extraction.model.loading import load_model

    family = BY_NAME["llama"]
    single = family_models(family)
    sharded = tmp_path / "sharded"
    shutil.copytree(single, sharded)
    for path in sharded.glob("*.safetensors"):
        path.unlink()
    model = getattr(transformers, family.model).from_pretrained(str(single), dtype=torch.float32)
    model.save_pretrained(str(sharded), safe_serialization=True, max_shard_size="20KB")
    shards = sorted(sharded.glob("model-*-of-*.safetensors"))
    assert len(shards) >= 3 and (sharded / "model.safetensors.index.json").exists()

    one = run_family(single, family_corpus, tmp_path / "one.h5")
    many = run_family(sharded, family_corpus, tmp_path / "many.h5")
    with featx.open(one.output) as a, featx.open(many.output) as b:
        for layer in a.layers:
            np.testing.assert_array_equal(a.features("mean", layer), b.features("mean", layer))
        before = b.attrs["model_sha256"]
    (sharded / "stray.safetensors").write_bytes(shards[0].read_bytes())  # not in the index: not hashed
    assert load_model(str(sharded), device="cpu").weights_sha256 == before
    data = bytearray(shards[-1].read_bytes())  # one weight of the last shard changes
    data[-1] ^= 1
    shards[-1].write_bytes(bytes(data))
    assert load_model(str(sharded), device="cpu").weights_sha256 != before
    data[9] = ord("!")  # a broken header: one clear error, no traceback
    shards[-1].write_bytes(bytes(data))
    with pytest.raises(ModelError, match="cannot load model"):
        load_model(str(sharded), device="cpu")
    shards[1].unlink()
    with pytest.raises(ModelError, match="lacks 1 of the"):
        load_model(str(sharded), device="cpu")


def test_cli_t5_and_a_causal_model(family_models, family_corpus, tmp_path):
    """The reported T5 traceback is gone at the command line; cls on a causal model is one line, exit 2."""
    from click.testing import CliRunner
    from support.families import BY_NAME

    from featx.cli import main

    t5 = CliRunner().invoke(
        main,
        [
            "extract",
            str(family_corpus),
            "--model",
            str(family_models(BY_NAME["t5-encoder"])),
            "-o",
            str(tmp_path / "t5.h5"),
            "-q",
        ],
    )
    assert t5.exit_code == 0, t5.output
    assert "encoder-decoder model: these are its encoder's states" in t5.output
    gpt2 = CliRunner().invoke(
        main,
        [
            "extract",
            str(family_corpus),
            "--model",
            str(family_models(BY_NAME["gpt2"])),
            "-o",
            str(tmp_path / "gpt2.h5"),
            "-q",
            "--pooling",
            "cls",
        ],
    )
    assert gpt2.exit_code == 2 and "Traceback" not in gpt2.output
    assert "pooling 'cls' does not fit" in gpt2.output


def test_device_map_auto(family_models, family_corpus, tmp_path, monkeypatch):
    """--device-map auto (accelerate's placement, on a GPU machine) gives the same features; without
    accelerate it is one clear error; with --random-init it is refused (no GPU: test_sharded_models)."""
    import importlib.util

    import torch
    from support.families import BY_NAME

    from featx.errors import InputError

    model = family_models(BY_NAME["llama"])
    with pytest.raises(InputError, match="--random-init"):
        ExtractConfig(corpus=family_corpus, device_map="auto", random_init=True)
    with pytest.raises(InputError, match="--device-map 'everywhere'"):
        ExtractConfig(corpus=family_corpus, device_map="everywhere")
    if importlib.util.find_spec("accelerate") is not None and torch.cuda.is_available():  # else refused
        plain = run_family(model, family_corpus, tmp_path / "plain.h5")
        mapped = run_family(model, family_corpus, tmp_path / "mapped.h5", device_map="auto")
        with featx.open(plain.output) as a, featx.open(mapped.output) as b:
            assert a.fingerprint == b.fingerprint and b.attrs["device_map"] != "{}"
            for layer in a.layers:
                np.testing.assert_allclose(b.features("last", layer), a.features("last", layer), atol=1e-6)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *args: None if name == "accelerate" else real_find_spec(name, *args)
    )
    with pytest.raises(InputError, match="needs the accelerate package"):
        run_family(model, family_corpus, tmp_path / "none.h5", device_map="auto")

"""Sites (featx/sites.py): features inside a layer, checked against hand-written hooks on plain transformers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from support.helpers import max_abs_diff
from support.tiny import SENTENCES, write_csv
from transformers import AutoModel, AutoTokenizer

import featx
from featx.cli import main
from featx.errors import FeatxError, InputError
from featx.extraction.fast.onednn import available as onednn_available
from featx.extraction.forward.sites import (
    SiteRecorder,
    architecture_family,
    attention_head_features,
    parse_sites,
    resolve_sites,
)
from featx.extraction.model import loading as modeling
from featx.extraction.run import loop

POOLINGS = ("cls", "mean", "max", "last")


def _pool(states: torch.Tensor) -> dict[str, np.ndarray]:
    """(tokens, width) of one unpadded sentence -> each pooling."""
    return {
        "cls": states[0].numpy(),
        "mean": states.mean(0).numpy(),
        "max": states.max(0).values.numpy(),
        "last": states[-1].numpy(),
    }


def reference_sites(model_path, texts, module_names: dict[str, tuple[str, str]], n_layers: int):
    """Per sentence, no padding, eager attention, hooks written here by hand.

    ``module_names``: site -> (module name with {i} for the layer's index, "output" or "input").
    Returns {site: {pooling: (n, layers 1..n_layers, width)}}.
    """
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    model = AutoModel.from_pretrained(str(model_path), dtype=torch.float32, attn_implementation="eager").eval()
    out = {site: {name: [] for name in POOLINGS} for site in module_names}
    out["attn_heads"] = {name: [] for name in POOLINGS}
    for text in texts:
        seen: dict[tuple[str, int], torch.Tensor] = {}
        handles = []
        for site, (pattern, mode) in module_names.items():
            for i in range(n_layers):
                module = model.get_submodule(pattern.format(i=i))
                if mode == "input":
                    handles.append(
                        module.register_forward_pre_hook(
                            lambda m, args, key=(site, i), seen=seen: seen.__setitem__(key, args[0].detach())
                        )
                    )
                else:
                    handles.append(
                        module.register_forward_hook(
                            lambda m, args, result, key=(site, i), seen=seen: seen.__setitem__(
                                key, (result[0] if isinstance(result, tuple) else result).detach()
                            )
                        )
                    )
        encoded = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            attentions = model(**encoded, output_attentions=True).attentions
        for handle in handles:
            handle.remove()
        for site in module_names:
            per_layer = [_pool(seen[(site, i)][0]) for i in range(n_layers)]
            for name in POOLINGS:
                out[site][name].append(np.stack([layer[name] for layer in per_layer]))
        ids = encoded["input_ids"][0]
        heads = []
        for probs in attentions:  # (1, heads, T, T): entropy, to CLS, to SEP for every query token
            p = probs[0]
            entropy = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)  # (heads, T)
            to_cls = p[..., 0]
            to_sep = p[..., ids == tokenizer.sep_token_id].sum(-1)
            heads.append(_pool(torch.cat([entropy, to_cls, to_sep], 0).T))
        for name in POOLINGS:
            out["attn_heads"][name].append(np.stack([layer[name] for layer in heads]))
    return {site: {name: np.stack(values) for name, values in by_pooling.items()} for site, by_pooling in out.items()}


BERT_REFERENCE = {
    "attn_out": ("encoder.layer.{i}.attention.output.dense", "output"),  # dense; dropout is the identity in eval
    "ffn": ("encoder.layer.{i}.intermediate.intermediate_act_fn", "output"),
    "pre_ln": ("encoder.layer.{i}.output.LayerNorm", "input"),
    "module:encoder.layer.*.attention.self": ("encoder.layer.{i}.attention.self", "output"),
}


def _check_against_reference(path, model_path, texts, n_layers, sites):
    expected = reference_sites(model_path, texts, {site: BERT_REFERENCE[site] for site in sites}, n_layers)
    with featx.open(path) as features:
        assert features.sites == ["hidden", *sites, "attn_heads"]
        for site in [*sites, "attn_heads"]:
            assert features.site_layers(site) == list(range(1, n_layers + 1))
            for name in POOLINGS:
                for layer in range(1, n_layers + 1):
                    got, want = features.features(name, layer, site=site), expected[site][name][:, layer - 1]
                    # 1e-4, scaled for sites far from unit scale: pre_ln (the residual stream before the
                    # LayerNorm) reaches |x| ~ 220 in MiniLM, where float32 rounding alone is ~3e-5 per op.
                    assert max_abs_diff(got, want) < 1e-4 * max(1.0, float(np.abs(want).max())), (site, name, layer)


def test_sites_match_manual_hooks_on_tiny_model(tiny_model, corpus_csv, tmp_path):
    sites = ["attn_out", "ffn", "pre_ln", "module:encoder.layer.*.attention.self"]
    out = tmp_path / "sites.h5"
    featx.extract(
        corpus_csv,
        model=str(tiny_model),
        output=out,
        store_dtype="float32",
        progress=False,
        sites=",".join(sites + ["attn_heads"]),
        max_tokens=64,
    )  # several padded batches
    _check_against_reference(out, tiny_model, [row[0] for row in SENTENCES], 2, sites)
    with featx.open(out) as features:
        hidden = features.features("mean", 2)
        assert features.site_width("ffn") == 64 and features.site_width("attn_heads") == 3 * 4
        assert "pooler" in features.poolings and "pooler" not in features.site_poolings("ffn")
        with pytest.raises(InputError, match="pooling 'pooler' is not stored for site 'ffn'"):
            features.features("pooler", 1, site="ffn")
        with pytest.raises(InputError, match="layer 0 is not stored for site 'ffn'"):
            features.features("mean", 0, site="ffn")
        assert not np.allclose(hidden, features.features("mean", 2, site="pre_ln"))


def test_token_level_sites_and_single_module(tiny_model, corpus_csv, tmp_path):
    out = tmp_path / "tokens.h5"
    featx.extract(
        corpus_csv,
        model=str(tiny_model),
        output=out,
        store_dtype="float32",
        progress=False,
        tokens=True,
        layers="1,2",
        sites="pre_ln,module:encoder.layer.1.intermediate",
    )
    model = AutoModel.from_pretrained(str(tiny_model), dtype=torch.float32).eval()
    with featx.open(out) as features:
        assert features.site_layers("module:encoder.layer.1.intermediate") == [2]  # stored as its layer
        offsets = features.token_offsets
        pre_ln = features.token_states(2, site="pre_ln")
        hidden = features.token_states(2)
        # LayerNorm(pre_ln) is the layer's output, token by token
        norm = model.encoder.layer[1].output.LayerNorm
        with torch.no_grad():
            assert max_abs_diff(norm(torch.from_numpy(pre_ln)).numpy(), hidden) < 1e-4
        ffn_tokens = features.token_states(2, site="module:encoder.layer.1.intermediate")
        row = 5
        mean = ffn_tokens[offsets[row] : offsets[row + 1]].mean(0)
        assert max_abs_diff(mean, features.features("mean", 2, site="module:encoder.layer.1.intermediate")[row]) < 1e-5


@pytest.mark.slow
def test_minilm_sites_match_manual_hooks(minilm_path, tmp_path):

    texts = ["a short sentence.", "another, slightly longer sentence about films and critics."]
    corpus = write_csv(tmp_path / "two.csv", [(text, "x", "y", "train") for text in texts])
    out = tmp_path / "minilm.h5"
    sites = ["attn_out", "ffn", "pre_ln", "module:encoder.layer.*.attention.self"]
    featx.extract(corpus, output=out, store_dtype="float32", progress=False, sites=",".join(sites + ["attn_heads"]))
    _check_against_reference(out, minilm_path, texts, 6, sites)


def _capture_model(monkeypatch) -> dict:
    captured = {}
    original = modeling.load_model

    def load_and_keep(*args, **kwargs):
        captured["loaded"] = original(*args, **kwargs)
        return captured["loaded"]

    monkeypatch.setattr(modeling, "load_model", load_and_keep)
    return captured


def _hooks_left(model) -> int:
    """featx's hooks on the model (transformers >= 5 keeps output-capturing hooks of its own there)."""
    return sum(
        getattr(hook, "__module__", "").startswith("featx")
        for module in model.modules()
        for hook in [*module._forward_hooks.values(), *module._forward_pre_hooks.values()]
    )


def test_hooks_removed_after_success_and_after_failure(tiny_model, corpus_csv, tmp_path, monkeypatch):
    captured = _capture_model(monkeypatch)
    featx.extract(
        corpus_csv, model=str(tiny_model), output=tmp_path / "ok.h5", progress=False, sites="ffn,attn_out,attn_heads"
    )
    model = captured["loaded"].model
    assert _hooks_left(model) == 0
    assert model.config._attn_implementation == "sdpa"  # eager only while attn_heads was recorded

    calls = {"n": 0}
    original = loop.Block.store

    def fail_on_second(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom in the middle of the loop")
        return original(*args, **kwargs)

    monkeypatch.setattr(loop.Block, "store", fail_on_second)
    with pytest.raises(RuntimeError, match="boom"):
        featx.extract(
            corpus_csv,
            model=str(tiny_model),
            output=tmp_path / "fail.h5",
            progress=False,
            sites="ffn,pre_ln,module:encoder.layer.0.attention,attn_heads",
            max_tokens=64,
        )
    model = captured["loaded"].model
    assert calls["n"] == 2
    assert _hooks_left(model) == 0
    assert model.config._attn_implementation == "sdpa"


def test_recorder_removes_hooks_on_error_inside_block(tiny_model):
    model = AutoModel.from_pretrained(str(tiny_model)).eval()
    sites = resolve_sites(model, parse_sites("attn_out,ffn,pre_ln"), [0, 1, 2], 2)
    with pytest.raises(ValueError), SiteRecorder(model, sites):
        assert _hooks_left(model) == 6
        raise ValueError("inside")
    assert _hooks_left(model) == 0


def test_unknown_site_is_a_clear_error(tiny_model, corpus_csv, tmp_path):
    with pytest.raises(InputError, match="unknown site 'ffm'.*") as error:
        parse_sites("hidden,ffm")
    assert "attn_out" in error.value.hint and "module:NAME" in error.value.hint
    result = CliRunner().invoke(
        main,
        ["extract", str(corpus_csv), "--model", str(tiny_model), "--site", "ffm", "-o", str(tmp_path / "x.h5"), "-q"],
    )
    assert result.exit_code == 2 and "featx: error: unknown site 'ffm'" in result.output
    with pytest.raises(InputError, match="has no submodule 'encoder.layer.0.nope'") as error:
        featx.extract(
            corpus_csv,
            model=str(tiny_model),
            output=tmp_path / "y.h5",
            progress=False,
            sites="module:encoder.layer.0.nope",
        )
    assert "encoder.layer.0.intermediate" in error.value.hint
    with pytest.raises(InputError, match="exists inside transformer layers 1..2 only"):
        featx.extract(
            corpus_csv, model=str(tiny_model), output=tmp_path / "z.h5", progress=False, sites="ffn", layers="0"
        )
    with pytest.raises(InputError, match="not a token-aligned"):  # the pooler's output has no token axis
        featx.extract(
            corpus_csv, model=str(tiny_model), output=tmp_path / "p.h5", progress=False, sites="module:pooler"
        )
    with pytest.raises(InputError, match="^sites='ffn' would store nothing: the pooling pooler reads hidden only"):
        featx.extract(  # was h5py's KeyError: the site's group was never created
            corpus_csv, model=str(tiny_model), output=tmp_path / "q.h5", progress=False, sites="ffn", poolings="pooler"
        )
    assert not list(tmp_path.glob("q.h5*"))
    args = ["extract", str(corpus_csv), "--model", str(tiny_model), "-o", str(tmp_path / "q.h5"), "-q"]
    result = CliRunner().invoke(main, [*args, "--site", "ffn", "--pooling", "pooler"])  # the flags on the CLI
    assert result.exit_code == 2 and "--site ffn would store nothing" in result.output
    assert "--pooling pooler,mean" in result.output and not list(tmp_path.glob("q.h5*"))


def test_unknown_architecture_names_available_sites():
    from transformers import AlbertConfig, AlbertModel, GPT2Config, GPT2Model

    albert = AlbertModel(
        AlbertConfig(
            num_hidden_layers=2,
            hidden_size=16,
            num_attention_heads=2,
            intermediate_size=24,
            embedding_size=8,
            vocab_size=40,
            max_position_embeddings=20,
        )
    ).eval()
    assert architecture_family(albert) is None  # its layers share one module: no per-layer sites
    with pytest.raises(InputError, match="site 'ffn' is not defined for AlbertModel") as error:
        resolve_sites(albert, parse_sites("ffn"), [0, 1, 2], 2)
    assert "Available sites for this model: hidden, attn_heads, module:NAME" in error.value.message
    model = GPT2Model(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=16)).eval()
    assert architecture_family(model) == "gpt2"
    sites = resolve_sites(model, parse_sites("module:h.*.mlp.act"), [0, 1, 2], 2)  # the escape hatch works
    assert [tap.module for tap in sites[1].taps] == ["h.0.mlp.act", "h.1.mlp.act"]
    with SiteRecorder(model, sites) as recorder:
        ids = torch.tensor([[1, 2, 3]])
        output = model(input_ids=ids)
        values = recorder.take(output, ids, torch.ones_like(ids), (None, None))
    assert values["module:h.*.mlp.act"][0].shape == (1, 3, 64)


def test_distilbert_and_roberta_resolve_from_structure():
    from transformers import DistilBertConfig, DistilBertModel, RobertaConfig, RobertaModel

    roberta = RobertaModel(
        RobertaConfig(
            num_hidden_layers=1,
            hidden_size=16,
            num_attention_heads=2,
            intermediate_size=24,
            vocab_size=40,
            max_position_embeddings=20,
        )
    )
    assert architecture_family(roberta) == "bert"
    torch.manual_seed(0)
    model = DistilBertModel(
        DistilBertConfig(n_layers=2, dim=16, n_heads=2, hidden_dim=24, vocab_size=40, max_position_embeddings=20)
    ).eval()
    assert architecture_family(model) == "distilbert"
    sites = resolve_sites(model, parse_sites("attn_out,ffn,pre_ln"), [0, 1, 2], 2)
    manual = {}
    block = model.transformer.layer[1]
    handles = [
        block.attention.out_lin.register_forward_hook(lambda m, a, r: manual.__setitem__("attn_out", r)),
        block.ffn.lin1.register_forward_hook(lambda m, a, r: manual.__setitem__("lin1", r)),
    ]
    ids = torch.tensor([[1, 5, 7, 2]])
    with torch.no_grad(), SiteRecorder(model, sites) as recorder:
        output = model(input_ids=ids, output_hidden_states=True)
        values = recorder.take(output, ids, torch.ones_like(ids), (1, 2))
    for handle in handles:
        handle.remove()
    assert torch.allclose(values["attn_out"][1], manual["attn_out"])
    assert torch.allclose(values["ffn"][1], torch.nn.functional.gelu(manual["lin1"]), atol=1e-6)
    assert torch.allclose(block.output_layer_norm(values["pre_ln"][1]), output.hidden_states[2], atol=1e-5)
    assert _hooks_left(model) == 0


def test_attention_head_features_on_a_known_distribution():
    # one row, one head, three real tokens + one pad; SEP is id 2 at position 2
    probs = torch.tensor([[[[0.5, 0.25, 0.25, 0.0]] * 4]])
    ids = torch.tensor([[1, 9, 2, 0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    features = attention_head_features(probs, ids, mask, 1, 2)
    assert features.shape == (1, 4, 3)
    entropy = -(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25))
    assert np.allclose(features[0, 0].numpy(), [entropy, 0.5, 0.25])


def test_files_without_sites_read_as_hidden(tiny_model, corpus_csv, tmp_path):
    out = tmp_path / "plain.h5"
    featx.extract(corpus_csv, model=str(tiny_model), output=out, progress=False)
    import h5py

    with h5py.File(out, "r") as raw:
        assert "sites" not in raw.attrs and "sites" not in raw  # the layout of files from before sites
        fingerprint = raw.attrs["fingerprint"]
    assert '"sites"' not in fingerprint  # so existing files stay up to date for the same command
    with featx.open(out) as features:
        assert features.sites == ["hidden"]
        assert np.array_equal(features.features("mean", 1, site="hidden"), features.features("mean", 1))
        assert features.site_layers() == features.layers
        with pytest.raises(FeatxError, match="site 'ffn' is not stored .* stored sites: hidden"):
            features.features("mean", 1, site="ffn")
    summary = featx.extract(corpus_csv, model=str(tiny_model), output=out, progress=False)
    assert summary.status == "up-to-date"
    with pytest.raises(FeatxError, match="different corpus, model or options"):
        featx.extract(corpus_csv, model=str(tiny_model), output=out, progress=False, sites="ffn")


def test_sharded_extraction_merges_sites(tiny_model, corpus_csv, tmp_path):
    from featx.extraction.shards.merge import merge

    options = dict(model=str(tiny_model), progress=False, sites="ffn,attn_heads", tokens=True, store_dtype="float32")
    single = tmp_path / "single.h5"
    featx.extract(corpus_csv, output=single, **options)
    sharded = tmp_path / "sharded.h5"
    for index in range(2):
        featx.extract(corpus_csv, output=sharded, shards=2, shard_index=index, **options)
    merge(sharded)
    with featx.open(single) as one, featx.open(sharded) as merged:
        assert merged.sites == one.sites
        for site in ("ffn", "attn_heads"):
            assert max_abs_diff(merged.features("max", 2, site=site), one.features("max", 2, site=site)) < 1e-4
            assert max_abs_diff(merged.token_states(1, site=site), one.token_states(1, site=site)) < 1e-4


def test_interrupted_extraction_with_sites_resumes_to_the_same_file(tiny_model, corpus_csv, tmp_path, monkeypatch):
    from support.helpers import interrupt_after_commits

    from featx.errors import Interrupted

    options = dict(
        model=str(tiny_model), progress=False, sites="ffn,attn_heads", tokens=True, commit_rows=3, store_dtype="float32"
    )
    reference = featx.extract(corpus_csv, output=tmp_path / "ref.h5", **options)
    interrupt_after_commits(monkeypatch, 2)
    with pytest.raises(Interrupted, match="6 of 12 rows are saved"):
        featx.extract(corpus_csv, output=tmp_path / "out.h5", **options)
    monkeypatch.undo()
    resumed = featx.extract(corpus_csv, output=tmp_path / "out.h5", **options)
    assert resumed.status == "resumed" and resumed.resumed_from == 6
    with featx.open(reference.output) as one, featx.open(resumed.output) as other:
        for site in ("ffn", "attn_heads"):
            for layer in (1, 2):
                assert (
                    max_abs_diff(one.features("mean", layer, site=site), other.features("mean", layer, site=site))
                    < 1e-5
                )
                assert max_abs_diff(one.token_states(layer, site=site), other.token_states(layer, site=site)) < 1e-5


def test_a_module_outside_the_layers_is_filed_under_layer_0(tiny_model, corpus_csv, tmp_path):
    out = tmp_path / "embeddings.h5"
    featx.extract(
        corpus_csv,
        model=str(tiny_model),
        output=out,
        layers="0",
        sites="module:embeddings",
        store_dtype="float32",
        progress=False,
    )
    with featx.open(out) as features:
        assert features.site_layers("module:embeddings") == [0]
        # the embeddings module's output is the model's hidden state 0
        assert max_abs_diff(features.features("max", 0, site="module:embeddings"), features.features("max", 0)) == 0


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_hooked_dense_records_pre_activation_values_on_every_path(
    tiny_model, corpus_csv, tmp_path, monkeypatch, onednn
):
    """The CPU fast path fuses ``intermediate.dense`` with its GELU; a hook on that dense must still see what the
    plain model computes there (pre-GELU), with and without the fast path."""
    from featx.extraction.forward import runner as runner_module

    monkeypatch.setenv("FEATX_ONEDNN", onednn)
    packed = []
    original = runner_module.prepack_linears

    def counting(*args, **kwargs):
        packed.append(original(*args, **kwargs))
        return packed[-1]

    monkeypatch.setattr(runner_module, "prepack_linears", counting)
    site = "module:encoder.layer.*.intermediate.dense"
    out = tmp_path / f"dense-{onednn}.h5"
    featx.extract(corpus_csv, model=str(tiny_model), output=out, store_dtype="float32", progress=False, sites=site)
    assert (packed[0] > 0) == (onednn == "1" and onednn_available())
    texts = [row[0] for row in SENTENCES]
    expected = reference_sites(tiny_model, texts, {site: ("encoder.layer.{i}.intermediate.dense", "output")}, 2)
    with featx.open(out) as features:
        for name in POOLINGS:
            for layer in (1, 2):
                got, want = features.features(name, layer, site=site), expected[site][name][:, layer - 1]
                assert max_abs_diff(got, want) < 1e-4, (name, layer)
        # post-GELU values (what the fused layer returns) would differ by far more than that
        gelu = torch.nn.functional.gelu(torch.from_numpy(expected[site]["max"][:, 0])).numpy()
        assert max_abs_diff(features.features("max", 1, site=site), gelu) > 1e-2

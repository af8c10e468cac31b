"""featx's own MPNet (featx/extraction/native/mpnet.py): the same numbers as transformers' MPNetModel (eager, its
only attention) with padding, the same files from ``featx extract`` with the native path on and off, transformers
where the folder is not certainly equivalent, and no transformers import on the native path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.native_files import extract_both, same_file_contents
from support.tiny import SENTENCES, build_tiny_mpnet, write_csv

from featx.errors import ModelError
from featx.extraction import onednn
from featx.extraction.modeling import load_model
from featx.extraction.native import mpnet, select

PAD = 1
IDS = torch.tensor(
    [[0, 40, 41, 42, 43, 2, PAD, PAD], [0, 44, 2, PAD, PAD, PAD, PAD, PAD], [0, 45, 46, 47, 48, 49, 50, 2]]
)


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory) -> Path:
    return build_tiny_mpnet(tmp_path_factory.mktemp("mpnet"), legacy=True)


def _transformers_mpnet(folder: Path, dtype=torch.float32):
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(folder), dtype=dtype).eval()


def _largest_difference(native, reference, ids: torch.Tensor) -> float:
    """Largest absolute difference over the real tokens of every hidden state, and the pooler output."""
    mask = (ids != PAD).long()
    with torch.inference_mode():
        got = native(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        want = reference(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    assert len(got.hidden_states) == len(want.hidden_states)
    real = mask.bool()
    states = [float((a - b)[real].abs().max()) for a, b in zip(got.hidden_states, want.hidden_states, strict=True)]
    return max(*states, float((got.pooler_output - want.pooler_output).abs().max()))


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / "model"))


def _edit_config(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


def test_tiny_mpnet_equals_transformers_with_padding(tiny_mpnet):
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    reference = _transformers_mpnet(tiny_mpnet)
    assert _largest_difference(native, reference, IDS) <= 1e-5
    assert _largest_difference(native, reference, IDS[2:]) <= 1e-5  # no padding: no mask at all


def test_long_rows_use_the_far_buckets_as_transformers_does(tiny_mpnet):
    """60 tokens: distances past 8 fall in the log-spaced buckets."""
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 150, (2, 60), generator=generator)
    ids[:, 0], ids[0, 59], ids[1, 40], ids[1, 41:] = 0, 2, 2, PAD
    assert _largest_difference(native, _transformers_mpnet(tiny_mpnet), ids) <= 1e-5
    assert int(mpnet.relative_buckets(60, torch.device("cpu")).max()) > 16 + 8  # past the exact buckets


def test_bucket_table_equals_transformers_out_to_the_largest_distance():
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    positions = torch.arange(300)
    want = MPNetEncoder.relative_position_bucket(positions[None, :] - positions[:, None], num_buckets=32)
    got = mpnet.relative_buckets(300, torch.device("cpu"))
    assert torch.equal(got, want) and int(got.max()) == mpnet.BUCKETS - 1


def test_padding_changes_no_real_token(tiny_mpnet):
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    with torch.inference_mode():
        batch = native(input_ids=IDS, attention_mask=(IDS != PAD).long(), output_hidden_states=True)
        alone = native(
            input_ids=IDS[1:2, :3], attention_mask=torch.ones(1, 3, dtype=torch.long), output_hidden_states=True
        )
    for got, want in zip(batch.hidden_states, alone.hidden_states, strict=True):
        torch.testing.assert_close(got[1:2, :3], want, atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not onednn.available(), reason="no oneDNN prepacked linears in this torch build")
def test_onednn_packs_every_linear_and_fuses_the_feed_forward_gelu(tiny_mpnet):
    native = mpnet.load_mpnet(tiny_mpnet, tiny_mpnet / "model.safetensors", torch.float32)
    reference = _transformers_mpnet(tiny_mpnet)
    packed = onednn.prepack_linears(native, torch.device("cpu"), torch.float32)
    assert packed == onednn.prepack_linears(reference, torch.device("cpu"), torch.float32) == 2 * 6 + 1
    assert not any(type(module) is torch.nn.Linear for module in native.modules())
    assert all(layer.intermediate.dense.attr == "gelu" for layer in native.encoder.layer)
    assert _largest_difference(native, _transformers_mpnet(tiny_mpnet), IDS) <= 1e-4


def test_a_masked_lm_checkpoint_loads_its_encoder_with_or_without_a_pooler(tiny_mpnet, tmp_path):
    """MPNetForMaskedLM holds the encoder under ``mpnet.`` and no pooler: the native encoder is built without one
    (transformers' path removes the pooler it would initialise); with the pooler's weights added, with it."""
    from safetensors.torch import load_file, save_file
    from transformers import MPNetForMaskedLM

    folder = _copy(tiny_mpnet, tmp_path)
    MPNetForMaskedLM.from_pretrained(str(tiny_mpnet)).save_pretrained(str(folder))
    weights = [folder / "model.safetensors"]
    assert select.choose(folder, weights, True).native
    native = mpnet.load_mpnet(folder, folder / "model.safetensors", torch.float32)
    assert native.pooler is None
    with torch.inference_mode():
        got = native(input_ids=IDS, attention_mask=(IDS != PAD).long(), output_hidden_states=True)
    assert got.pooler_output is None
    state = load_file(str(folder / "model.safetensors"))
    pooler = {f"mpnet.{k}": v for k, v in load_file(str(tiny_mpnet / "model.safetensors")).items() if "pooler" in k}
    save_file({**state, **pooler}, str(folder / "model.safetensors"))
    assert select.choose(folder, weights, True).native
    native = mpnet.load_mpnet(folder, folder / "model.safetensors", torch.float32)
    assert _largest_difference(native, _transformers_mpnet(tiny_mpnet), IDS) <= 1e-5


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"relative_attention_num_buckets": 16}, "relative_attention_num_buckets 16"),
        ({"hidden_act": "gelu_new"}, "gelu_new"),
        ({"is_decoder": True}, "is_decoder"),
    ],
)
def test_configs_it_cannot_be_sure_of_go_through_transformers(tiny_mpnet, tmp_path, changes, reason):
    folder = _copy(tiny_mpnet, tmp_path)
    _edit_config(folder, **changes)
    assert reason in select.choose(folder, [folder / "model.safetensors"], True).reason


def test_a_weight_of_the_wrong_shape_is_a_clear_model_error(tiny_mpnet, tmp_path):
    folder = _copy(tiny_mpnet, tmp_path)
    _edit_config(folder, intermediate_size=48)
    with pytest.raises(ModelError, match=r"intermediate\.dense\.weight .* \(48, 32\)"):
        mpnet.load_mpnet(folder, folder / "model.safetensors", torch.float32)


def test_loaded_model_fields_match_transformers(tiny_mpnet):
    native = load_model(str(tiny_mpnet), "cpu", "float32", native=True)
    plain = load_model(str(tiny_mpnet), "cpu", "float32", native=False)
    assert native.implementation == "native" and plain.implementation == "transformers"
    for field in ("weights_sha256", "n_layers", "hidden_size", "max_length", "part", "causal", "has_pooler"):
        assert getattr(native, field) == getattr(plain, field), field
    assert native.tokenizer.class_name == type(plain.tokenizer).__name__ == "MPNetTokenizer"


@pytest.mark.parametrize("pairs", [False, True], ids=["texts", "pairs"])
def test_extract_gives_the_same_file_with_native_on_and_off(tiny_mpnet, tmp_path, monkeypatch, pairs):
    if pairs:
        rows = [(a, b, "x") for (a, *_), (b, *_) in zip(SENTENCES, SENTENCES[3:] + SENTENCES[:3], strict=False)]
        corpus = write_csv(tmp_path / "pairs.csv", rows, header=("first", "second", "label"))
        options = dict(text_col="first", text_pair_col="second")
    else:
        corpus, options = write_csv(tmp_path / "c.csv", SENTENCES), dict(tokens=True)
    native, plain = extract_both(corpus, tmp_path, monkeypatch, model=str(tiny_mpnet), batch_size=4, **options)
    same_file_contents(native, plain, 1e-5)


@pytest.mark.slow
def test_extraction_of_an_mpnet_folder_imports_no_transformers(tiny_mpnet, tmp_path):
    corpus, out = write_csv(tmp_path / "c.csv", SENTENCES[:3]), tmp_path / "f.h5"
    script = (
        "import sys, featx\n"
        f"featx.extract({str(corpus)!r}, output={str(out)!r}, model={str(tiny_mpnet)!r}, progress=False)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('transformers', 'sympy')))\n"
        f"print(featx.open({str(out)!r}).attrs['implementation'])\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    env = {key: value for key, value in os.environ.items() if key != "FEATX_NATIVE"}
    env["PYTHONPATH"] = root
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "native"]

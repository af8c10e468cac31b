"""featx extract --dry-run from config.json alone: the parameter count per family, an 8B config, a tiny model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.tiny import SENTENCES, write_csv

import featx
from featx.cli import main
from featx.errors import ModelError
from featx.extraction.dryrun import from_config as config_estimate
from featx.extraction.model.size import model_size

# Meta-Llama-3-8B's config.json, as published (the sizes; rope settings trimmed).
LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
}
SMALL = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96, vocab_size=500)
DECODER = {**SMALL, "num_key_value_heads": 2, "max_position_embeddings": 128}
CONFIGS = [
    ("LlamaConfig", DECODER),
    ("LlamaConfig", {**DECODER, "attention_bias": True, "mlp_bias": True}),
    ("MistralConfig", DECODER),
    ("Qwen2Config", DECODER),
    ("Qwen3Config", {**DECODER, "head_dim": 24}),
    ("GemmaConfig", {**DECODER, "head_dim": 24}),
    ("Gemma2Config", {**DECODER, "head_dim": 24}),
    (
        "GPT2Config",
        dict(n_embd=64, n_layer=3, n_head=4, vocab_size=500, n_positions=128, bos_token_id=0, eos_token_id=0),
    ),
    ("BertConfig", SMALL),
    ("RobertaConfig", SMALL),
    ("XLMRobertaConfig", SMALL),
]


def _counted(config_class: str, args: dict) -> tuple[int, dict]:
    """(parameters of the AutoModel transformers builds, on the meta device: no memory), its config.json."""
    import torch
    import transformers

    config = getattr(transformers, config_class)(**args)
    with torch.device("meta"):
        network = transformers.AutoModel.from_config(config)
    return sum(p.numel() for p in network.parameters()), json.loads(config.to_json_string())


@pytest.mark.parametrize("config_class, args", CONFIGS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CONFIGS)])
def test_the_count_is_exact_for_every_family_it_names(config_class, args):
    real, config = _counted(config_class, args)
    size = model_size(config)
    assert size.exact and size.parameters == real


def test_an_8b_llama_count_and_an_approximate_family_within_2_percent():
    real, config = _counted("LlamaConfig", {key: value for key, value in LLAMA3_8B.items() if key != "architectures"})
    size = model_size({**config, "architectures": ["LlamaForCausalLM"]})
    assert size.parameters == real == 7_504_924_672  # Llama-3-8B without its LM head
    assert size.lm_head_parameters == 128256 * 4096 and size.decoder
    neox = dict(
        hidden_size=2048, num_hidden_layers=16, num_attention_heads=16, intermediate_size=8192, vocab_size=50304
    )
    real, config = _counted("GPTNeoXConfig", neox)
    approximate = model_size(config)
    assert not approximate.exact and abs(approximate.parameters - real) / real < 0.02


@pytest.fixture
def llama_8b(tmp_path) -> Path:
    """A model folder with nothing but an 8B Llama-3 config.json (no weights, no tokenizer)."""
    folder = tmp_path / "llama-3-8b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA3_8B))
    return folder


def _room(monkeypatch, gigabytes: float) -> None:
    monkeypatch.setattr(config_estimate, "available_memory", lambda device, device_map: (int(gigabytes * 1e9), "test"))


def test_an_8b_config_alone_is_estimated_without_weights(llama_8b, tmp_path, monkeypatch):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES * 10)
    _room(monkeypatch, 80)
    guess = featx.estimate(corpus, model=str(llama_8b), dtype="bfloat16", layers="0:17", calibrate=False)
    budget = guess.budget
    assert budget.size.parameters == 7_504_924_672 and budget.weights_bytes == 2 * 7_504_924_672
    assert budget.blocks == 16 and budget.needed_weights_bytes < 0.55 * budget.weights_bytes
    assert guess.layers == list(range(17)) and guess.poolings == ["mean", "max", "last"]  # no cls on a decoder
    assert guess.tokens == 10 * sum(-(-len(row[0]) // 4) + 2 for row in SENTENCES)  # no tokenizer: 4 characters
    assert budget.fits and not guess.warnings and guess.seconds is None
    text = guess.format()
    assert "from config.json alone (the folder holds no weights)" in text and "7,504,924,672 parameters" in text
    assert "need 16 of 32 blocks" in text and "fits: needs" in text
    _room(monkeypatch, 8)
    tight = featx.estimate(corpus, model=str(llama_8b), dtype="bfloat16", calibrate=False)
    assert tight.budget.fits is False and "does NOT fit" in tight.format()
    assert any(warning.startswith("the model does not fit: ") for warning in tight.warnings)


@pytest.mark.slow
def test_cli_dry_run_of_an_8b_config_writes_nothing(llama_8b, tmp_path, monkeypatch):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    _room(monkeypatch, 80)
    result = CliRunner().invoke(
        main, ["extract", str(corpus), "--model", str(llama_8b), "--dtype", "bf16", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "weights in bfloat16 ~15.0 GB" in result.output and "a lower bound" in result.output
    assert not list(tmp_path.glob("*.h5"))


def test_a_tiny_model_from_its_config_agrees_with_the_real_run(tmp_path):
    """With a tokenizer the tokens are counted exactly; weights and file size match the loaded model's."""
    from support.families import BY_NAME, build_family

    from featx.extraction.model.loading import load_model

    model = build_family(BY_NAME["llama"], tmp_path / "llama")
    corpus = write_csv(tmp_path / "c.csv", SENTENCES * 30)
    output = tmp_path / "c.h5"
    guess = featx.estimate(corpus, model=str(model), output=output, from_config=True, calibrate=False)
    loaded_guess = featx.estimate(corpus, model=str(model), output=output, calibrate=False)  # small: loaded
    assert loaded_guess.budget is None and (guess.pooled_bytes, guess.other_bytes, guess.poolings) == (
        loaded_guess.pooled_bytes,
        loaded_guess.other_bytes,
        loaded_guess.poolings,
    )
    assert guess.budget.reason == "asked for" and "counted by its tokenizer" in guess.budget.token_source
    summary = featx.extract(corpus, model=str(model), output=output, progress=False)
    assert guess.tokens == summary.tokens and guess.rows == summary.rows
    assert guess.file_bytes == pytest.approx(summary.file_bytes, rel=0.1)  # a tiny file: HDF5 overhead
    loaded = load_model(str(model), device="cpu")
    assert guess.budget.weights_bytes == sum(p.numel() * p.element_size() for p in loaded.model.parameters())


def test_the_time_is_a_measured_lower_bound(tmp_path):
    from support.families import BY_NAME, build_family

    model = build_family(BY_NAME["qwen2"], tmp_path / "qwen2")
    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    guess = featx.estimate(corpus, model=str(model), from_config=True)
    assert guess.seconds > 0 and guess.budget.matmul_rate > 0 and "a lower bound" in guess.calibration


@pytest.mark.parametrize(
    "change, args, pattern",
    [
        ({"hidden_size": "big"}, [], "hidden_size"),
        ({"num_hidden_layers": 0}, [], "num_hidden_layers"),
        ({}, ["--max-length", "9000"], "exceeds the model's maximum of 8192"),
        ({}, ["--pooling", "cls"], "pooling 'cls' does not fit"),
    ],
    ids=["hidden-not-a-number", "no-layers", "max-length", "cls-on-a-decoder"],
)
def test_bad_configs_and_options_are_one_clear_error(llama_8b, tmp_path, change, args, pattern):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    (llama_8b / "config.json").write_text(json.dumps({**LLAMA3_8B, **change}))
    result = CliRunner().invoke(main, ["extract", str(corpus), "--model", str(llama_8b), "--dry-run", *args])
    assert result.exit_code == 2
    assert_one_clear_error(result.output, pattern)


def test_a_config_that_does_not_fit_its_weights_is_refused_before_estimating(tmp_path, tiny_model):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 4096}))
    with pytest.raises(ModelError, match="larger than any tensor"):
        featx.estimate(write_csv(tmp_path / "c.csv", SENTENCES), model=str(folder), from_config=True)


def test_a_template_is_rendered_before_counting(tmp_path):
    from support.families import BY_NAME, build_family

    model = build_family(BY_NAME["llama"], tmp_path / "llama")
    corpus = write_csv(tmp_path / "c.csv", SENTENCES * 3)
    options = dict(model=str(model), output=tmp_path / "t.h5", template="Review: {text}\nSentiment:", pool_at="last")
    guess = featx.estimate(corpus, from_config=True, calibrate=False, **options)
    plain = featx.estimate(corpus, model=str(model), from_config=True, calibrate=False)
    summary = featx.extract(corpus, progress=False, **options)
    assert guess.tokens == summary.tokens > plain.tokens and "at" in guess.poolings


def test_the_truncated_forward_saving_is_reported_for_a_loaded_model_too(tmp_path):
    from support.families import BY_NAME, build_family

    model = build_family(BY_NAME["mistral"], tmp_path / "mistral")
    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    loaded = featx.estimate(corpus, model=str(model), layers="0:2", calibrate=False)
    configured = featx.estimate(corpus, model=str(model), layers="0:2", calibrate=False, from_config=True)
    assert loaded.budget is None and loaded.notes and loaded.notes[0].startswith("the layers asked for need 1 of 2")
    assert loaded.notes[0] in configured.format() and loaded.notes[0] in loaded.format()
    assert not featx.estimate(corpus, model=str(model), calibrate=False).notes  # every layer: nothing to save


def test_on_a_gpu_the_free_gpu_memory_is_the_room(llama_8b, tmp_path, monkeypatch):
    """No GPU here: torch.cuda answers as an 80 GB GPU with 40 GB free would (the time is not calibrated)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=0: (40 * 10**9, 80 * 10**9))
    corpus = write_csv(tmp_path / "c.csv", SENTENCES)
    guess = featx.estimate(corpus, model=str(llama_8b), calibrate=False)  # auto: cuda, bfloat16
    budget = guess.budget
    assert guess.device == "cuda" and budget.dtype == "bfloat16" and budget.max_tokens == 65536
    assert budget.available == "free GPU memory on cuda" and budget.available_bytes == 40 * 10**9
    assert guess.peak_device_bytes == budget.needed_bytes == budget.weights_bytes + budget.activation_bytes
    assert (
        budget.fits is False and "--max-tokens 16384" in guess.warnings[0] and "--device-map auto" in guess.warnings[0]
    )
    smaller = featx.estimate(corpus, model=str(llama_8b), max_tokens=8192, calibrate=False)
    assert smaller.budget.fits and "fits: needs" in smaller.format()

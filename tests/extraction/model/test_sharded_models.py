"""Sharded safetensors checkpoints (an index and several shards) on featx's loading path, hostile shard
folders, and ``--device-map auto`` refused clearly where it cannot work (no accelerate, no GPU, --device cpu)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.tiny import SENTENCES, write_csv

import featx
from featx.cli import main

INDEX = "model.safetensors.index.json"


@pytest.fixture(scope="module")
def sharded(tiny_model, tmp_path_factory) -> Path:
    """The tiny BERT saved again with ``save_pretrained(max_shard_size=...)``: an index and several shards."""
    import torch
    from transformers import BertModel

    folder = tmp_path_factory.mktemp("sharded") / "bert"
    shutil.copytree(tiny_model, folder)
    (folder / "model.safetensors").unlink()
    BertModel.from_pretrained(str(tiny_model), dtype=torch.float32).save_pretrained(
        str(folder), safe_serialization=True, max_shard_size="40KB"
    )
    assert len(list(folder.glob("model-*-of-*.safetensors"))) >= 3 and (folder / INDEX).exists()
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_csv(tmp_path_factory.mktemp("corpus") / "c.csv", SENTENCES)


def _extract(model: Path, corpus: Path, output: Path, *extra: str):
    return CliRunner().invoke(main, ["extract", str(corpus), "--model", str(model), "-o", str(output), "-q", *extra])


def test_a_sharded_checkpoint_gives_the_features_of_the_single_file(tiny_model, sharded, corpus, tmp_path, monkeypatch):
    """Through transformers both ways (bit for bit), and against featx's own BERT, which reads one file only."""
    native = _extract(tiny_model, corpus, tmp_path / "native.h5")
    monkeypatch.setenv("FEATX_NATIVE", "0")
    single = _extract(tiny_model, corpus, tmp_path / "single.h5")
    many = _extract(sharded, corpus, tmp_path / "many.h5")
    assert native.exit_code == single.exit_code == many.exit_code == 0, many.output
    opened = [featx.open(tmp_path / f"{name}.h5") for name in ("single", "many", "native")]
    with opened[0] as a, opened[1] as b, opened[2] as c:
        for pooling in a.poolings:
            for layer in a.layers:
                np.testing.assert_array_equal(b.features(pooling, layer), a.features(pooling, layer))
                np.testing.assert_allclose(b.features(pooling, layer), c.features(pooling, layer), atol=2e-3)


def _hostile(sharded: Path, tmp_path: Path, mutate) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(sharded, folder, symlinks=True)
    mutate(folder)
    return folder


def _index(change):
    def mutate(folder: Path) -> None:
        index = json.loads((folder / INDEX).read_text())
        change(index)
        (folder / INDEX).write_text(json.dumps(index))

    return mutate


def _first_shard(folder: Path) -> Path:
    return sorted(folder.glob("model-*-of-*.safetensors"))[0]


def _rename_in_index(name: str):
    def change(index: dict) -> None:
        first = sorted(set(index["weight_map"].values()))[0]
        index["weight_map"] = {key: name if value == first else value for key, value in index["weight_map"].items()}

    return _index(change)


def _shard_linked_outside(folder: Path) -> None:
    shard = _first_shard(folder)
    outside = folder.parent / "elsewhere.safetensors"
    shutil.move(shard, outside)
    shard.symlink_to(outside)


def _shard_fifo(folder: Path) -> None:
    shard = _first_shard(folder)
    shard.unlink()
    os.mkfifo(shard)  # reading it would wait forever for a writer


def _shard_cut_short(folder: Path) -> None:
    shard = _first_shard(folder)
    shard.write_bytes(shard.read_bytes()[:-100])


def _more_layers(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": config["num_hidden_layers"] + 1}))


HOSTILE = [
    ("parent-folder", _rename_in_index("../model.safetensors"), "names a shard outside the model folder"),
    ("absolute-path", _rename_in_index("/etc/hostname"), "names a shard outside the model folder"),
    ("not-safetensors", _rename_in_index("pytorch_model.bin"), "or not a safetensors file"),
    ("no-weight-map", _index(lambda index: index.pop("weight_map")), "not a readable safetensors index"),
    ("weight-map-list", _index(lambda index: index.update(weight_map=["a"])), "not a readable safetensors index"),
    ("shard-missing", lambda folder: _first_shard(folder).unlink(), "lacks 1 of the"),
    ("shard-link-outside", _shard_linked_outside, "leads out of the model folder"),
    ("shard-fifo", _shard_fifo, "is not a regular file"),
    ("shard-cut-short", _shard_cut_short, "is cut short"),
    ("config-more-layers", _more_layers, "no stack of 3 layers"),
]


@pytest.mark.parametrize("case, mutate, pattern", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_a_hostile_sharded_folder_is_refused_before_loading(sharded, corpus, tmp_path, case, mutate, pattern):
    """One line, exit 2, for the extraction and for its dry run from config.json alone."""
    folder = _hostile(sharded, tmp_path, mutate)
    result = _extract(folder, corpus, tmp_path / "out.h5")
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)
    dry = CliRunner().invoke(main, ["extract", str(corpus), "--model", str(folder), "--dry-run"])
    assert dry.exit_code == 2, dry.output
    assert_one_clear_error(dry.output, pattern)
    assert not (tmp_path / "out.h5").exists()


def test_a_sharded_folder_is_estimated_from_its_config(sharded, corpus):
    guess = featx.estimate(corpus, model=str(sharded), from_config=True, calibrate=False)
    assert guess.budget.size.exact and guess.budget.size.family == "bert"
    from safetensors.torch import load_file

    shards = sharded.glob("model-*-of-*.safetensors")
    stored = sum(tensor.numel() for shard in shards for tensor in load_file(shard).values())
    assert guess.budget.size.parameters == stored


def _pretend_accelerate(monkeypatch, installed: bool) -> None:
    real = importlib.util.find_spec

    def find_spec(name, *args):
        if name == "accelerate":
            return real("json") if installed else None  # any spec stands for "installed"
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    "installed, gpu, args, pattern",
    [
        (False, False, [], "--device-map auto needs the accelerate package"),
        (True, False, [], "no CUDA GPU is available here"),
        (True, True, ["--device", "cpu"], "--device cpu asks for the CPU"),
    ],
    ids=["no-accelerate", "no-gpu", "device-cpu"],
)
def test_device_map_is_refused_clearly(tiny_model, corpus, tmp_path, monkeypatch, installed, gpu, args, pattern):
    import torch

    _pretend_accelerate(monkeypatch, installed)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    result = _extract(tiny_model, corpus, tmp_path / "out.h5", "--device-map", "auto", *args)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)
    assert not (tmp_path / "out.h5").exists()

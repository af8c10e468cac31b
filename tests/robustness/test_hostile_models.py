"""Hostile model folders: someone else's model folder is untrusted input, like a corpus or a features file.

Each case changes a valid tiny model folder (``conftest.build_tiny_bert``) the way a broken copy, a wrong
config or an attacker would. ``featx extract`` must refuse it with exit 2 and one line (no traceback) while
loading, before the first forward pass; a folder shape featx supports (an encoder-only T5 checkpoint, a link
inside the folder, ``--random-init`` without some weights) must extract. The cases that ate memory before
(a config linked to ``/dev/zero``, absurd sizes) run together in one subprocess under an address-space limit
(``RLIMIT_AS``), so a regression fails there instead of eating the machine.

Add a case by adding a line to ``REFUSED`` or ``MEMORY`` (case id, mutation of the folder, expected message).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.tiny import SENTENCES, write_csv

import featx
from featx.cli import main
from featx.errors import ModelError

REPO = Path(featx.__file__).resolve().parent.parent
ADDRESS_SPACE = 3 * 2**30  # a tiny model's extraction peaks at about 1.4 GiB of address space


def _config(**changes):
    def mutate(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        config.update(changes)
        for key in [key for key, value in changes.items() if value is None]:
            config.pop(key)
        (folder / "config.json").write_text(json.dumps(config))

    return mutate


def _drop_tensors(*fragments: str):
    def mutate(folder: Path) -> None:
        from safetensors.torch import load_file, save_file

        tensors = load_file(folder / "model.safetensors")
        kept = {key: value for key, value in tensors.items() if not any(part in key for part in fragments)}
        assert len(kept) < len(tensors)
        save_file(kept, folder / "model.safetensors", metadata={"format": "pt"})

    return mutate


def _remove(*names: str):
    def mutate(folder: Path) -> None:
        for name in names:
            (folder / name).unlink(missing_ok=True)

    return mutate


def _special_tokens_only(folder: Path) -> None:
    _remove("tokenizer.json")(folder)
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")


def _link(name: str, target: str):
    def mutate(folder: Path) -> None:
        (folder / name).unlink()
        (folder / name).symlink_to(target)

    return mutate


def _link_outside(folder: Path) -> None:
    outside = folder.parent / f"{folder.name}-config.json"
    shutil.copy(folder / "config.json", outside)
    _link("config.json", str(outside))(folder)


def _oversized(name: str, size: int):
    def mutate(folder: Path) -> None:
        with open(folder / name, "r+b") as handle:
            handle.truncate(size)  # sparse: no disk used

    return mutate


NO_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
MISFIT = r"the weights in \S+ do not fit the (\w+) its config\.json describes"

# (case id, mutation of a copy of the tiny BERT folder, regex the one-line message must match)
REFUSED = [
    ("no tokenizer files", _remove(*NO_TOKENIZER), r"has no tokenizer files \(none of tokenizer\.json, vocab\.txt"),
    ("special tokens only", _special_tokens_only, r"tokenizer of \S+ has only its 5 special tokens"),
    (
        "BERT weights under model_type gpt2",
        _config(model_type="gpt2", architectures=None),
        MISFIT.replace(r"(\w+)", "GPT2Model") + r" \(\d+ missing: h\.\*\.attn\.c_attn\.bias, .* more names\)",
    ),
    (
        "one tensor removed",
        _drop_tensors("encoder.layer.1.output.dense.weight"),
        MISFIT.replace(r"(\w+)", "BertModel") + r" \(1 missing: encoder\.layer\.\*\.output\.dense\.weight\).*"
        r"hint: .*only --random-init",
    ),
    (
        "one layer removed",
        _drop_tensors("encoder.layer.1."),
        r"config\.json has num_hidden_layers 2, but the weights hold no stack of 2 layers \(encoder\.layer has 1\)",
    ),
    (
        "a layer more in the weights",
        _config(num_hidden_layers=1),
        MISFIT.replace(r"(\w+)", "BertModel") + r" \(\d+ unused: encoder\.layer\.\*\.attention",
    ),
    (
        "hidden_size not the weights'",
        _config(hidden_size=48),
        r"(config\.json implies a float tensor of \(\d+, 48\)|\d+ of another shape: embeddings)",
    ),
    ("zero layers", _config(num_hidden_layers=0), r"num_hidden_layers 0; featx accepts a whole number from 1 to"),
    ("layers as text", _config(num_hidden_layers="2"), r"num_hidden_layers '2'; featx accepts a whole number"),
    ("layers as a boolean", _config(num_hidden_layers=True), r"num_hidden_layers True; featx accepts"),
    ("config.json linked outside", _link_outside, r"config\.json is a link that leads out of the model folder"),
    (
        "tokenizer.json over its limit",
        _oversized("tokenizer.json", 101 * 2**20),
        r"tokenizer\.json is 101\.0 MiB, over featx's limit of 100 MiB",
    ),
    (
        "tokenizer_config.json over its limit",
        _oversized("tokenizer_config.json", 11 * 2**20),
        r"tokenizer_config\.json is 11\.0 MiB, over featx's limit of 10 MiB",
    ),
]

# Cases that used to allocate without bound: checked in one subprocess under RLIMIT_AS.
MEMORY = [
    ("config.json linked to /dev/zero", _link("config.json", "/dev/zero"), r"config\.json is a link that leads out"),
    ("tokenizer.json linked to /dev/zero", _link("tokenizer.json", "/dev/zero"), r"tokenizer\.json is a link"),
    ("a billion layers", _config(num_hidden_layers=10**9), r"num_hidden_layers 1000000000; featx accepts"),
    ("a thousand layers", _config(num_hidden_layers=1000), r"num_hidden_layers 1000, but the weights hold no stack"),
    ("a billion hidden units", _config(hidden_size=10**9), r"hidden_size 1000000000; featx accepts"),
    ("a huge vocabulary", _config(vocab_size=10**9), r"vocab_size 1000000000; featx accepts"),
    ("a large vocabulary", _config(vocab_size=10**6), r"vocab_size 1000000, larger than any tensor in the weights"),
    ("a large intermediate size", _config(intermediate_size=10**6), r"intermediate_size 1000000, larger than any"),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_csv(tmp_path_factory.mktemp("hostile-models") / "corpus.csv", SENTENCES[:4])


def _hostile_copy(tiny_model: Path, folder: Path, mutate) -> Path:
    shutil.copytree(tiny_model, folder)
    mutate(folder)
    return folder


def _extract(model: Path, corpus: Path, *extra: str):
    output = model.parent / f"{model.name}.h5"
    return CliRunner().invoke(main, ["extract", str(corpus), "--model", str(model), "-o", str(output), "-q", *extra])


@pytest.mark.parametrize("case, mutate, pattern", REFUSED, ids=[case[0] for case in REFUSED])
def test_hostile_model_folder_is_refused(tiny_model, corpus, tmp_path, case, mutate, pattern):
    result = _extract(_hostile_copy(tiny_model, tmp_path / "model", mutate), corpus)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert_one_clear_error(result.output, pattern)


@pytest.mark.parametrize("native", ["0", "1"])
def test_the_transformers_load_report_is_not_printed(tiny_model, corpus, tmp_path, monkeypatch, native):
    """transformers' own multi-line report of missing weights is silenced: featx's line says it."""
    monkeypatch.setenv("FEATX_NATIVE", native)
    model = _hostile_copy(tiny_model, tmp_path / "model", _drop_tensors("encoder.layer.0.attention.self.query"))
    result = _extract(model, corpus)
    assert result.exit_code == 2
    assert_one_clear_error(result.output, r"2 missing: encoder\.layer\.\*\.attention\.self\.query\.bias")


SCRIPT = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from click.testing import CliRunner
from featx.cli import main
corpus, folders = sys.argv[1], json.loads(sys.argv[2])
results = {{}}
for case, folder in folders.items():
    result = CliRunner().invoke(main, ["extract", corpus, "--model", folder, "-o", folder + ".h5", "-q"])
    results[case] = [result.exit_code, result.output, repr(result.exception)]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def memory_results(tiny_model, corpus, tmp_path_factory) -> dict:
    """Every ``MEMORY`` case through the CLI, in one subprocess limited to ``ADDRESS_SPACE`` bytes."""
    base = tmp_path_factory.mktemp("memory-cases")
    folders = {
        case: str(_hostile_copy(tiny_model, base / f"model{index}", mutate))
        for index, (case, mutate, _) in enumerate(MEMORY)
    }
    process = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(limit=ADDRESS_SPACE), str(corpus), json.dumps(folders)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("case, mutate, pattern", MEMORY, ids=[case[0] for case in MEMORY])
def test_hostile_sizes_are_refused_within_bounded_memory(memory_results, case, mutate, pattern):
    exit_code, output, exception = memory_results[case]
    assert exit_code == 2, (output, exception)
    assert_one_clear_error(output, pattern)


def test_random_init_may_lack_weights(tiny_model, corpus, tmp_path):
    """``--random-init`` re-draws every weight, so a folder without some of them still runs."""
    model = _hostile_copy(tiny_model, tmp_path / "model", _drop_tensors("encoder.layer.1."))
    result = _extract(model, corpus, "--random-init")
    assert result.exit_code == 0, result.output


def test_links_inside_the_folder_are_followed(tiny_model, corpus, tmp_path):
    def inside(folder: Path) -> None:
        (folder / "files").mkdir()
        for name in ("config.json", "tokenizer.json"):
            (folder / name).rename(folder / "files" / name)
            (folder / name).symlink_to(Path("files") / name)

    result = _extract(_hostile_copy(tiny_model, tmp_path / "model", inside), corpus)
    assert result.exit_code == 0, result.output


def test_encoder_only_t5_checkpoint_extracts(corpus, tmp_path):
    """A ``T5EncoderModel`` folder (encoder weights only) loads as an encoder, not as a T5Model."""
    from support.families import BY_NAME, build_family

    model = build_family(BY_NAME["t5-encoder-only"], tmp_path / "t5")
    assert json.loads((model / "config.json").read_text())["architectures"] == ["T5EncoderModel"]
    result = _extract(model, corpus)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "MISSING" not in result.output
    with featx.open(model.parent / "t5.h5") as features:
        assert features.attrs["model_part"] == "model"  # no decoder in the checkpoint: the whole model ran
        assert features.layers == [0, 1, 2]


def test_native_bert_refuses_a_checkpoint_without_a_weight(tiny_model, tmp_path):
    """featx's own BERT loads strictly: a missing weight is one ``ModelError`` naming it."""
    import torch

    from featx.extraction.fast import bert

    model = _hostile_copy(tiny_model, tmp_path / "model", _drop_tensors("encoder.layer.1.output.dense.weight"))
    with pytest.raises(ModelError, match=r"missing: encoder\.layer\.1\.output\.dense\.weight"):
        bert.load_bert(model, model / "model.safetensors", torch.float32)


def test_a_checkpoint_without_a_pooler_runs_without_the_pooler_pooling(tiny_model, corpus, tmp_path):
    """A masked-LM checkpoint has no pooler: the encoder runs, and no randomly drawn pooler is read."""
    model = _hostile_copy(tiny_model, tmp_path / "model", _drop_tensors("pooler."))
    assert _extract(model, corpus).exit_code == 0
    result = _extract(model, corpus, "--pooling", "pooler", "--overwrite")
    assert result.exit_code == 2
    assert_one_clear_error(result.output, r"pooling 'pooler' is not available: model \S+ has no pooler head")


def test_a_hugging_face_cache_snapshot_is_read_through_its_links(tiny_model, corpus, tmp_path):
    """In the hub cache a snapshot's files are links to ``../../blobs/``: out of the folder, inside the cache's
    repository folder, where they are allowed to lead."""
    repository = tmp_path / "models--org--tiny"
    snapshot = repository / "snapshots" / "0123abcd"
    (repository / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for path in sorted(tiny_model.iterdir()):
        blob = repository / "blobs" / f"blob-{path.name}"
        shutil.copy(path, blob)
        (snapshot / path.name).symlink_to(Path("..", "..", "blobs", blob.name))
    result = _extract(snapshot, corpus)
    assert result.exit_code == 0, result.output


def test_a_large_file_that_nothing_reads_is_left_alone(tiny_model, corpus, tmp_path):
    """Only the files featx or transformers read are bounded: a long training log beside them is not one."""

    def log(folder: Path) -> None:
        with open(folder / "trainer_state.json", "wb") as handle:
            handle.truncate(11 * 2**20)

    result = _extract(_hostile_copy(tiny_model, tmp_path / "model", log), corpus)
    assert result.exit_code == 0, result.output


def test_a_tensor_numbered_in_superscript_digits_is_no_layer():
    """A tensor name is the checkpoint's text: 'encoder.layer.².x' passed str.isdigit and int() raised."""
    from featx.extraction.model.checks import check_against_tensors

    shapes = {"encoder.layer.0.w": (8, 8), "encoder.layer.\u00b2.w": (8, 8)}
    with pytest.raises(ModelError, match=r"no stack of 2 layers \(encoder\.layer has 1\)"):
        check_against_tensors({"num_hidden_layers": 2, "hidden_size": 8}, shapes, Path("config.json"))

"""Odd treebanks and word inputs: each is refused with one clear line before any model is loaded (or, for a
sentence with several roots, read with a one-line warning); and odd model folders met on the same road.

Add a case by adding a line to ``REFUSED``: the case id, the input files (name -> content) and the expected
message.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error

from featx.cli import main
from featx.extraction.inputs.word_corpus import read_word_corpus


def _conllu(*rows: str, sent_id: str = "s1") -> str:
    """A CoNLL-U sentence of word rows ``ID FORM UPOS FEATS HEAD`` (the other fields '_')."""
    lines = [f"# sent_id = {sent_id}"]
    for row in rows:
        ident, form, upos, feats, head = row.split()
        lines.append("\t".join([ident, form, "_", upos, "_", feats, head, "dep", "_", "_"]))
    return "\n".join(lines) + "\n\n"


GOOD = _conllu("1 The DET _ 2", "2 cat NOUN _ 3", "3 runs VERB _ 0")

REFUSED = [
    (
        "range-beyond-sentence",
        {"a.conllu": _conllu("1 The DET _ 2", "9-10 cat _ _ _", "2 cat NOUN _ 3", "3 runs VERB _ 0")},
        r"line 3: multiword token 9-10 goes beyond the sentence's 3 words",
    ),
    (
        "feats-without-equals",
        {"a.conllu": _conllu("1 The DET Definite 2", "2 cat NOUN Number=Sing 0")},
        r"line 2: FEATS 'Definite' has no '='",
    ),
    (
        "head-cycle",
        {"a.conllu": _conllu("1 The DET _ 2", "2 cat NOUN _ 1", "3 runs VERB _ 0", sent_id="loop")},
        r"\(sent_id loop\): the heads form a cycle",
    ),
    ("comments-only", {"a.conllu": "# just a comment\n# and another\n"}, r"a\.conllu holds no sentences"),
    (
        "mixed-formats",
        {"a.conllu": GOOD, "b.csv": "text,label\nhello there,a\n"},
        r"input files mix formats: a\.conllu is conllu, b\.csv is a table of texts",
    ),
]


def _write(folder: Path, files: dict[str, str]) -> list[str]:
    for name, content in files.items():
        (folder / name).write_text(content, encoding="utf-8")
    return [str(folder / name) for name in files]


@pytest.mark.parametrize(("files", "pattern"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_odd_word_input_is_refused_clearly(tmp_path, files, pattern):
    inputs = _write(tmp_path, files)
    result = CliRunner().invoke(main, ["extract", *inputs, "--model", str(tmp_path / "no-model"), "-q"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)


def test_several_roots_are_read_with_one_warning(tmp_path):
    (path,) = _write(tmp_path, {"a.conllu": _conllu("1 The DET _ 0", "2 cat NOUN _ 0", sent_id="twin")})
    corpus = read_word_corpus([Path(path)], "conllu")
    warnings = [note for note in corpus.notes if "several roots" in note]
    assert warnings == [
        "warning: 1 sentence(s) have several roots (head 0), first twin: "
        "read as given (the --arcs probes leave root words out)"
    ]
    assert list(corpus.words.heads) == [-1, -1]


def _empty_vocabulary(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    (folder / "vocab.txt").write_text("")


def _unknown_model_type(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="brandnew2099", architectures=["Brandnew2099Model"])
    (folder / "config.json").write_text(json.dumps(config))


def _vision_model(folder: Path) -> None:
    import transformers

    (folder / "model.safetensors").unlink()
    config = transformers.ViTConfig(
        hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8, image_size=8, patch_size=4
    )
    transformers.ViTModel(config).save_pretrained(str(folder))


def _composite_model(folder: Path) -> None:
    import transformers

    (folder / "model.safetensors").unlink()
    tower = dict(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    config = transformers.CLIPConfig(
        text_config={**tower, "vocab_size": 30}, vision_config={**tower, "image_size": 8, "patch_size": 4}
    )
    transformers.CLIPModel(config).save_pretrained(str(folder))


# (case id, mutation of a copy of the tiny BERT folder, regex the one-line message must match)
MODELS = [
    ("empty vocab.txt", _empty_vocabulary, r"its tokenizer files are empty \(vocab\.txt\)"),
    (  # offline, transformers' paragraph of pip advice is no help: one line says what is wrong
        "model_type unknown to transformers",
        _unknown_model_type,
        r"transformers \S+ does not know its model_type 'brandnew2099'.*hint: check model_type in its config\.json",
    ),
    (  # it loads, and its forward pass would fail on the token ids with a traceback
        "a vision model",
        _vision_model,
        r"\(ViTModel\) does not read text: its forward takes pixel_values, not input_ids.*hint: featx runs text models",
    ),
    (  # its sizes are in sub-configs: it stored features 0 wide, and h5py failed with a traceback
        "a text-and-vision model",
        _composite_model,
        r"\(CLIPModel\) names no hidden size and layer count of its own.*hint: save its text model alone",
    ),
]


@pytest.mark.parametrize(("mutate", "pattern"), [case[1:] for case in MODELS], ids=[case[0] for case in MODELS])
def test_odd_model_folder_is_refused_clearly(tiny_model, tmp_path, mutate, pattern):
    folder = Path(shutil.copytree(tiny_model, tmp_path / "model"))
    mutate(folder)
    (corpus,) = _write(tmp_path, {"a.conllu": GOOD})
    result = CliRunner().invoke(main, ["extract", corpus, "--model", str(folder), "-o", str(tmp_path / "o.h5"), "-q"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)

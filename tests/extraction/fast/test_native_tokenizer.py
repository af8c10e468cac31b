"""The tokenizer facade (featx/extraction/fast/tokenizer.py): what featx reads of a tokenizer, and every token it
makes (texts, pairs, pre-tokenised words), equal to ``AutoTokenizer``'s; folders it cannot be sure of refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.families import BY_NAME, build_family
from support.tiny import SENTENCES, build_tiny_mpnet, build_tiny_roberta

from featx.extraction.fast.tokenizer import NativeTokenizer, NotEquivalent, load_native_tokenizer
from featx.extraction.inputs.pairs import tokenize_pairs
from featx.extraction.tokens.tokenize import fast_backend, special_layout, tokenize_texts
from featx.extraction.tokens.word_tokens import tokenize_words

TEXTS = [row[0] for row in SENTENCES] + [
    "The CAT Loved THE Film",
    "café naïve résumé",
    "中文 字 the",
    "a [SEP] b [CLS]",
    "tab\there\x00nul\u200b",
    "the <mask> cat<mask> <s> a </s> <unk> <UNK> [UNK] <pad>",
    "",
    "   ",
    "walk" * 40,
    "Zebra, quokka! xylophone?",
]
ATTRIBUTES = ["model_max_length", "model_input_names"] + [
    f"{name}_token{suffix}" for name in ("bos", "eos", "unk", "sep", "pad", "cls", "mask") for suffix in ("", "_id")
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_model) -> dict[str, Path]:
    from featx.extraction.model.files import default_model_path

    built = {name: build_family(BY_NAME[name], tmp_path_factory.mktemp(name)) for name in ("bert", "roberta")}
    return {
        "tiny-bert": tiny_model,
        "minilm": default_model_path(),
        "bert-backend": built["bert"],
        "roberta-backend": built["roberta"],
        "mpnet": build_tiny_mpnet(tmp_path_factory.mktemp("mpnet")),
        "mpnet-legacy": build_tiny_mpnet(tmp_path_factory.mktemp("mpnet-legacy"), legacy=True),
        "roberta": build_tiny_roberta(tmp_path_factory.mktemp("roberta")),
        "roberta-legacy": build_tiny_roberta(tmp_path_factory.mktemp("roberta-legacy"), legacy=True),
        "roberta-hub": build_tiny_roberta(tmp_path_factory.mktemp("roberta-hub"), legacy=True, hub=True),
    }


def _native(folder: Path) -> NativeTokenizer:
    """``load_native_tokenizer`` with the model_type the folder's config.json names, as ``select.choose`` passes it."""
    return load_native_tokenizer(folder, json.loads((folder / "config.json").read_text())["model_type"])


def _both(folder: Path):
    from transformers import AutoTokenizer

    return _native(folder), AutoTokenizer.from_pretrained(str(folder))


NAMES = [
    "tiny-bert",
    "minilm",
    "bert-backend",
    "roberta-backend",
    "mpnet",
    "mpnet-legacy",
    "roberta",
    "roberta-legacy",
    "roberta-hub",
]


@pytest.mark.parametrize("name", NAMES)
def test_attributes_and_calls_equal_auto_tokenizer(folders, name):
    native, auto = _both(folders[name])
    assert isinstance(native, NativeTokenizer)
    for attribute in ATTRIBUTES:
        assert getattr(native, attribute) == getattr(auto, attribute), attribute
    assert native.class_name == type(auto).__name__
    for args in (("a",), ("the cat",), ("the cat", "a dog")):
        got, want = native(*args), auto(*args)
        assert got["input_ids"] == want["input_ids"] and got["attention_mask"] == want["attention_mask"]
        assert got.get("token_type_ids") == want.get("token_type_ids")


@pytest.mark.parametrize("name", NAMES)
def test_texts_pairs_and_words_tokenise_the_same(folders, name):
    native, auto = _both(folders[name])
    assert special_layout(native) == special_layout(auto)
    for max_length in (8, 64):
        got, want = (tokenize_texts(t, TEXTS, max_length, with_word_ids=True) for t in (native, auto))
        for field in ("input_ids", "offsets", "full_lengths", "word_ids"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), (max_length, field)
    got, want = (tokenize_pairs(t, TEXTS, TEXTS[::-1], 16, with_word_ids=True) for t in (native, auto))
    for field in ("input_ids", "offsets", "full_lengths", "word_ids", "type_ids", "segments"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    sentences = [text.split() for text in TEXTS if text.split()]
    ids = [str(index) for index in range(len(sentences))]
    got, want = (tokenize_words(t, sentences, ids) for t in (native, auto))
    for field in ("input_ids", "offsets", "word_ids", "word_offsets", "n_subwords"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field


def test_featx_tokenises_with_its_own_backend_uncopied_and_never_changes_it(folders):
    """MiniLM's tokenizer.json sets truncation and padding: featx's tokenizer drops them at load, so tokenising
    uses its backend as it is (no copy of the vocabulary per call), and pairs truncating at 16 leave it plain;
    transformers' tokenizer, whose backend transformers itself reconfigures, is still copied."""
    native, auto = _both(folders["minilm"])
    backend = native.backend_tokenizer
    assert fast_backend(native) is backend
    tokenize_pairs(native, TEXTS, TEXTS[::-1], 16, with_word_ids=True)
    tokenize_texts(native, TEXTS, 8, with_word_ids=True)
    assert (backend.truncation, backend.padding) == (None, None)
    assert native("a b")["input_ids"] == auto("a b")["input_ids"]
    assert fast_backend(auto) is not auto.backend_tokenizer


def _edited(folder: Path, tmp_path: Path, config: dict | None = None, tokenizer_json=None) -> Path:
    copy = Path(shutil.copytree(folder, tmp_path / "tokenizer"))
    if config is not None:
        path = copy / "tokenizer_config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    if tokenizer_json is not None:
        path = copy / "tokenizer.json"
        path.write_text(json.dumps(tokenizer_json(json.loads(path.read_text()))))
    return copy


def test_a_config_that_changes_the_normaliser_is_refused(folders, tmp_path):
    """transformers 5 builds a BertTokenizer's normaliser from tokenizer_config.json, not from tokenizer.json."""
    from transformers import AutoTokenizer

    folder = _edited(folders["tiny-bert"], tmp_path, config={"do_lower_case": False})
    with pytest.raises(NotEquivalent, match="normalizer"):
        _native(folder)
    assert (
        AutoTokenizer.from_pretrained(str(folder))("The")["input_ids"]
        != _native(folders["tiny-bert"])("The")["input_ids"]
    )  # the check matters: transformers does tokenise otherwise


def _add_token(data: dict, special: bool) -> dict:
    data["added_tokens"].append(
        {
            "id": 10,
            "content": "j",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": True,
            "special": special,
        }
    )
    return data


@pytest.mark.parametrize(
    "case, match",
    [
        ({"tokenizer_class": "XLMRobertaTokenizer"}, "tokenizer class"),
        ({"add_bos_token": False}, "add_bos_token"),
        ({"split_special_tokens": True}, "split_special_tokens"),
        ({"cls_token": {"content": "[CLS]", "lstrip": True}}, "not a plain special token"),
        ("added", "not a plain special token"),
        ("no-config", "no tokenizer_config.json"),
        ("no-file", "no tokenizer.json"),
        ("post-processor", "post_processor"),
    ],
)
def test_folders_it_cannot_be_sure_of_are_refused(folders, tmp_path, case, match):
    if case == "added":
        folder = _edited(folders["tiny-bert"], tmp_path, tokenizer_json=lambda data: _add_token(data, False))
    elif case == "post-processor":
        folder = _edited(
            folders["tiny-bert"],
            tmp_path,
            tokenizer_json=lambda data: {
                **data,
                "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
            },
        )
    elif case in ("no-config", "no-file"):
        folder = _edited(folders["tiny-bert"], tmp_path)
        (folder / ("tokenizer_config.json" if case == "no-config" else "tokenizer.json")).unlink()
    else:
        folder = _edited(folders["tiny-bert"], tmp_path, config=case)
    with pytest.raises(NotEquivalent, match=match):
        _native(folder)


def test_a_missing_special_token_would_be_added_by_transformers_so_it_is_refused(folders, tmp_path):
    folder = _edited(
        folders["tiny-bert"], tmp_path, tokenizer_json=lambda data: {**data, "added_tokens": data["added_tokens"][:-1]}
    )  # no [MASK]
    with pytest.raises(NotEquivalent, match="other special tokens"):
        _native(folder)


def test_an_mpnet_mask_token_without_its_lstrip_is_refused(folders, tmp_path):
    """MPNetTokenizer's ``<mask>`` takes the space before it; a folder saying otherwise is not certain."""
    folder = _edited(folders["mpnet-legacy"], tmp_path)
    path = folder / "special_tokens_map.json"
    special_map = json.loads(path.read_text())
    path.write_text(json.dumps({**special_map, "mask_token": {**special_map["mask_token"], "lstrip": False}}))
    with pytest.raises(NotEquivalent, match="not a plain special token"):
        _native(folder)


def _declared_mask_without_lstrip(folder: Path, tmp_path: Path) -> Path:
    copy = _edited(folder, tmp_path)
    path = copy / "tokenizer_config.json"
    config = json.loads(path.read_text())
    mask = next(key for key, entry in config["added_tokens_decoder"].items() if entry["content"] == "<mask>")
    config["added_tokens_decoder"][mask]["lstrip"] = False
    path.write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize(
    "case, match",
    [
        ("declared", "not as tokenizer_config.json declares"),
        ({"add_prefix_space": True}, "pre_tokenizer"),
        ({"trim_offsets": False}, "post_processor"),
    ],
)
def test_roberta_folders_transformers_reads_otherwise_are_refused(folders, tmp_path, case, match):
    """transformers 5's RobertaTokenizer rebuilds its pipeline from tokenizer_config.json and keeps the added
    tokens it declares: where tokenizer.json says otherwise, transformers does tokenise otherwise."""
    from transformers import AutoTokenizer

    if case == "declared":
        folder = _declared_mask_without_lstrip(folders["roberta-legacy"], tmp_path)
    else:
        folder = _edited(folders["roberta"], tmp_path, config=case)
    with pytest.raises(NotEquivalent, match=match):
        _native(folder)
    text = "the cat <mask> loved the film"
    auto = AutoTokenizer.from_pretrained(str(folder))
    if case == "declared":  # the space before <mask>
        assert auto(text)["input_ids"] != _native(folders["roberta-legacy"])(text)["input_ids"]
    elif case == {"add_prefix_space": True}:
        assert auto(text)["input_ids"] != _native(folders["roberta"])(text)["input_ids"]
    else:  # the same ids, but the offsets (the word alignment) keep the space before each word
        offsets = auto("the cat loved", return_offsets_mapping=True)["offset_mapping"]
        assert offsets[2] == (3, 7)  # " cat", where tokenizer.json's trimmed offsets give (4, 7)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"model_type": "xlm-roberta"}, "no tokenizer_config.json"),  # AutoTokenizer: XLMRobertaTokenizer
        ("mask-map", "not a plain special token"),  # special_tokens_map.json disagrees with tokenizer.json
    ],
)
def test_roberta_hub_folders_it_cannot_be_sure_of_are_refused(folders, tmp_path, change, match):
    folder = _edited(folders["roberta-hub"], tmp_path)
    if change == "mask-map":
        mask = {"content": "<mask>", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False}
        (folder / "special_tokens_map.json").write_text(json.dumps({"mask_token": mask}))
    else:
        path = folder / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(NotEquivalent, match=match):
        _native(folder)

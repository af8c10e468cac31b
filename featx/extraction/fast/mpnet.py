"""An MPNet encoder in plain torch (all-mpnet-base-v2 & co.), computing what transformers' ``MPNetModel`` computes.

transformers runs MPNet's attention eagerly (it has no sdpa path) and, to build the model class, imports most
of its modeling stack (about 2.5 s of a command's start-up); here the attention is torch's
``scaled_dot_product_attention`` with the relative position bias and the padding mask as one additive mask.
The module tree has transformers' attribute names (``embeddings.word_embeddings``, ``encoder.layer.N.attention.
attn.q``, ``encoder.relative_attention_bias``, ``intermediate.dense``, ``pooler.dense``, ...), so a safetensors
checkpoint loads by name and featx's oneDNN prepacking packs the same layers (the feed-forward's dense + GELU
fused, as for BERT: the blocks after attention are ``bert.py``'s). Each forward repeats transformers' operations:
positions counted past the padding id (1, fixed in ``MPNetEmbeddings``: not config.json's ``pad_token_id``),
word + position embeddings, one bias from 32 log-spaced relative-distance buckets (max distance 128: fixed in
``MPNetEncoder``) shared by all layers, then per layer attention -> dropout -> residual add -> LayerNorm and the
feed-forward. float32 results agree with transformers' to rounding.

Only what ``select.py`` lets through runs here: ``model_type`` mpnet, an encoder, ``hidden_act`` gelu or relu,
at least the 32 buckets transformers reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
from torch import nn

from ...errors import ModelError
from .bert import BertEncoder, BertLayer, BertModel, BertSettings, merge_heads, split_heads
from .checkpoint import build_on_meta, load_encoder, match_keys
from .packing import Packing

PREFIX = "mpnet."  # a checkpoint of MPNetForMaskedLM & co. holds the encoder under this prefix
IGNORED_KEYS = ("embeddings.position_ids",)  # a buffer checkpoints saved; transformers ignores it too
PADDING_IDX = 1  # transformers' MPNetEmbeddings uses 1 whatever config.json says
BUCKETS = 32  # transformers' MPNetEncoder.compute_position_bias always asks for 32 buckets
MAX_DISTANCE = 128


@dataclass(frozen=True)
class MPNetSettings(BertSettings):
    """The config.json fields the network depends on, with ``MPNetConfig``'s defaults; also ``model.config``."""

    vocab_size: int = 30527
    max_position_embeddings: int = 514
    layer_norm_eps: float = 1e-5
    pad_token_id: int | None = 1
    relative_attention_num_buckets: int = 32
    model_type: str = "mpnet"
    label: ClassVar[str] = "MPNet"

    def check(self) -> None:
        super().check()
        buckets = self.relative_attention_num_buckets
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < BUCKETS:
            raise ModelError(
                f"config.json of this MPNet model has relative_attention_num_buckets {buckets!r}; "
                f"transformers reads {BUCKETS} buckets"
            )
        if self.max_position_embeddings < PADDING_IDX + 2:
            raise ModelError("config.json of this MPNet model has max_position_embeddings below 3")


class MPNetEmbeddings(nn.Module):
    def __init__(self, settings: MPNetSettings):
        super().__init__()
        self.word_embeddings = nn.Embedding(settings.vocab_size, settings.hidden_size, padding_idx=PADDING_IDX)
        self.position_embeddings = nn.Embedding(
            settings.max_position_embeddings, settings.hidden_size, padding_idx=PADDING_IDX
        )
        self.LayerNorm = nn.LayerNorm(settings.hidden_size, eps=settings.layer_norm_eps)
        self.dropout = nn.Dropout(settings.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        real = input_ids.ne(PADDING_IDX).int()
        position_ids = (torch.cumsum(real, dim=1).type_as(real) * real).long() + PADDING_IDX
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MPNetSelfAttention(nn.Module):
    def __init__(self, settings: MPNetSettings):
        super().__init__()
        self.attention_head_size = settings.hidden_size // settings.num_attention_heads
        self.q = nn.Linear(settings.hidden_size, settings.hidden_size)
        self.k = nn.Linear(settings.hidden_size, settings.hidden_size)
        self.v = nn.Linear(settings.hidden_size, settings.hidden_size)
        self.o = nn.Linear(settings.hidden_size, settings.hidden_size)
        self.dropout = nn.Dropout(settings.attention_probs_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, bias: torch.Tensor, packing: Packing | None = None) -> torch.Tensor:
        """``bias``: the position bias plus the padding mask, ``(batch or 1, heads, query, key)``; ``packing``: the
        hidden states are the real tokens only (``bert.BertEncoder``)."""
        q = split_heads(self.q(hidden_states), self.attention_head_size, packing)
        k = split_heads(self.k(hidden_states), self.attention_head_size, packing)
        v = split_heads(self.v(hidden_states), self.attention_head_size, packing)
        context = nn.functional.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=bias,
            dropout_p=self.dropout.p if self.training else 0.0,
            scale=1 / math.sqrt(self.attention_head_size),
        )
        return self.o(merge_heads(context, packing))


class MPNetAttention(nn.Module):
    def __init__(self, settings: MPNetSettings):
        super().__init__()
        self.attn = MPNetSelfAttention(settings)
        self.LayerNorm = nn.LayerNorm(settings.hidden_size, eps=settings.layer_norm_eps)
        self.dropout = nn.Dropout(settings.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, bias: torch.Tensor, packing: Packing | None = None) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.attn(hidden_states, bias, packing)) + hidden_states)


class MPNetLayer(BertLayer):
    """Attention (with the position bias and padding as one mask), then BERT's feed-forward blocks."""

    attention_class = MPNetAttention


def relative_buckets(length: int, device: torch.device) -> torch.Tensor:
    """transformers' ``relative_position_bucket`` of every (query, key) pair: ``(length, length)`` bucket ids."""
    positions = torch.arange(length, dtype=torch.long, device=device)
    n = -(positions[None, :] - positions[:, None])
    half = BUCKETS // 2
    buckets = (n < 0).to(torch.long) * half
    n = torch.abs(n)
    max_exact = half // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(MAX_DISTANCE / max_exact) * (half - max_exact)).to(
        torch.long
    )
    large = torch.min(large, torch.full_like(large, half - 1))
    return buckets + torch.where(n < max_exact, n, large)


class MPNetEncoder(BertEncoder):
    layer_class = MPNetLayer

    def __init__(self, settings: MPNetSettings):
        super().__init__(settings)
        self.relative_attention_bias = nn.Embedding(
            settings.relative_attention_num_buckets, settings.num_attention_heads
        )

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, packing: Packing | None = None
    ) -> list[torch.Tensor]:
        """Every layer's output, in order; ``attention_mask``: True at padded keys, ``(batch, key)``, or None;
        ``packing``: as ``bert.BertEncoder`` takes it."""
        length = hidden_states.shape[1]
        bias = self.relative_attention_bias(relative_buckets(length, hidden_states.device))
        bias = bias.permute(2, 0, 1).unsqueeze(0)  # (1, heads, query, key)
        if attention_mask is not None:
            bias = bias.masked_fill(attention_mask[:, None, None, :], torch.finfo(bias.dtype).min)
        return super().forward(hidden_states, bias, packing)


class MPNetModel(BertModel):
    """The encoder: ``model(input_ids, attention_mask, output_hidden_states=True)``; ``token_type_ids`` is taken
    and ignored, as transformers' ``MPNetModel`` does."""

    embeddings_class = MPNetEmbeddings
    encoder_class = MPNetEncoder

    @staticmethod
    def encoder_mask(attention_mask: torch.Tensor | None, length: int, device: torch.device) -> torch.Tensor | None:
        """True at padded keys, ``(batch, key)``; None when no token is padding (checked where the mask is, as
        ``bert.sdpa_mask`` does)."""
        if attention_mask is None or bool(attention_mask.all()):
            return None
        return ~attention_mask.to(device=device, dtype=torch.bool, non_blocking=True)


def checkpoint_match(model_keys, checkpoint_keys) -> tuple[dict[str, str], list[str], list[str]]:
    """``checkpoint.match_keys`` for an ``MPNetModel``: an ``mpnet.``-prefixed checkpoint (a model with heads) too."""
    return match_keys(model_keys, checkpoint_keys, PREFIX, IGNORED_KEYS)


def build(settings: MPNetSettings) -> MPNetModel:
    """The network with its parameters on the meta device (no memory, no random init): weights come next."""
    return build_on_meta(lambda: MPNetModel(settings))


def load_mpnet(folder: Path, weights: Path, dtype: torch.dtype) -> MPNetModel:
    """The encoder of ``folder`` with every weight of ``weights`` in ``dtype``, in eval mode, on the CPU; strict,
    as ``checkpoint.load_strict`` says (a checkpoint without the pooler gives the encoder without one)."""
    return load_encoder(folder, weights, dtype, MPNetSettings, build, PREFIX, IGNORED_KEYS)

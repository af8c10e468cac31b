"""A BERT encoder in plain torch, computing what transformers' ``BertModel`` computes with sdpa attention.

The module tree has transformers' attribute names (``embeddings.word_embeddings``, ``encoder.layer.N.attention.
self.query``, ``intermediate.intermediate_act_fn``, ``pooler.dense``, ...), so a safetensors checkpoint loads by
name and featx's oneDNN prepacking (``onednn.py``, which reads ``dense``/``intermediate_act_fn`` and each parent's
forward source) packs and fuses the same layers. Each forward repeats transformers' operations in the same order
(embeddings summed word + type, then + position; the padding mask as a boolean ``(batch, 1, 1, key)`` tensor that
sdpa broadcasts over the queries, left out when no token is padding), so float32 results agree to rounding, bit
for bit on the CPU for a batch run padded. A batch with enough padding runs its blocks on the real tokens only
(``packing.py``): the same products on fewer rows, so the real tokens' states are the same (bit for bit on the CPUs
measured; to float rounding in general) and the padded positions of a block's output are zeros, which no pooling
or token store reads.

Only what ``select.py`` lets through runs here: ``model_type`` bert, absolute positions, an encoder (no decoder,
no cross-attention), ``hidden_act`` gelu (exact, erf) or relu.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
from torch import nn

from ...errors import ModelError
from .checkpoint import build_on_meta, load_encoder, match_keys
from .packing import Packing, plan_packing

ACTIVATIONS = ("gelu", "relu")
PREFIX = "bert."  # a checkpoint of BertForMaskedLM & co. holds the encoder under this prefix
# Buffers older checkpoints saved with the weights; transformers ignores them when loading a BertModel, as here.
IGNORED_KEYS = ("embeddings.position_ids", "embeddings.token_type_ids")
S = TypeVar("S", bound="BertSettings")


@dataclass(frozen=True)
class BertSettings:
    """The config.json fields the network depends on, with ``BertConfig``'s defaults; also ``model.config``."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    initializer_range: float | None = 0.02  # --random-init's spread (``random_init.py``; None or 0: 0.02)
    pad_token_id: int | None = 0
    position_embedding_type: str = "absolute"
    model_type: str = "bert"
    is_encoder_decoder: bool = False
    label: ClassVar[str] = "BERT"  # the family in messages

    @classmethod
    def from_config(cls: type[S], config: dict) -> S:
        values = {field.name: config[field.name] for field in fields(cls) if field.name in config}
        if values.get("position_embedding_type") is None:
            values["position_embedding_type"] = "absolute"
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """A ``ModelError`` for values this network cannot be built from."""
        sizes = (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        )
        bad = [
            name
            for name in sizes
            if isinstance(getattr(self, name), bool)
            or not isinstance(getattr(self, name), int)
            or getattr(self, name) < 1
        ]
        if bad or self.hidden_size % self.num_attention_heads:
            what = ", ".join(bad) or "hidden_size is not a multiple of num_attention_heads"
            raise ModelError(f"config.json of this {self.label} model has unusable sizes ({what})")
        if self.hidden_act not in ACTIVATIONS:
            raise ModelError(f"hidden_act '{self.hidden_act}' is not one featx's {self.label} implements")
        spread = self.initializer_range
        if spread is not None and (isinstance(spread, bool) or not isinstance(spread, int | float) or not spread >= 0):
            raise ModelError(f"config.json of this {self.label} model has initializer_range {spread!r}, not a spread")
        pad = self.pad_token_id
        if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < self.vocab_size):
            raise ModelError(f"config.json of this {self.label} model has pad_token_id {pad!r} outside its vocabulary")


class GELUActivation(nn.Module):
    """Exact (erf) GELU, built like transformers' class of that name, which the oneDNN fusion recognises."""

    def __init__(self):
        super().__init__()
        self.act = nn.functional.gelu

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self.act(input)


@dataclass
class EncoderOutput:
    """What featx reads of transformers' ``BaseModelOutputWithPooling``."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None  # the embeddings' output, then every layer's
    attentions: None = None


class BertEmbeddings(nn.Module):
    def __init__(self, settings: BertSettings):
        super().__init__()
        self.word_embeddings = nn.Embedding(
            settings.vocab_size, settings.hidden_size, padding_idx=settings.pad_token_id
        )
        self.position_embeddings = nn.Embedding(settings.max_position_embeddings, settings.hidden_size)
        self.token_type_embeddings = nn.Embedding(settings.type_vocab_size, settings.hidden_size)
        self.LayerNorm = nn.LayerNorm(settings.hidden_size, eps=settings.layer_norm_eps)
        self.dropout = nn.Dropout(settings.hidden_dropout_prob)

    def position_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Each token's row of the position table: 0, 1, 2, ... (``roberta.RobertaEmbeddings``: past the padding)."""
        return torch.arange(input_ids.shape[1], device=input_ids.device)[None]

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        position_ids = self.position_ids(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros(input_ids.shape, dtype=torch.long, device=input_ids.device)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, settings: BertSettings):
        super().__init__()
        self.num_attention_heads = settings.num_attention_heads
        self.attention_head_size = settings.hidden_size // settings.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.scaling = self.attention_head_size**-0.5
        self.query = nn.Linear(settings.hidden_size, self.all_head_size)
        self.key = nn.Linear(settings.hidden_size, self.all_head_size)
        self.value = nn.Linear(settings.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(settings.attention_probs_dropout_prob)

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, packing: Packing | None = None
    ) -> torch.Tensor:
        query = split_heads(self.query(hidden_states), self.attention_head_size, packing)
        key = split_heads(self.key(hidden_states), self.attention_head_size, packing)
        value = split_heads(self.value(hidden_states), self.attention_head_size, packing)
        context = nn.functional.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attention_mask,
            dropout_p=self.dropout.p if self.training else 0.0,
            scale=self.scaling,
            is_causal=False,
        )
        return merge_heads(context, packing)


def split_heads(states: torch.Tensor, head_size: int, packing: Packing | None) -> torch.Tensor:
    """A query, key or value ``(B, L, width)`` as ``(B, heads, L, head_size)`` views; a packed one
    ``(tokens, width)`` is first put back in the padded layout (``packing.Packing.pad``), which attention needs."""
    if packing is not None:
        states = packing.pad(states)
    return states.view(*states.shape[:-1], -1, head_size).transpose(1, 2)


def merge_heads(context: torch.Tensor, packing: Packing | None) -> torch.Tensor:
    """Attention's ``(B, heads, L, head_size)`` output as ``(B, L, width)``, or, packed, the real tokens'
    ``(tokens, width)``."""
    context = context.transpose(1, 2)
    if packing is not None:
        return packing.pack(context).flatten(1)
    return context.contiguous().reshape(*context.shape[:2], -1).contiguous()


class BertAttention(nn.Module):
    def __init__(self, settings: BertSettings):
        super().__init__()
        self.self = BertSelfAttention(settings)
        self.output = BertSelfOutput(settings)

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, packing: Packing | None = None
    ) -> torch.Tensor:
        return self.output(self.self(hidden_states, attention_mask, packing), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, settings: BertSettings):
        super().__init__()
        self.dense = nn.Linear(settings.hidden_size, settings.intermediate_size)
        self.intermediate_act_fn = GELUActivation() if settings.hidden_act == "gelu" else nn.ReLU()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    """dense -> dropout -> residual add -> LayerNorm, from the feed-forward's ``in_features`` (default)."""

    def __init__(self, settings: BertSettings, in_features: int | None = None):
        super().__init__()
        in_features = settings.intermediate_size if in_features is None else in_features
        self.dense = nn.Linear(in_features, settings.hidden_size)
        self.LayerNorm = nn.LayerNorm(settings.hidden_size, eps=settings.layer_norm_eps)
        self.dropout = nn.Dropout(settings.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertSelfOutput(BertOutput):
    """The same block after attention, from ``hidden_size`` features."""

    def __init__(self, settings: BertSettings):
        super().__init__(settings, settings.hidden_size)


class BertLayer(nn.Module):
    attention_class: Any = BertAttention  # mpnet.MPNetLayer: MPNetAttention

    def __init__(self, settings: BertSettings):
        super().__init__()
        self.attention = self.attention_class(settings)
        self.intermediate = BertIntermediate(settings)
        self.output = BertOutput(settings)

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, packing: Packing | None = None
    ) -> torch.Tensor:
        """``(B, L, width)`` in and out; with ``packing``, the block runs on the real tokens only (``packing.py``)."""
        rows = hidden_states if packing is None else packing.pack(hidden_states)
        attention_output = self.attention(rows, attention_mask, packing)
        output = self.output(self.intermediate(attention_output), attention_output)
        return output if packing is None else packing.pad(output)


class BertEncoder(nn.Module):
    layer_class: Any = BertLayer  # mpnet.MPNetEncoder: MPNetLayer

    def __init__(self, settings: BertSettings):
        super().__init__()
        self.layer = nn.ModuleList([self.layer_class(settings) for _ in range(settings.num_hidden_layers)])

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, packing: Packing | None = None
    ) -> list[torch.Tensor]:
        """Every layer's output, in order; ``packing``: the layers run on the real tokens only (``packing.py``)."""
        states = []
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask, packing)
            states.append(hidden_states)
        return states


class BertPooler(nn.Module):
    def __init__(self, settings: BertSettings):
        super().__init__()
        self.dense = nn.Linear(settings.hidden_size, settings.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


def sdpa_mask(attention_mask: torch.Tensor | None, length: int, device: torch.device) -> torch.Tensor | None:
    """transformers' sdpa padding mask: None when no key is padding, else boolean ``(batch, 1, 1, key)``.

    transformers expands it to ``(batch, 1, query, key)``; sdpa broadcasts the query axis itself, so the values
    are the same, bit for bit, while each layer's sdpa call turns ``batch x key`` booleans into its additive
    mask instead of ``batch x length x key`` (``length``, the query length, is no longer needed). The check for
    padding runs where ``attention_mask`` is: featx's batch loop passes the host's copy, so that a GPU's queue
    is not drained once a batch to answer it; the mask then goes to ``device`` without blocking."""
    if attention_mask is None or bool(attention_mask.all()):
        return None
    padding = attention_mask.to(device=device, dtype=torch.bool, non_blocking=True)
    return padding[:, None, None, :]


class BertModel(nn.Module):
    """The encoder: ``model(input_ids, attention_mask, token_type_ids, output_hidden_states=True)``.

    ``mpnet.MPNetModel`` is this with its own embeddings, encoder and mask (the class attributes)."""

    embeddings_class: Any = BertEmbeddings
    encoder_class: Any = BertEncoder

    def __init__(self, settings: BertSettings):
        super().__init__()
        self.config = settings
        self.embeddings = self.embeddings_class(settings)
        self.encoder = self.encoder_class(settings)
        self.pooler = BertPooler(settings)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    @staticmethod
    def encoder_mask(attention_mask: torch.Tensor | None, length: int, device: torch.device) -> torch.Tensor | None:
        """What the encoder takes of the padding mask: transformers' sdpa mask (``sdpa_mask``)."""
        return sdpa_mask(attention_mask, length, device)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        output_hidden_states: bool = False,
    ) -> EncoderOutput:
        embedding_output = self.embeddings(input_ids, token_type_ids)
        mask = self.encoder_mask(attention_mask, input_ids.shape[1], embedding_output.device)
        packing = None if mask is None else plan_packing(self.encoder.layer, attention_mask, embedding_output.device)
        states = self.encoder(embedding_output, mask, packing)
        last = states[-1] if states else embedding_output
        pooled = self.pooler(last) if self.pooler is not None else None
        hidden_states = (embedding_output, *states) if output_hidden_states else None
        return EncoderOutput(last_hidden_state=last, pooler_output=pooled, hidden_states=hidden_states)


def checkpoint_match(model_keys, checkpoint_keys) -> tuple[dict[str, str], list[str], list[str]]:
    """``checkpoint.match_keys`` for a ``BertModel``: a ``bert.``-prefixed checkpoint (a model with heads) too."""
    return match_keys(model_keys, checkpoint_keys, PREFIX, IGNORED_KEYS)


def build(settings: BertSettings) -> BertModel:
    """The network with its parameters on the meta device (no memory, no random init): weights come next."""
    return build_on_meta(lambda: BertModel(settings))


def load_bert(folder: Path, weights: Path, dtype: torch.dtype) -> BertModel:
    """The encoder of ``folder`` with every weight of ``weights`` in ``dtype``, in eval mode, on the CPU.

    Strict: every parameter must be in the file under its name (``bert.``-prefixed or not) with its shape, and
    the file may hold nothing else of the encoder; anything else is one ``ModelError`` naming the keys.
    """
    return load_encoder(folder, weights, dtype, BertSettings, build, PREFIX, IGNORED_KEYS)

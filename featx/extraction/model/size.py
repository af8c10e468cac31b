"""A model's size from its ``config.json`` alone: parameters, weight bytes and FLOPs per token, no weights read.

The count is the network featx runs (``AutoModel``: the base model, no language-model or classification
head) and is exact, parameter for parameter, for the families in ``EXACT``:

- ``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``gemma``, ``gemma2`` (``LLAMA_LIKE``): token embeddings;
  per block the query/key/value/output projections (grouped-query: ``num_key_value_heads`` heads of
  ``head_dim`` for keys and values), with biases where the family has them (Qwen2: query/key/value;
  ``attention_bias``/``mlp_bias`` where the config sets them), the gated MLP (gate, up, down), two RMS
  norms (Gemma 2: four; Qwen3: also a query and a key norm of ``head_dim``); one final norm.
- ``gpt2``: token and position embeddings; per block two layer norms, the fused query/key/value and output
  projections and the MLP (``n_inner``, default 4 x hidden), all with biases; one final layer norm.
- ``bert``, ``roberta``, ``xlm-roberta``: word, position and token-type embeddings with their layer
  norm; per block four attention projections and two MLP layers with biases and two layer norms; the pooler.

Any other ``model_type`` is approximate (``exact`` False): embeddings plus ``layers x (4 h^2 + 2 h i)``, the
dominant terms of a transformer block; norms, biases and position tables are left out (well under 1% for
models of a billion parameters, more for small ones). A checkpoint saved with its head (``*ForCausalLM``)
also holds ``vocab x hidden`` output weights unless they are tied; featx does not load them.

``position_limit``: how many tokens one row may hold, by the position table less the padding offset of the
encoders whose positions start after the padding id (``POSITIONS_PAST_PADDING``: RoBERTa and its copies, MPNet).
``row_limit``: the tokens a row holds in a run: that, the tokenizer's limit and ``--max-length`` together; the
loaded model and the dry-run estimate both take it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import InputError, ModelError

LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2")
BERT_LIKE = ("bert", "roberta", "xlm-roberta")
EXACT = (*LLAMA_LIKE, "gpt2", *BERT_LIKE)
DECODERS = (*LLAMA_LIKE, "gpt2", "gpt_neox", "phi", "phi3", "falcon", "opt", "qwen2_moe", "mixtral", "gptj")


def _first(config: dict, names: tuple[str, ...], default: Any = None) -> Any:
    for name in names:
        if config.get(name) is not None:
            return config[name]
    return default


def _whole(config: dict, names: tuple[str, ...], default: int | None = None) -> int:
    value = _first(config, names, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelError(
            f"config.json has no usable {names[0]} ({value!r}): its size cannot be estimated",
            "check that the folder's config.json is a transformers model config",
        )
    return value


@dataclass(frozen=True)
class ModelSize:
    """Parameter counts of the network featx runs, by part, from ``config.json``."""

    family: str
    layers: int  # transformer blocks
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    embedding_parameters: int  # token (and position, token-type) tables and their norm
    block_parameters: int  # one block
    final_parameters: int  # after the last block: a final norm, BERT's pooler
    exact: bool
    decoder: bool
    lm_head_parameters: int = 0  # in a *ForCausalLM checkpoint and not tied; never loaded by featx

    @property
    def parameters(self) -> int:
        return self.parameters_through(self.layers)

    def parameters_through(self, blocks: int) -> int:
        """Parameters needed to compute the hidden states of blocks ``0..blocks`` (embeddings = 0)."""
        final = self.final_parameters if blocks >= self.layers else 0
        return self.embedding_parameters + blocks * self.block_parameters + final

    def flops_per_token(self, blocks: int, context: float) -> float:
        """Forward FLOPs per token through ``blocks`` blocks: 2 per weight of the blocks' matrices, and the
        attention's two products over a context of ``context`` tokens."""
        attention = 2 * 2 * self.heads * self.head_dim * context
        return float(blocks * (2 * self.block_parameters + attention))


def _llama_like(config: dict, family: str, h: int, layers: int, vocab: int) -> tuple[int, int, int]:
    heads = _whole(config, ("num_attention_heads",))
    kv = _whole(config, ("num_key_value_heads",), heads)
    head_dim = _whole(config, ("head_dim",), h // heads)
    inter = _whole(config, ("intermediate_size",))
    q, k = heads * head_dim, kv * head_dim
    attention_bias = bool(config.get("attention_bias", False))
    qkv_bias = family == "qwen2" or attention_bias
    block = h * (q + 2 * k) + q * h + (q + 2 * k) * qkv_bias + h * attention_bias
    block += 3 * h * inter + (2 * inter + h) * bool(config.get("mlp_bias", False))
    block += (4 if family == "gemma2" else 2) * h + (2 * head_dim if family == "qwen3" else 0)
    return vocab * h, block, h


def _gpt2(config: dict, h: int, vocab: int) -> tuple[int, int, int]:
    inter = _whole(config, ("n_inner",), 4 * h)
    positions = _whole(config, ("n_positions", "max_position_embeddings"))
    block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * inter + inter) + (inter * h + h)
    return (vocab + positions) * h, block, 2 * h


def _bert(config: dict, h: int, vocab: int) -> tuple[int, int, int]:
    inter = _whole(config, ("intermediate_size",))
    positions = _whole(config, ("max_position_embeddings",))
    types = _whole(config, ("type_vocab_size",), 2)
    embeddings = (vocab + positions + types) * h + 2 * h
    block = 4 * (h * h + h) + 2 * h + (h * inter + inter) + (inter * h + h) + 2 * h
    return embeddings, block, h * h + h


def model_size(config: dict) -> ModelSize:
    """The ``ModelSize`` of a parsed ``config.json`` (exact for ``EXACT`` families, approximate otherwise)."""
    if not isinstance(config, dict):
        raise ModelError("config.json is not a JSON object", "check that the model folder is complete")
    family = str(config.get("model_type", "")).lower()
    h = _whole(config, ("hidden_size", "n_embd", "d_model", "dim"))
    layers = _whole(config, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    vocab = _whole(config, ("vocab_size",))
    heads = _whole(config, ("num_attention_heads", "n_head", "num_heads", "n_heads"))
    kv = _whole(config, ("num_key_value_heads",), heads)
    head_dim = _whole(config, ("head_dim",), max(1, h // heads))
    inter = _whole(config, ("intermediate_size", "n_inner", "d_ff", "ffn_dim"), 4 * h)
    if family in LLAMA_LIKE:
        embeddings, block, final = _llama_like(config, family, h, layers, vocab)
    elif family == "gpt2":
        embeddings, block, final = _gpt2(config, h, vocab)
    elif family in BERT_LIKE:
        embeddings, block, final = _bert(config, h, vocab)
    else:
        embeddings, block, final = vocab * h, 4 * h * h + 2 * h * inter, 0
    decoder = family in DECODERS or any(str(name).endswith("ForCausalLM") for name in config.get("architectures") or [])
    tied = bool(config.get("tie_word_embeddings", family in ("gpt2", "gemma", "gemma2")))
    return ModelSize(
        family=family or "unknown",
        layers=layers,
        hidden=h,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate=inter,
        vocab=vocab,
        embedding_parameters=embeddings,
        block_parameters=block,
        final_parameters=final,
        exact=family in EXACT,
        decoder=decoder,
        lm_head_parameters=0 if tied or not decoder else vocab * h,
    )


# Encoders whose embeddings number a row's positions from the padding id + 1 (fairseq's ``make_positions``:
# transformers' RobertaEmbeddings and its copies), so a row holds at most max_position_embeddings - (padding id + 1)
# tokens; MPNet's embeddings use padding id 1 whatever config.json says.
POSITIONS_PAST_PADDING = frozenset(
    {
        "roberta",
        "xlm-roberta",
        "xlm-roberta-xl",
        "camembert",
        "roberta-prelayernorm",
        "data2vec-text",
        "longformer",
        "ibert",
        "xmod",
        "esm",
        "mpnet",
    }
)
FIXED_PADDING_ID = {"mpnet": 1}


def position_limit(config) -> int | None:
    """How many tokens one row may hold by a model's config (a ``config.json`` dict or a config object): its
    position table less the padding offset of ``POSITIONS_PAST_PADDING``; None where it names no positions."""
    value = config.get if isinstance(config, dict) else lambda name: getattr(config, name, None)
    positions = next(
        (value(name) for name in ("max_position_embeddings", "n_positions") if isinstance(value(name), int)), None
    )
    if positions is None or isinstance(positions, bool):
        return None
    model_type = value("model_type")
    if model_type not in POSITIONS_PAST_PADDING:
        return positions
    pad = FIXED_PADDING_ID.get(model_type, value("pad_token_id"))
    pad = pad if isinstance(pad, int) and not isinstance(pad, bool) and pad >= 0 else 1
    return max(positions - pad - 1, 1)


NO_LIMIT = 10**6  # a tokenizer's or a config's "no limit" (transformers writes 1e30); 512 is assumed then


def row_limit(config, tokenizer_limit: object, asked: int | None) -> int:
    """The tokens one row may hold: ``asked`` (``--max-length``) where given, checked against the model's
    maximum; else that maximum, the smaller of the tokenizer's ``model_max_length`` and ``position_limit``
    (512 where neither names one)."""
    model_max = position_limit(config) or NO_LIMIT
    if isinstance(tokenizer_limit, (int, float)) and not isinstance(tokenizer_limit, bool) and tokenizer_limit > 1:
        model_max = int(min(model_max, tokenizer_limit))
    model_max = 512 if model_max >= NO_LIMIT else model_max
    if asked is None:
        return model_max
    return checked_length(asked, model_max)


def checked_length(asked: int, model_max: int) -> int:
    """``--max-length`` ``asked``, refused where it leaves no room for the special tokens or passes ``model_max``."""
    if asked < 2:
        raise InputError(f"--max-length {asked} is too small", "use at least 2 (room for the special tokens)")
    if asked > model_max:
        raise InputError(
            f"--max-length {asked} exceeds the model's maximum of {model_max}",
            f"use --max-length {model_max} or less, or --long window to keep every token of longer texts",
        )
    return int(asked)

"""The model's own output head, read from its checkpoint: the final norm and the unembedding of a decoder, the
MLM head (``transform`` + ``decoder``) of an encoder; and the logit lens through it.

Families (``config.json``'s ``model_type``):

- ``gpt2``: ``ln_f`` (LayerNorm, ``layer_norm_epsilon``), then ``wte`` (GPT-2's head is tied to it);
- ``llama``, ``mistral``, ``qwen2``, ``qwen3``: ``model.norm`` (RMSNorm in float32, ``rms_norm_eps``), then
  ``lm_head``, or ``embed_tokens`` when ``tie_word_embeddings`` is set (Qwen2-0.5B); ``gemma`` the same with
  Gemma's ``(1 + weight)`` scale;
- ``bert``: ``cls.predictions.transform`` (dense, ``hidden_act``, LayerNorm) then ``cls.predictions.decoder``
  (tied to the word embeddings unless stored) plus ``cls.predictions.bias``; ``roberta``, ``xlm-roberta``:
  ``lm_head`` (dense, GELU, layer norm, decoder, bias) likewise.

Every tensor is read by name from the safetensors files (no model is built), so that a checkpoint without the
head is refused before any forward pass instead of getting a randomly initialised one, which is what
``AutoModelForCausalLM.from_pretrained`` would silently give (``LlamaModel`` saves no ``lm_head``; ``BertModel``
no ``cls.predictions``). A tied head counts as present when the embedding it is tied to is stored.

The last layer of a decoder: transformers returns the last hidden state *after* the final norm (its
``hidden_states[-1]`` is ``last_hidden_state``), so the lens reads it through the unembedding alone, and it
equals the model's own logits; every lower layer is read through the norm and the unembedding. An MLM head
reads every layer alike (an encoder has no final norm outside its layers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import InputError, ModelError
from ..safe_files import loads_json

CAUSAL = {"gpt2": "layer_norm", "llama": "rms", "mistral": "rms", "qwen2": "rms", "qwen3": "rms", "gemma": "gemma"}
MASKED = ("bert", "roberta", "xlm-roberta")
FAMILIES = (*CAUSAL, *MASKED)
# Whether a config without ``tie_word_embeddings`` ties its head (the transformers config classes' defaults).
TIED_BY_DEFAULT = {"gpt2", "gemma", *MASKED}
# Per family: the names (without and with the task model's prefix) of each tensor; the first found is read.
_DECODER_NAMES = {
    "gpt2": {"norm": ("ln_f", "transformer.ln_f"), "embed": ("wte", "transformer.wte"), "head": ("lm_head",)},
    "llama": {"norm": ("norm", "model.norm"), "embed": ("embed_tokens", "model.embed_tokens"), "head": ("lm_head",)},
}
_MLM_NAMES = {
    "bert": {
        "dense": ("cls.predictions.transform.dense",),
        "norm": ("cls.predictions.transform.LayerNorm",),
        "decoder": ("cls.predictions.decoder",),
        "embed": ("bert.embeddings.word_embeddings", "embeddings.word_embeddings"),
        "bias": ("cls.predictions.bias", "cls.predictions.decoder.bias"),
    },
    "roberta": {
        "dense": ("lm_head.dense",),
        "norm": ("lm_head.layer_norm",),
        "decoder": ("lm_head.decoder",),
        "embed": ("roberta.embeddings.word_embeddings", "embeddings.word_embeddings"),
        "bias": ("lm_head.bias", "lm_head.decoder.bias"),
    },
}


class Unembedding:
    """The unembedding matrix ``(vocab, width)`` in its safetensors file, read a row at a time: the lens of a few
    answer tokens never holds a 128k-token vocabulary in float32; the whole matrix is read only when asked for."""

    def __init__(self, path: Path, name: str):
        self.path, self.name = path, name
        self._full: torch.Tensor | None = None

    def rows(self, token_ids: list[int] | None = None) -> torch.Tensor:
        """The rows of ``token_ids`` (float32), or the whole matrix (read once, kept)."""
        from safetensors import safe_open

        if token_ids is None and self._full is not None:
            return self._full
        with safe_open(str(self.path), framework="pt") as handle:
            if token_ids is None:
                self._full = handle.get_tensor(self.name).to(torch.float32)
                return self._full
            block = handle.get_slice(self.name)
            return torch.cat([block[index : index + 1] for index in token_ids]).to(torch.float32)


@dataclass
class LensHead:
    """The head's tensors (float32, on the CPU) and how to apply them; ``masked``: an MLM head."""

    family: str
    norm: str  # layer_norm, rms or gemma
    eps: float
    unembed: Unembedding
    norm_weight: torch.Tensor
    norm_bias: torch.Tensor | None = None
    bias: torch.Tensor | None = None  # the MLM decoder's bias
    dense: tuple[torch.Tensor, torch.Tensor] | None = None  # the MLM transform's dense layer
    activation: str = "gelu"
    tensors: dict[str, str] = field(default_factory=dict)  # what each part was read from

    @property
    def masked(self) -> bool:
        return self.dense is not None

    def normed(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.norm == "layer_norm":
            return torch.nn.functional.layer_norm(
                hidden, hidden.shape[-1:], self.norm_weight, self.norm_bias, eps=self.eps
            )
        variance = hidden.float().pow(2).mean(-1, keepdim=True)
        scaled = hidden.float() * torch.rsqrt(variance + self.eps)
        return scaled * (1.0 + self.norm_weight if self.norm == "gemma" else self.norm_weight)

    def logits(self, hidden: torch.Tensor, last_layer: bool, token_ids: list[int] | None = None) -> torch.Tensor:
        """The lens at ``hidden`` (``(..., width)``): every vocabulary logit, or those of ``token_ids``.
        ``last_layer``: a decoder's last hidden state, which already had the final norm."""
        hidden = hidden.to(torch.float32)
        rows = slice(None) if token_ids is None else torch.as_tensor(token_ids, dtype=torch.long)
        weight = self.unembed.rows(token_ids)
        if self.dense is not None:
            from transformers.activations import ACT2FN

            hidden = ACT2FN[self.activation](torch.nn.functional.linear(hidden, *self.dense))
            out = torch.nn.functional.linear(self.normed(hidden), weight)
            return out + self.bias[rows] if self.bias is not None else out
        return torch.nn.functional.linear(hidden if last_layer else self.normed(hidden), weight)


def _stored_names(files: list[Path]) -> dict[str, Path]:
    from safetensors import safe_open

    names: dict[str, Path] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as handle:
            names.update(dict.fromkeys(handle.keys(), path))
    return names


class _Reader:
    """Tensors of a checkpoint by name; ``first`` finds the first of several spellings."""

    def __init__(self, files: list[Path]):
        self.names = _stored_names(files)

    def first(self, prefixes: tuple[str, ...], suffixes: tuple[str, ...] = ("weight",)) -> str | None:
        for prefix in prefixes:
            for suffix in suffixes:
                if f"{prefix}.{suffix}" in self.names:
                    return f"{prefix}.{suffix}"
        return None

    def tensor(self, name: str) -> torch.Tensor:
        from safetensors import safe_open

        with safe_open(str(self.names[name]), framework="pt") as handle:
            return handle.get_tensor(name).to(torch.float32)


def _family(config: dict, model: str) -> str:
    kind = str(config.get("model_type", ""))
    if kind not in FAMILIES:
        raise InputError(
            f"the logit lens does not know the head of {model} (model_type '{kind or '?'}')",
            f"it reads the heads of {', '.join(FAMILIES)} checkpoints",
        )
    return kind


def _missing(model: str, what: str, masked: bool) -> ModelError:
    kind = "MLM head" if masked else "LM head"
    return ModelError(
        f"{model} has no {kind}: its checkpoint stores no {what} (a randomly initialised head would read nothing)",
        "give a checkpoint saved with its head, e.g. AutoModelForMaskedLM / AutoModelForCausalLM "
        "(...).save_pretrained(folder)",
    )


def _unembedding(reader: _Reader, names: dict, config: dict, model: str, family: str) -> str:
    """The unembedding's tensor name: a tied head is the stored embedding (as transformers ties it, whatever else
    is stored), an untied one its own stored weight."""
    masked = family in MASKED
    key = "decoder" if masked else "head"
    tied = bool(config.get("tie_word_embeddings", family in TIED_BY_DEFAULT))
    stored = (reader.first(names["embed"]) if tied else None) or reader.first(names[key])
    if stored is None:
        what = f"{names[key][0]}.weight" + ("" if tied else " (and tie_word_embeddings is false)")
        raise _missing(model, what, masked)
    return stored


def load_head(folder: Path, files: list[Path], model: str) -> LensHead:
    """The head of the checkpoint in ``folder`` (weights ``files``), or a clear error when it has none."""
    config = loads_json((folder / "config.json").read_text(encoding="utf-8"))
    family = _family(config, model)
    reader = _Reader(files)
    if family in MASKED:
        return _mlm_head(reader, family, config, model)
    names = _DECODER_NAMES["gpt2" if family == "gpt2" else "llama"]
    norm = reader.first(names["norm"])
    if norm is None:
        raise _missing(model, f"final norm ({names['norm'][0]}.weight)", False)
    unembed = _unembedding(reader, names, config, model, family)
    bias = reader.first(names["norm"], ("bias",))
    eps = config.get("layer_norm_epsilon", 1e-5) if family == "gpt2" else config.get("rms_norm_eps", 1e-6)
    return LensHead(
        family,
        CAUSAL[family],
        float(eps),
        Unembedding(reader.names[unembed], unembed),
        reader.tensor(norm),
        reader.tensor(bias) if bias is not None else None,
        tensors={"norm": norm, "unembedding": unembed},
    )


def _mlm_head(reader: _Reader, family: str, config: dict, model: str) -> LensHead:
    names = _MLM_NAMES["bert" if family == "bert" else "roberta"]
    dense = reader.first(names["dense"])
    norm = reader.first(names["norm"], ("weight", "gamma"))
    if dense is None or norm is None:
        raise _missing(model, f"{names['dense'][0]}.weight", True)
    dense_bias = reader.first(names["dense"], ("bias",))
    norm_bias = reader.first(names["norm"], ("bias", "beta"))
    bias = reader.first(tuple(name.rsplit(".", 1)[0] for name in names["bias"]), ("bias",))
    decoder = _unembedding(reader, names, config, model, family)
    width = int(config.get("hidden_size", 0))
    return LensHead(
        family,
        "layer_norm",
        float(config.get("layer_norm_eps", 1e-12)),
        Unembedding(reader.names[decoder], decoder),
        reader.tensor(norm),
        reader.tensor(norm_bias) if norm_bias is not None else None,
        bias=reader.tensor(bias) if bias is not None else None,
        dense=(reader.tensor(dense), reader.tensor(dense_bias) if dense_bias else torch.zeros(width)),
        activation=str(config.get("hidden_act", "gelu")) if family == "bert" else "gelu",
        tensors={"transform": dense, "norm": norm, "decoder": decoder},
    )

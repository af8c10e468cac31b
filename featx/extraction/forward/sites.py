"""Sites: activations inside a layer, recorded with forward hooks in the same single forward pass.

A *site* names one activation of every selected transformer layer. ``hidden`` is what the model
returns anyway (``output_hidden_states``); every other site is read by hooks on the model's own
modules, so no model code is copied or patched:

``hidden``      the layer's output (after its final LayerNorm); layer 0 is the embedding output.
``attn_out``    the self-attention block's output projection, *before* the residual add and its
                LayerNorm. BERT/RoBERTa/MiniLM: output of ``attention.output.dropout``, i.e.
                ``dropout(dense(context))`` (dropout is the identity in eval mode).
                DistilBERT: first output of ``attention`` (``out_lin(context)``).
``ffn``         the feed-forward intermediate after its activation (width ``intermediate_size``).
                BERT family: output of ``intermediate`` (``act(dense(x))``); DistilBERT: output of
                ``ffn.activation``.
``pre_ln``      the residual sum fed to the layer's output LayerNorm: ``LayerNorm(pre_ln) == hidden``.
                BERT family: input of ``output.LayerNorm``; DistilBERT: input of ``output_layer_norm``.
``attn_heads``  per-head attention summaries, per query token: the entropy of the head's attention
                distribution (nats), the attention paid to the first token (CLS) and to the SEP
                token(s); width ``3 * heads`` ordered [entropy, to CLS, to SEP] x heads. Poolings then
                summarise over query tokens (``mean`` = averaged over the row's real tokens). Needs
                the attention probabilities, which SDPA never materialises: only when this site is
                requested, the model switches to eager attention and returns them
                (``output_attentions=True``); results equal SDPA's up to float rounding.
``module:NAME`` the output of any named submodule (first tensor of a tuple output), e.g.
                ``module:encoder.layer.5.intermediate`` (stored as its layer, 6) or, with ``*`` for the
                layer index, ``module:encoder.layer.*.attention.self`` for every selected layer. A
                module outside the numbered layers is stored as a single entry at layer 0. The output
                must be token-aligned: (batch, tokens, width).

Layer-internal sites exist for layers 1..N only; layer 0 (embeddings) is skipped for them.
The model's own ``pooler`` pooling applies to ``hidden`` only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import torch

from ...errors import InputError

HIDDEN = "hidden"
ATTN_HEADS = "attn_heads"
MODULE_PREFIX = "module:"
NAMED_SITES = ("hidden", "attn_out", "ffn", "pre_ln", "attn_heads")

# Per architecture family, recognised from the module structure (not the model_type, so that
# BERT-shaped models such as MiniLM, ELECTRA or XLM-R resolve too): where the layer list lives, and
# for each site the module inside one layer and whether its input (pre-hook) or output is recorded.
FAMILIES: dict[str, dict[str, Any]] = {  # "layers": a path; each site: (module in a layer, mode)
    "bert": {  # BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA, MiniLM
        "layers": "encoder.layer",
        "attn_out": ("attention.output.dropout", "output"),
        "ffn": ("intermediate", "output"),
        "pre_ln": ("output.LayerNorm", "input"),
    },
    "distilbert": {
        "layers": "transformer.layer",
        "attn_out": ("attention", "output"),
        "ffn": ("ffn.activation", "output"),
        "pre_ln": ("output_layer_norm", "input"),
    },
    # Pre-LN models: the layer's output is the residual stream itself, so ``pre_ln`` is the residual
    # stream in the middle of the layer (after the attention's residual add), fed to the MLP's norm.
    "llama": {  # Llama, Mistral, Qwen2, Gemma
        "layers": "layers",
        "attn_out": ("self_attn", "output"),  # o_proj(attention), before the residual add
        "ffn": ("mlp.down_proj", "input"),  # act(gate_proj(x)) * up_proj(x)
        "pre_ln": ("post_attention_layernorm", "input"),
    },
    "gpt2": {
        "layers": "h",
        "attn_out": ("attn", "output"),  # resid_dropout(c_proj(attention))
        "ffn": ("mlp.act", "output"),  # act(c_fc(x))
        "pre_ln": ("ln_2", "input"),
    },
    "t5": {  # the encoder of T5 (featx loads T5EncoderModel)
        "layers": "encoder.block",
        "attn_out": ("layer.0.SelfAttention", "output"),  # o(attention), before dropout and residual add
        "ffn": ("layer.1.DenseReluDense.wo", "input"),  # act(wi(x)) (gated: act(wi_0(x)) * wi_1(x))
        "pre_ln": ("layer.1.layer_norm", "input"),
    },
    "modernbert": {
        "layers": "layers",
        "attn_out": ("attn", "output"),  # out_drop(Wo(attention))
        "ffn": ("mlp.Wo", "input"),  # act(input) * gate
        "pre_ln": ("mlp_norm", "input"),
    },
}


@dataclass(frozen=True)
class Tap:
    """One module whose output (or first input) is recorded as one stored layer of a site."""

    layer: int
    module: str
    mode: str  # "output" or "input"


@dataclass
class Site:
    name: str
    layers: list[int]
    taps: list[Tap] = field(default_factory=list)  # empty for hidden and attn_heads
    width: int | None = None

    def describe(self) -> dict:
        return {
            "layers": self.layers,
            "width": self.width,
            "modules": [f"{tap.module}:{tap.mode}" for tap in self.taps],
        }


def parse_sites(spec: str | list[str] | None) -> list[str]:
    """``"hidden,ffn,module:encoder.layer.3.intermediate"`` -> names; ``hidden`` is always first."""
    if spec is None:
        return [HIDDEN]
    items = spec if isinstance(spec, (list, tuple)) else str(spec).split(",")
    names = [HIDDEN]
    for item in items:
        name = item.strip()
        if not name:
            continue
        if name.startswith(MODULE_PREFIX):
            if not name[len(MODULE_PREFIX) :].strip() or "/" in name:
                raise InputError(
                    f"site '{name}' does not name a module",
                    "write module:NAME with NAME a dotted submodule name, e.g. module:encoder.layer.5.intermediate",
                )
            name = MODULE_PREFIX + name[len(MODULE_PREFIX) :].strip()
        elif name.lower() in NAMED_SITES:
            name = name.lower()
        else:
            raise InputError(f"unknown site '{name}'", f"choose from {', '.join(NAMED_SITES)} or module:NAME")
        if name not in names:
            names.append(name)
    return names


def architecture_family(model: torch.nn.Module) -> str | None:
    """``"bert"``, ``"distilbert"`` or None, from the modules the model actually has."""
    for family, spec in FAMILIES.items():
        layer_list = _get(model, spec["layers"])
        if not isinstance(layer_list, torch.nn.ModuleList) or len(layer_list) == 0:
            continue
        if all(_get(layer_list[0], spec[site][0]) is not None for site in ("attn_out", "ffn", "pre_ln")):
            return family
    return None


def available_sites(model: torch.nn.Module) -> list[str]:
    if architecture_family(model) is not None:
        return list(NAMED_SITES) + ["module:NAME"]
    return [HIDDEN, ATTN_HEADS, "module:NAME"]


def _get(root: torch.nn.Module, name: str) -> torch.nn.Module | None:
    try:
        return root.get_submodule(name)
    except AttributeError:
        return None


def _layer_list_path(model: torch.nn.Module, n_layers: int) -> str | None:
    family = architecture_family(model)
    if family is not None:
        return FAMILIES[family]["layers"]
    for name, module in model.named_modules():  # generic: the first ModuleList of n_layers blocks
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
            return name
    return None


def _model_label(model: torch.nn.Module) -> str:
    return f"{type(model).__name__} (model_type '{getattr(model.config, 'model_type', '?')}')"


def resolve_sites(model: torch.nn.Module, names: list[str], layers: list[int], n_layers: int) -> list[Site]:
    """Turn site names into the modules to hook for the selected ``layers`` (0 = embeddings).

    ``n_layers`` is the number of transformer layers (hidden-state outputs minus the embeddings).
    """
    inner = [layer for layer in layers if layer >= 1]
    family = architecture_family(model)
    sites = []
    for name in names:
        if name == HIDDEN:
            sites.append(Site(name, list(layers)))
            continue
        single_module = name.startswith(MODULE_PREFIX) and "*" not in name  # one named module, any layer
        if not inner and not single_module:
            raise InputError(
                f"site '{name}' exists inside transformer layers 1..{n_layers} only, but --layer selects {layers}",
                "select some layers >= 1 too",
            )
        if name == ATTN_HEADS:
            sites.append(Site(name, inner))
        elif name.startswith(MODULE_PREFIX):
            sites.append(_module_site(model, name, inner, n_layers))
        else:
            if family is None:
                raise InputError(
                    f"site '{name}' is not defined for {_model_label(model)}; featx knows its place in "
                    f"{', '.join(FAMILIES)}-style models. Available sites for this model: "
                    f"{', '.join(available_sites(model))}",
                    "use --site module:NAME with a submodule name (print(model) lists them)",
                )
            spec = FAMILIES[family]
            module, mode = spec[name]
            taps = [Tap(layer, f"{spec['layers']}.{layer - 1}.{module}", mode) for layer in inner]
            sites.append(Site(name, inner, taps))
    return sites


def _module_site(model: torch.nn.Module, name: str, inner: list[int], n_layers: int) -> Site:
    target = name[len(MODULE_PREFIX) :]
    layer_path = _layer_list_path(model, n_layers)
    if "*" in target:
        if target.count("*") != 1:
            raise InputError(f"site '{name}' has more than one '*'", "use one * for the layer index")
        taps = [Tap(layer, target.replace("*", str(layer - 1)), "output") for layer in inner]
    else:
        layer = 0
        if layer_path is not None:
            match = re.match(re.escape(layer_path) + r"\.([0-9]+)(\.|$)", target)
            if match:
                layer = int(match.group(1)) + 1
        taps = [Tap(layer, target, "output")]
    for tap in taps:
        if _get(model, tap.module) is None:
            example = f"{layer_path}.0" if layer_path else ""
            children = [child for child, _ in (_get(model, example) or model).named_modules() if child][:12]
            prefix = f"{example}." if example else ""
            raise InputError(
                f"site '{name}': {_model_label(model)} has no submodule '{tap.module}'",
                "names look like " + ", ".join(prefix + child for child in children),
            )
    return Site(name, sorted({tap.layer for tap in taps}), taps)


def _first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
        return value[0]
    return None


def _switch_to_eager(model: Any) -> str | None:
    """Eager attention (which returns attention probabilities); the implementation to restore, or None."""
    previous = getattr(model.config, "_attn_implementation", None)
    if previous == "eager":
        return None
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    else:  # older transformers
        model.config._attn_implementation = "eager"
    return previous


def _restore_attention(model: Any, previous: str | None) -> None:
    if previous is None:
        return
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(previous)
    else:
        model.config._attn_implementation = previous


class SiteRecorder:
    """Context manager: hooks the sites' modules, collects one batch at a time, removes every hook on exit.

    ``forward_options`` are extra keyword arguments for the model call (``output_attentions`` when
    ``attn_heads`` is recorded). After each forward pass, ``take(output)`` returns ``{site: [tensor of
    shape (batch, tokens, width) per layer of site.layers]}`` for every site except ``hidden``.
    """

    def __init__(self, model: torch.nn.Module, sites: list[Site]):
        self.model = model
        self.sites = [site for site in sites if site.name != HIDDEN]
        self.needs_attentions = any(site.name == ATTN_HEADS for site in self.sites)
        self.forward_options = {"output_attentions": True} if self.needs_attentions else {}
        self._handles: list = []
        self._batch: dict[str, dict[int, torch.Tensor | None]] = {}  # site -> tap position -> recorded
        self._previous_attention: str | None = None

    def __enter__(self) -> SiteRecorder:
        try:
            if self.needs_attentions:
                self._previous_attention = _switch_to_eager(self.model)
            for site in self.sites:
                for position, tap in enumerate(site.taps):
                    module = self.model.get_submodule(tap.module)
                    hook = self._hook(site.name, position, tap.mode)
                    if tap.mode == "input":
                        self._handles.append(module.register_forward_pre_hook(hook))
                    else:
                        self._handles.append(module.register_forward_hook(hook))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._batch.clear()
        _restore_attention(self.model, self._previous_attention)
        self._previous_attention = None

    def _hook(self, site: str, position: int, mode: str):
        def record(module, inputs, output=None):  # a forward hook, or (without output) a pre-hook
            value = _first_tensor(inputs if mode == "input" else output)
            self._batch.setdefault(site, {})[position] = value

        return record

    def take(self, output, input_ids: torch.Tensor, mask: torch.Tensor, special_ids: tuple[int | None, int | None]):
        """The sites' tensors of the forward pass that produced ``output``; clears the buffer."""
        batch, self._batch = self._batch, {}
        result = {}
        for site in self.sites:
            if site.name == ATTN_HEADS:
                attentions = output.attentions
                if not attentions or attentions[0] is None:
                    raise RuntimeError("the model returned no attention probabilities for site attn_heads")
                result[site.name] = [
                    attention_head_features(attentions[layer - 1], input_ids, mask, *special_ids)
                    for layer in site.layers
                ]
                continue
            recorded = batch.get(site.name, {})
            values = []
            for position, tap in enumerate(site.taps):
                value = recorded.get(position)
                if value is None or value.dim() != 3 or value.shape[:2] != input_ids.shape:
                    shape = None if value is None else tuple(value.shape)
                    raise InputError(
                        f"site '{site.name}': module {tap.module} gave "
                        f"{'no tensor' if shape is None else f'shape {shape}'}, not a token-aligned "
                        f"(batch, tokens, width) = ({input_ids.shape[0]}, {input_ids.shape[1]}, ...) tensor",
                        "pick a module whose output has one vector per token",
                    )
                values.append(value)
            result[site.name] = values
        return result


def attention_head_features(
    probs: torch.Tensor, input_ids: torch.Tensor, mask: torch.Tensor, cls_id: int | None, sep_id: int | None
) -> torch.Tensor:
    """``(batch, heads, tokens, tokens)`` attention probabilities -> ``(batch, tokens, 3 * heads)``.

    Per query token and head: entropy of the attention distribution, attention on the first token
    (CLS) and total attention on SEP tokens (the last real token if the tokenizer has no SEP).
    Padding keys carry zero probability, so they add nothing.
    """
    p = probs.float()
    entropy = -torch.xlogy(p, p).sum(-1)  # (B, heads, T)
    to_cls = p[..., 0]
    real = mask.bool()
    if sep_id is not None:
        sep = (input_ids == sep_id) & real
    else:
        last = real.long().sum(1).clamp_min(1) - 1
        sep = torch.nn.functional.one_hot(last, input_ids.shape[1]).bool()
    to_sep = (p * sep[:, None, None, :].to(p.dtype)).sum(-1)
    return torch.cat([entropy, to_cls, to_sep], dim=1).transpose(1, 2).contiguous()


@torch.inference_mode()
def measure_widths(
    model: torch.nn.Module,
    sites: list[Site],
    device: torch.device,
    special_ids: tuple[int | None, int | None],
    hidden_size: int,
) -> None:
    """Fill in each site's width with one tiny forward pass (module outputs are not known in advance)."""
    if all(site.name == HIDDEN for site in sites):
        sites[0].width = hidden_size
        return
    ids = [token for token in special_ids if token is not None] or [0]
    input_ids = torch.tensor([ids + [ids[-1]]], device=device)
    mask = torch.ones_like(input_ids)
    with SiteRecorder(model, sites) as recorder:
        output = model(input_ids=input_ids, attention_mask=mask, **recorder.forward_options)
        values = recorder.take(output, input_ids, mask, special_ids)
    for site in sites:
        site.width = hidden_size if site.name == HIDDEN else int(values[site.name][0].shape[-1])

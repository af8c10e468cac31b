"""Edits at a site inside a layer (``--intervene KIND:ARGS@L:SITE``): the activation that ``featx extract --site
SITE`` stores as layer L (``forward/sites.py``: ``attn_out``, ``ffn``, ``pre_ln``; a module's output, or the
input of the module that reads it, inside the block that makes layer L) is changed for every token by a hook on
that module, so the rest of the block and every block above compute from the edited activation.

A module's output is replaced by the hook's return value; a module's input (``ffn`` of Llama, T5 and ModernBERT,
every ``pre_ln``) is edited in place. In place matters for ``pre_ln``, the residual sum fed to the MLP's norm: in
pre-LN models (GPT-2, Llama, T5, ModernBERT) that tensor is also the residual carried past the MLP, so the edit
changes the layer's residual stream there, as an edit of the state should. The families are those whose sites
featx names (``sites.FAMILIES``); any other is refused before any forward pass.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ...errors import InputError
from .apply import apply_edit
from .sources import EditMap
from .spec import Intervention


def _family(model: torch.nn.Module, edit: Intervention) -> str:
    from ..forward.sites import FAMILIES, architecture_family

    family = architecture_family(model)
    if family is None:
        raise InputError(
            f"--intervene {edit.kind}: {type(model).__name__} has no site {edit.site} featx knows (sites are named "
            f"for {', '.join(FAMILIES)}-style models)",
            "edit the layer's output instead (@L without a site)",
        )
    return family


def site_tap(model: torch.nn.Module, edit: Intervention, n_blocks: int):
    """The ``Tap`` (module path and mode) of ``edit``'s site in the block that makes layer ``edit.layer``."""
    from ..forward.sites import resolve_sites

    _family(model, edit)
    if not 1 <= edit.layer <= n_blocks:
        raise InputError(
            f"--intervene {edit.kind}: site {edit.site} at layer {edit.layer} is outside the model's blocks, "
            f"which make layers 1..{n_blocks}",
            f"edit a site at a layer from 1 to {n_blocks}",
        )
    (site,) = resolve_sites(model, [str(edit.site)], [edit.layer], n_blocks)
    return site.taps[0]


def site_widths(loaded, edits: Iterable[Intervention]) -> dict[str, int]:
    """The width of every site the ``edits`` name on a ``LoadedModel``, measured as ``featx extract --site``
    measures it (one forward pass of three tokens, before any of the corpus); ``{}`` without site edits."""
    from ..forward.sites import measure_widths, resolve_sites

    at_sites = {edit.site: edit for edit in edits if edit.site is not None}
    if not at_sites:
        return {}
    n_blocks = int(loaded.n_layers) - 1
    for edit in at_sites.values():
        site_tap(loaded.model, edit, n_blocks)
    sites = resolve_sites(loaded.model, list(at_sites), [1], n_blocks)
    tokenizer = loaded.tokenizer
    special = (tokenizer.cls_token_id, tokenizer.sep_token_id)
    measure_widths(loaded.model, sites, loaded.device, special, int(loaded.hidden_size))
    return {site.name: int(site.width or 0) for site in sites}


def _first(value) -> torch.Tensor:
    tensor = value if isinstance(value, torch.Tensor) else value[0] if isinstance(value, tuple) and value else None
    if not isinstance(tensor, torch.Tensor):
        raise RuntimeError("--intervene: a site's module gave no tensor to edit")
    return tensor


def _input_hook(edit: EditMap, cached: dict):
    def hook(module, args) -> None:
        state = _first(args)
        state.copy_(apply_edit(state, edit, cached))

    return hook


def _output_hook(edit: EditMap, cached: dict):
    def hook(module, args, output):
        edited = apply_edit(_first(output), edit, cached)
        return edited if isinstance(output, torch.Tensor) else (edited, *output[1:])

    return hook


def _root(model: torch.nn.Module) -> torch.nn.Module:
    """The model whose sites are named: ``model`` itself, or the base model inside a model with a head (an LM
    model's ``transformer``, ``model`` or ``bert``: ``featx intervene``'s loss runs one)."""
    from ..forward.sites import architecture_family

    base = getattr(model, "base_model", None)
    if architecture_family(model) is None and isinstance(base, torch.nn.Module) and base is not model:
        return base
    return model


def site_hooks(model: torch.nn.Module, n_blocks: int, edits: Iterable[EditMap], cached: dict) -> list:
    """The hooks of the site ``edits`` on ``model`` (their handles, to remove); every hook removed on a failure."""
    handles: list = []
    root = _root(model)
    try:
        for edit in edits:
            tap = site_tap(root, edit.intervention, n_blocks)
            module = root.get_submodule(tap.module)
            if tap.mode == "input":
                handles.append(module.register_forward_pre_hook(_input_hook(edit, cached)))
            else:
                handles.append(module.register_forward_hook(_output_hook(edit, cached)))
    except BaseException:
        for handle in handles:
            handle.remove()
        raise
    return handles


__all__ = ["site_hooks", "site_tap", "site_widths"]

"""The edits applied inside the forward pass, with hooks on the model's own blocks (no model code copied).

Hidden state ``L`` (the stored layer ``L``, ``output_hidden_states[L]``) is, for ``L`` below the top, what the
model hands block ``L`` (0-based): the embeddings' output for ``L = 0``, block ``L - 1``'s output after that
(``forward/truncation.py`` measures where the blocks are and checks exactly this). An edit at ``L < N`` is a
forward pre-hook on block call ``L`` that edits its hidden-states input *in place*: block ``L`` and every block
above compute from the edited state, and the state the model returns as ``hidden_states[L]`` (the same tensor)
is the edited one. At ``L = N`` (the top) the edit applies to the stored top layer itself: the last block's
output, or, for models that norm it before returning it (decoders, T5's encoder, ModernBERT: ``final_norm``),
that norm's output, so that an eraser or a direction made from the stored top-layer vectors edits those vectors
(and what an LM head reads), not the state before the norm.

Blocks are counted per call, not per module (a model-level pre-hook resets the count at every forward pass), so
a shared block called N times (ALBERT) is edited at the right call. The edit is the same arithmetic for every
token of every row, padding included: a row's states never depend on its batch neighbours or on padding.
It runs in float32 (a half-precision state is edited in float32 and rounded back). An edit at a site inside a
layer (``@L:SITE``) is a hook on that site's module instead (``inner.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ...errors import InputError
from .apply import apply_edit
from .sources import EditMap


def _hidden_of(args: tuple, kwargs: dict) -> torch.Tensor:
    value = args[0] if args else kwargs.get("hidden_states")
    if not isinstance(value, torch.Tensor):
        raise RuntimeError("--intervene: a block was called without a hidden-states tensor")
    return value


class EditHooks:
    """Context manager: the hooks of ``edits`` on ``model``'s blocks (the ``ModuleList`` at ``path``, ``n_blocks``
    calls per pass); every hook removed on exit."""

    def __init__(self, model: torch.nn.Module, path: str, n_blocks: int, edits: Iterable[EditMap]):
        self.model, self.path, self.n_blocks = model, path, n_blocks
        edits = tuple(edits)
        self.edits = tuple(edit for edit in edits if edit.intervention.site is None)  # at a layer's output
        self.site_edits = tuple(edit for edit in edits if edit.intervention.site is not None)  # inside a layer
        self.calls = 0
        self._norm: torch.nn.Module | None = None  # the final norm, where the top layer is edited
        self._handles: list = []
        self._cached: dict = {}

    def __enter__(self) -> EditHooks:
        if self.site_edits:
            from .inner import site_hooks

            self._handles += site_hooks(self.model, self.n_blocks, self.site_edits, self._cached)
        if not self.edits:
            return self
        blocks = self.model.get_submodule(self.path)
        self._handles.append(self.model.register_forward_pre_hook(self._reset))
        for block in dict.fromkeys(blocks):  # a shared block (ALBERT): hooked once, counted per call
            self._handles.append(block.register_forward_pre_hook(self._before, with_kwargs=True))
            self._handles.append(block.register_forward_hook(self._after))
        if any(edit.layer == self.n_blocks for edit in self.edits):
            self._norm = final_norm(self.model, self.path)
            if self._norm is not None:
                self._handles.append(self._norm.register_forward_hook(self._after_norm))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._cached.clear()

    def _reset(self, module, args) -> None:
        self.calls = 0

    def _edit_in_place(self, state: torch.Tensor, layer: int) -> None:
        for edit in self.edits:
            if edit.layer == layer:
                state.copy_(apply_edit(state, edit, self._cached))

    def _before(self, module, args, kwargs) -> None:
        self._edit_in_place(_hidden_of(args, kwargs), self.calls)

    def _after(self, module, args, output) -> None:
        self.calls += 1
        if self.calls == self.n_blocks and self._norm is None:  # the last block's output: the top layer
            state = output if isinstance(output, torch.Tensor) else output[0]
            self._edit_in_place(state, self.n_blocks)

    def _after_norm(self, module, args, output) -> None:
        self._edit_in_place(output if isinstance(output, torch.Tensor) else output[0], self.n_blocks)


# The names transformers gives the norm a model applies to its last block's output before returning it (the
# stored top layer): Llama, Mistral, Qwen2, Gemma ``norm``; GPT-2 ``ln_f``; T5 ``final_layer_norm``; ModernBERT
# ``final_norm``; mBART's encoder ``layer_norm``. It sits beside the list of blocks.
FINAL_NORMS = ("norm", "ln_f", "final_layer_norm", "final_norm", "layer_norm", "norm_f")


def final_norm(model: torch.nn.Module, path: str) -> torch.nn.Module | None:
    """The norm ``model`` applies to the output of its blocks (the ``ModuleList`` at ``path``) before returning it
    as the top hidden state, found beside the blocks; None for models that return the last block's output itself
    (BERT, RoBERTa, DistilBERT, ALBERT, BART's encoder). tests/extraction/edits checks, for every family, that an
    edit at the top equals the same edit of the stored top layer."""
    parent = model.get_submodule(path.rpartition(".")[0])
    for name in FINAL_NORMS:
        module = parent._modules.get(name)
        if module is not None:
            return module
    return None


def block_path(model: torch.nn.Module, n_blocks: int, device: torch.device) -> str:
    """Where the model's blocks are (measured, ``truncation.find_blocks``); an ``InputError`` where unknown."""
    from ..forward.truncation import find_blocks

    path = find_blocks(model, n_blocks, device, getattr(model.config, "vocab_size", None))
    if path is None:
        raise InputError(
            f"--intervene: featx cannot find the blocks of {type(model).__name__} (a list of modules called once "
            "per layer with the hidden states), so it cannot edit inside its forward pass",
            "use a model of a family featx knows (BERT, RoBERTa, DistilBERT, GPT-2, Llama, T5 ...)",
        )
    return path


def plan_edits(intervene: str | None, seed: int, loaded) -> tuple[tuple[EditMap, ...], str | None]:
    """The edits of ``--intervene`` on a loaded model (``LoadedModel``), checked, and the path of its blocks;
    ``((), None)`` without edits."""
    from .sources import ModelInfo, resolve_edits
    from .spec import parse_interventions

    edits = parse_interventions(intervene, seed)
    if not edits:
        return (), None
    from .inner import site_widths

    widths = site_widths(loaded, edits)
    info = ModelInfo(
        str(loaded.name), str(loaded.weights_sha256), int(loaded.hidden_size), int(loaded.n_layers), widths
    )
    maps = resolve_edits(edits, info)
    return maps, block_path(loaded.model, info.n_layers - 1, loaded.device)


def check_edits_reach(edits: Iterable[EditMap], layers: Iterable[int], site_layers: Iterable[int]) -> None:
    """Refuse an edit that changes nothing the file stores: every stored layer below it (``layers``: the hidden
    states'; ``site_layers``: the sites' inside the blocks). An edit of layer L's output reaches the stored layers
    from L up and the sites of the blocks above L; an edit at a site inside block L reaches layer L and the sites
    of block L (the later ones) and above. The file would hold the plain features under an edited name."""
    top = max(layers, default=-1)
    top_site = max(site_layers, default=-1)
    for edit in edits:
        where = edit.intervention
        first_site = where.layer if where.site is not None else where.layer + 1
        if top >= where.layer or top_site >= first_site:
            continue
        raise InputError(
            f"--intervene: the edit at {where.where} changes nothing stored: the highest stored layer is {top}, "
            "below the edit, so the file would hold the plain features under an edited name",
            f"store layer {where.layer} or above too (--layers), or edit a stored layer",
        )


__all__ = ["EditHooks", "apply_edit", "block_path", "check_edits_reach", "final_norm", "plan_edits"]

"""The truncated forward pass: the embeddings plus the first K blocks only, when no stored layer is above K.

Hidden state ``k`` (``k`` below the top) is what the model hands block ``k`` (0-based): the embeddings' output for
``k = 0``, block ``k - 1``'s output after that. So a forward pre-hook on the blocks records each block's input and,
at the input of block K, ends the pass by raising a private stop signal: blocks K..N-1, the final norm of decoders
(applied to the last hidden state only) and any pooler head never run, and the states are the very tensors the full
pass would have handed on, bit for bit. The top layer itself needs the full pass (the final norm and, in some
families, the states after it), so a selection that includes it runs the whole model as before.

Where the blocks are is measured, not looked up: the block list (a ``ModuleList``, known paths first, then any
other) is the one whose modules are called exactly N times in one pass with inputs equal to the full pass's hidden
states, and a stopped pass must give the same states again (``find_blocks``, one tiny forward pass per candidate at
plan time). A model where no list passes, and requests that need the full output (``attn_heads`` reads the returned
attention probabilities; a hooked module outside the blocks that run) run the whole model. Albert's shared layer
group (one module called N times) passes: calls are counted, not modules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from .sites import ATTN_HEADS, FAMILIES, HIDDEN, Site

# Where the blocks usually are; any other ModuleList is tried after these (``find_blocks``).
KNOWN_PATHS = (
    *dict.fromkeys(spec["layers"] for spec in FAMILIES.values()),
    "block",  # the encoder stack of a T5Model (``get_encoder()``)
    "encoder.layers",
    "encoder.albert_layer_groups",
    "transformer.h",
)


class _Stop(Exception):
    """Raised by the pre-hook of the first block not run: the forward pass ends there."""


@dataclass(frozen=True)
class Cut:
    """Run blocks ``0..blocks_run - 1`` of the ``ModuleList`` at ``path`` (of ``total`` block calls), then stop."""

    path: str
    blocks_run: int
    total: int


def _block_inputs(model: torch.nn.Module, blocks: torch.nn.ModuleList, stop_at: int | None, inputs: dict) -> list:
    """Each block call's input (hidden state ``k`` at call ``k``), ending the pass at call ``stop_at`` if given.

    The model's output is discarded: callers read states from the block inputs only."""
    seen: list[torch.Tensor] = []

    def record(module, args, kwargs):
        seen.append(args[0] if args else kwargs["hidden_states"])
        if stop_at is not None and len(seen) > stop_at:
            raise _Stop

    handles = [module.register_forward_pre_hook(record, with_kwargs=True) for module in dict.fromkeys(blocks)]
    try:
        model(**inputs)
    except _Stop:
        pass
    finally:
        for handle in handles:
            handle.remove()
    return seen


def truncated_states(model: torch.nn.Module, cut: Cut, layers: Iterable[int], inputs: dict) -> list[torch.Tensor]:
    """The hidden states of ``layers`` (each at most ``cut.blocks_run``) from a pass that stops there."""
    blocks = model.get_submodule(cut.path)
    assert isinstance(blocks, torch.nn.ModuleList)  # find_blocks checked it
    seen = _block_inputs(model, blocks, cut.blocks_run, inputs)
    if len(seen) != cut.blocks_run + 1:
        raise RuntimeError(f"the truncated forward pass saw {len(seen)} block inputs, not {cut.blocks_run + 1}")
    return [seen[layer] for layer in layers]


def _candidates(model: torch.nn.Module) -> list[str]:
    lists = [name for name, module in model.named_modules() if isinstance(module, torch.nn.ModuleList) and name]
    return [path for path in KNOWN_PATHS if path in lists] + [name for name in lists if name not in KNOWN_PATHS]


def _passes(model: torch.nn.Module, path: str, n_blocks: int, inputs: dict) -> bool:
    """Whether the list at ``path`` is the blocks: N calls whose inputs are the hidden states, and a pass
    stopped at the middle call gives those same states."""
    blocks = model.get_submodule(path)
    assert isinstance(blocks, torch.nn.ModuleList)
    try:
        full = model(**inputs, output_hidden_states=True).hidden_states
        seen = _block_inputs(model, blocks, None, inputs)
        stop = n_blocks // 2
        stopped = _block_inputs(model, blocks, stop, inputs)
    except Exception:  # a model this check cannot drive: run it whole
        return False
    if full is None or len(full) != n_blocks + 1 or len(seen) != n_blocks or len(stopped) != stop + 1:
        return False
    return all(torch.equal(a, b) for a, b in zip(seen, full[:n_blocks], strict=True)) and all(
        torch.equal(a, b) for a, b in zip(stopped, full[: stop + 1], strict=True)
    )


@torch.inference_mode()
def find_blocks(model: torch.nn.Module, n_blocks: int, device: torch.device, vocab_size: int | None) -> str | None:
    """The path of the model's block list (see the module's docstring), or None where none is certain."""
    if n_blocks < 1:
        return None
    high = max(3, min(int(vocab_size or 8), 8))
    ids = torch.tensor([[1, 2, high - 1], [2, high - 1, 1]], device=device)
    inputs = {"input_ids": ids, "attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]], device=device)}
    for path in _candidates(model):
        if _passes(model, path, n_blocks, inputs):
            return path
    return None


def _inside(module: str, path: str, blocks_run: int) -> bool:
    """Whether a hooked module sits inside one of the blocks that run."""
    return any(module == f"{path}.{index}" or module.startswith(f"{path}.{index}.") for index in range(blocks_run))


def plan_cut(loaded, layers: list[int], hooked: Iterable[Site]) -> Cut | None:
    """The cut for a selection of ``layers`` (0 = embeddings) on ``loaded``, or None to run the whole model."""
    n_blocks = loaded.n_layers - 1
    top = max(layers)
    if top >= n_blocks:
        return None
    hooked = [site for site in hooked if site.name != HIDDEN]
    if any(site.name == ATTN_HEADS for site in hooked):
        return None
    path = find_blocks(loaded.model, n_blocks, loaded.device, getattr(loaded.model.config, "vocab_size", None))
    if path is None:
        return None
    if not all(_inside(tap.module, path, top) for site in hooked for tap in site.taps):
        return None
    return Cut(path, top, n_blocks)

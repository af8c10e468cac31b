"""``apply_edit``: an ``EditMap``'s arithmetic on a tensor of states, in float32, the one the hooks apply at a layer's
output (``hooks.py``) and at a site inside a layer (``inner.py``)."""

from __future__ import annotations

import torch

from .sources import EditMap


def _tensors(edit: EditMap, device: torch.device) -> tuple[torch.Tensor, ...]:
    return tuple(
        torch.as_tensor(array, dtype=torch.float32, device=device)
        for array in (edit.mean, edit.left, edit.right, edit.shift)
    )


def apply_edit(x: torch.Tensor, edit: EditMap, cached: dict | None = None) -> torch.Tensor:
    """``edit`` of the states ``x`` (``(..., d)``): ``x - ((x - mean) @ right.T) @ left.T + shift``, a new tensor
    in ``x``'s dtype. ``cached``: a dict that keeps the edit's tensors per device between calls."""
    key = (id(edit), x.device)
    tensors = cached.get(key) if cached is not None else None
    if tensors is None:
        tensors = _tensors(edit, x.device)
        if cached is not None:
            cached[key] = tensors
    mean, left, right, shift = tensors
    states = x.float()
    edited = states - ((states - mean) @ right.T) @ left.T + shift
    return edited.to(x.dtype)


__all__ = ["apply_edit"]

"""``--random-init`` on featx's own encoders: the weights transformers' ``from_config`` draws, without transformers.

transformers builds the network under the seed (each layer's constructor draws torch's default init from the
global generator), then draws every weight again in ``_init_weights``, visiting the modules children first: a
linear layer's weight from N(0, ``initializer_range``) and its bias 0, an embedding's table from the same normal
with its padding row 0, a LayerNorm's weight 1 and bias 0, all in the model's dtype. featx's encoders hold
transformers' modules in transformers' order, so the same steps from the same seed give the same tensors, bit for
bit (``tests/extraction/fast/test_random_init.py`` compares them with transformers' for every native family):
a random-init features file is the one transformers' path writes, and no transformers import is paid for it.
The constructors' draws are thrown away; they matter only for how far they move the generator. The caller's
generator state is left as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

DEFAULT_SPREAD = 0.02  # transformers' when config.json's initializer_range is 0 or null


def drawn(network: Callable[[Any], nn.Module], settings: Any, dtype: torch.dtype, seed: int) -> nn.Module:
    """``network(settings)`` with every weight drawn as transformers' ``from_config`` draws it after
    ``torch.manual_seed(seed)``, in ``dtype``, in eval mode, on the CPU."""
    spread = settings.initializer_range or DEFAULT_SPREAD
    with torch.random.fork_rng(devices=[]), _default_dtype(dtype), torch.no_grad():
        torch.manual_seed(seed)
        model = network(settings)
        _draw(model, spread)
    return model.eval()


def _draw(module: nn.Module, spread: float) -> None:
    """transformers' ``_init_weights`` over ``module``'s tree, children first (``PreTrainedModel.smart_apply``)."""
    for child in module.children():
        _draw(child, spread)
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=spread)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=spread)
        if module.padding_idx is not None:
            module.weight[module.padding_idx].zero_()
    elif "LayerNorm" in type(module).__name__:
        if getattr(module, "weight", None) is not None:
            nn.init.ones_(module.weight)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """New parameters in ``dtype`` while the network is built, as transformers builds it for ``from_config(dtype=)``."""
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)

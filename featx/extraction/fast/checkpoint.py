"""What featx's own encoders (``bert.py``, ``mpnet.py``, ``roberta.py``) share to load a checkpoint without
transformers.

``read_config``: a folder's config.json as a dict. ``build_on_meta``: a network built with parameters on the
meta device and ``nn.init``'s fills skipped. ``match_keys``: the checkpoint's tensor names read as the
network's (a head model's prefix such as ``bert.`` dropped, its heads left out). ``load_strict``: every
parameter from ``model.safetensors`` by name and shape (the pooler may be absent: ``pooler_left_out``), or one
``ModelError`` naming what is missing or extra. ``load_encoder``: all of it for one folder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from ...errors import ModelError
from ...safe_files import loads_json

INIT_FUNCTIONS = ("normal_", "uniform_", "kaiming_uniform_", "ones_", "zeros_")
ENCODER_PARTS = ("embeddings", "encoder", "pooler")  # the first name of every encoder weight

Network = TypeVar("Network", bound=nn.Module)


def read_config(folder: Path) -> dict:
    try:
        config = loads_json((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelError(f"cannot read {Path(folder) / 'config.json'}: {err}") from None
    if not isinstance(config, dict):
        raise ModelError(f"{Path(folder) / 'config.json'} is not a JSON object")
    return config


@contextlib.contextmanager
def _fills_skipped():
    """``nn.init``'s fills as no-ops while the meta network is built. A fill of a meta tensor runs torch's
    Python reference kernels, whose first use imports ``torch._dynamo`` (about 1 s of start-up), for values
    the checkpoint replaces anyway; transformers' ``no_init_weights`` skips them the same way."""
    saved = {name: getattr(nn.init, name) for name in INIT_FUNCTIONS}
    try:
        for name in INIT_FUNCTIONS:
            setattr(nn.init, name, _unfilled)
        yield
    finally:
        for name, function in saved.items():
            setattr(nn.init, name, function)


def _unfilled(tensor: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    return tensor


def build_on_meta(factory: Callable[[], Network]) -> Network:
    """``factory()`` with its parameters on the meta device (no memory, no random init): weights come next."""
    with torch.device("meta"), _fills_skipped():
        return factory()


def checkpoint_keys(weights: Path) -> list[str]:
    """The tensor names of a safetensors file (its header only)."""
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as handle:
        return list(handle.keys())


def match_keys(
    model_keys: Iterable[str], checkpoint_keys: Iterable[str], prefix: str, ignored: tuple[str, ...] = ()
) -> tuple[dict[str, str], list[str], list[str]]:
    """``({model key: checkpoint key}, missing, unexpected)``: the checkpoint read as the encoder.

    With ``prefix`` (``bert.``: a checkpoint of a model with heads) the keys under it are the encoder's and
    the others (the heads) are left out, as transformers does; ``ignored`` keys (buffers older checkpoints
    saved) are left out too.
    """
    checkpoint_keys = list(checkpoint_keys)
    prefixed = any(key.startswith(prefix) for key in checkpoint_keys)
    base = {
        key[len(prefix) :] if prefixed else key: key
        for key in checkpoint_keys
        if not prefixed or key.startswith(prefix)
    }
    model_keys = list(model_keys)
    mapping = {key: base[key] for key in model_keys if key in base}
    missing = [key for key in model_keys if key not in base]
    unexpected = sorted(key for key in base if key not in mapping and key not in ignored)
    if prefixed and any(key.split(".")[0] in ENCODER_PARTS for key in checkpoint_keys):
        unexpected += ["(both prefixed and unprefixed encoder weights)"]
    return mapping, missing, unexpected


def pooler_left_out(model_keys: Iterable[str], missing: list[str]) -> list[str]:
    """``missing`` less the pooler's weights when the checkpoint has none of them: a masked-LM model's checkpoint
    (roberta-base, some BERTs) is a whole encoder without the pooler, which featx then leaves out, as
    transformers' path removes an untrained pooler (``model_checks``)."""
    pooler = [key for key in model_keys if key.split(".")[0] == "pooler"]
    if pooler and set(pooler) <= set(missing):
        return [key for key in missing if key not in pooler]
    return missing


def _read_weights(
    weights: Path, mapping: dict[str, str], shapes: dict[str, torch.Size], dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    from safetensors import safe_open

    state = {}
    with safe_open(str(weights), framework="pt") as handle:
        for name, key in mapping.items():
            tensor = handle.get_tensor(key)
            if tensor.shape != shapes[name] or not tensor.is_floating_point():
                raise ModelError(
                    f"weight {key} in {weights} is {str(tensor.dtype).replace('torch.', '')} "
                    f"{tuple(tensor.shape)}, but config.json implies a float tensor of "
                    f"{tuple(shapes[name])}",
                    "check that config.json belongs to these weights",
                )
            state[name] = tensor.to(dtype)
    return state


def load_strict(
    model: Network, weights: Path, dtype: torch.dtype, prefix: str, ignored: tuple[str, ...], what: str
) -> Network:
    """``model`` (built on the meta device) with every weight of ``weights`` in ``dtype``, in eval mode.

    Strict: every parameter must be in the file under its name (prefixed or not) with its shape, and the file
    may hold nothing else of the encoder; anything else is one ``ModelError`` naming the keys (``what``: the
    encoder in words, e.g. "12-layer BERT encoder"). The one exception: a file without any of the pooler's
    weights gives the encoder without its pooler (``pooler_left_out``).
    """
    shapes = {name: tensor.shape for name, tensor in model.state_dict().items()}
    try:
        mapping, missing, unexpected = match_keys(shapes, checkpoint_keys(weights), prefix, ignored)
        kept = pooler_left_out(shapes, missing)
        if kept != missing:  # no pooler weights in the file: the encoder without its pooler
            model.register_module("pooler", None)
            shapes = {name: shape for name, shape in shapes.items() if name.split(".")[0] != "pooler"}
            missing = kept
        if missing or unexpected:
            listed = "; ".join(
                f"{kind}: {', '.join(keys[:4])}{', ...' if len(keys) > 4 else ''}"
                for kind, keys in (("missing", missing), ("unexpected", unexpected))
                if keys
            )
            raise ModelError(
                f"{weights} does not hold the weights of a {what} by name ({listed})",
                "check the model folder; FEATX_NATIVE=0 loads it through transformers instead",
            )
        state = _read_weights(weights, mapping, shapes, dtype)
    except ModelError:
        raise
    except Exception as err:  # safetensors' own error on a damaged file
        raise ModelError(
            f"cannot read the weights in {weights}: {type(err).__name__}: {err}",
            "check that the model folder is complete and undamaged",
        ) from None
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval()


def load_encoder(
    folder: Path, weights: Path, dtype: torch.dtype, settings_class, build: Callable, prefix: str, ignored: tuple
):
    """A native encoder of ``folder``: ``settings_class`` (``bert.BertSettings`` or a subclass) read from
    config.json, the network ``build`` makes of it, every weight of ``weights`` in ``dtype`` (``load_strict``)."""
    settings = settings_class.from_config(read_config(folder))
    what = f"{settings.num_hidden_layers}-layer {settings.label} encoder"
    return load_strict(build(settings), weights, dtype, prefix, ignored, what)

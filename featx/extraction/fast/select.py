"""The one place that decides whether a model runs on featx's own encoders (``bert.py``, ``mpnet.py``,
``roberta.py``) or through transformers.

Native only where it is certainly the same computation: the request needs nothing of transformers' internals
(``native_requested``: no site besides ``hidden``, whose hooks and eager-attention switch are written for
transformers' modules, and no ``--intervene`` edit, whose hooks are on transformers' blocks; ``FEATX_NATIVE``
not ``0``), and the folder (``choose``) is a plain BERT encoder
(``model_type`` bert, absolute positions, no decoder or cross-attention, gelu or relu), or a plain MPNet or
RoBERTa / XLM-R encoder (``model_type`` mpnet, roberta, xlm-roberta; the same conditions), whose single
``model.safetensors`` holds exactly the encoder's weights by name (the pooler's may be absent: a masked-LM
checkpoint, whose encoder is then built without it) and whose tokenizer ``AutoTokenizer`` would read exactly
as ``tokenizer.json`` says (``tokenizer.py``). ``--trust-remote-code`` and ``--device-map`` always go through
transformers. ``--random-init`` on such a folder draws the weights natively as transformers would
(``random_init.py``: the same tensors from the same seed) and does not read the weights file, so a folder
whose weights file is incomplete still runs natively there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ...errors import ModelError
from . import bert, mpnet, random_init, roberta
from .checkpoint import build_on_meta, checkpoint_keys, pooler_left_out, read_config
from .tokenizer import NativeTokenizer, NotEquivalent, load_native_tokenizer

ENV = "FEATX_NATIVE"  # "0": always load through transformers


@dataclass(frozen=True)
class Family:
    """One native encoder: its settings from config.json, its network class, key matching and loader."""

    settings: type[bert.BertSettings]
    network: Callable[[Any], torch.nn.Module]  # built for real (its constructors' draws) by --random-init
    checkpoint_match: Callable[[Iterable[str], Iterable[str]], tuple[dict[str, str], list[str], list[str]]]
    load: Callable[[Path, Path, torch.dtype], torch.nn.Module]

    def build(self, settings: Any) -> torch.nn.Module:
        """The network with its parameters on the meta device (no memory, no random init)."""
        return build_on_meta(lambda: self.network(settings))


FAMILIES = {  # config.json's model_type -> the native encoder
    "bert": Family(bert.BertSettings, bert.BertModel, bert.checkpoint_match, bert.load_bert),
    "mpnet": Family(mpnet.MPNetSettings, mpnet.MPNetModel, mpnet.checkpoint_match, mpnet.load_mpnet),
    "roberta": Family(roberta.RobertaSettings, roberta.RobertaModel, roberta.checkpoint_match, roberta.load_roberta),
    "xlm-roberta": Family(
        roberta.XLMRobertaSettings, roberta.RobertaModel, roberta.checkpoint_match, roberta.load_roberta
    ),
}
NATIVE, TRANSFORMERS = "native", "transformers"  # what the features file records as the implementation


def native_requested(config) -> bool:
    """Whether an extraction's options allow the native path (the folder is checked by ``choose``)."""
    from ..forward.sites import HIDDEN, parse_sites

    # --intervene edits through hooks on transformers' blocks: never native (the edited features come from
    # transformers' modules; featx's own encoders are not hooked)
    return (
        os.environ.get(ENV, "1") != "0"
        and parse_sites(config.sites) == [HIDDEN]
        and not getattr(config, "intervene", None)
    )


@dataclass(frozen=True)
class Choice:
    """The decision for one folder: ``tokenizer`` (already loaded) and ``model_type`` (a key of ``FAMILIES``) when
    native, else ``reason``."""

    tokenizer: NativeTokenizer | None = None
    weights: Path | None = None
    reason: str = ""
    model_type: str = ""
    drawn: bool = False  # --random-init: the weights are drawn (``random_init.drawn``), the weights file is not read

    @property
    def native(self) -> bool:
        return self.tokenizer is not None


def _config_reason(config: dict) -> str:
    """Why config.json describes something other than an encoder of ``FAMILIES`` ('' if it does not)."""
    if config.get("model_type") not in FAMILIES:
        return f"model_type {config.get('model_type')!r}"
    flags = [
        key
        for key in (
            "is_encoder_decoder",
            "is_decoder",
            "add_cross_attention",
            "pruned_heads",
            "chunk_size_feed_forward",
            "quantization_config",
        )
        if config.get(key)
    ]
    if flags:
        return f"config.json sets {', '.join(flags)}"
    if config.get("position_embedding_type") not in (None, "absolute"):
        return f"position_embedding_type {config['position_embedding_type']!r}"
    try:
        FAMILIES[config["model_type"]].settings.from_config(config)
    except (ModelError, TypeError) as err:
        return str(err)
    return ""


def _weights_reason(folder: Path, weight_files: list[Path], config: dict) -> str:
    if [Path(path).name for path in weight_files] != ["model.safetensors"]:
        return "the weights are not one model.safetensors"
    family = FAMILIES[config["model_type"]]
    model_keys = family.build(family.settings.from_config(config)).state_dict().keys()
    try:
        _, missing, unexpected = family.checkpoint_match(model_keys, checkpoint_keys(folder / "model.safetensors"))
    except Exception as err:  # a damaged header: transformers reports it
        return f"model.safetensors is not readable ({type(err).__name__})"
    missing = pooler_left_out(model_keys, missing)  # a masked-LM checkpoint: the encoder without its pooler
    if missing or unexpected:
        return (
            f"model.safetensors does not hold exactly the encoder's weights ({len(missing)} missing, "
            f"{len(unexpected)} others)"
        )
    return ""


def choose(
    folder: Path,
    weight_files: list[Path],
    requested: bool,
    trust_remote_code: bool = False,
    random_init: bool = False,
    placement: dict | None = None,
) -> Choice:
    """Native or transformers for ``folder``; reads config.json, the tokenizer files and the weights' header."""
    folder = Path(folder)
    reason = (
        "not requested"
        if not requested
        else "--trust-remote-code"
        if trust_remote_code
        else "--device-map"
        if placement
        else ""
    )
    if reason:
        return Choice(reason=reason)
    try:
        config = read_config(folder)
    except ModelError as err:
        return Choice(reason=err.message)
    # --random-init draws every weight (``random_init.drawn``): what the weights file holds does not matter
    reason = _config_reason(config) or ("" if random_init else _weights_reason(folder, weight_files, config))
    if reason:
        return Choice(reason=reason)
    try:
        tokenizer = load_native_tokenizer(folder, config["model_type"])
    except NotEquivalent as err:
        return Choice(reason=f"tokenizer: {err}")
    return Choice(
        tokenizer=tokenizer, weights=folder / "model.safetensors", model_type=config["model_type"], drawn=random_init
    )


def load(choice: Choice, folder: Path, dtype: torch.dtype, seed: int = 0):
    """``(config, tokenizer, encoder, part)`` of a native choice, as ``modeling._load_parts`` gives them; a drawn
    choice's weights drawn with ``seed`` (``random_init.drawn``), anyone else's read from its weights file."""
    assert choice.weights is not None  # a native choice names its weights
    family = FAMILIES[choice.model_type]
    if choice.drawn:
        encoder = random_init.drawn(family.network, family.settings.from_config(read_config(folder)), dtype, seed)
    else:
        encoder = family.load(folder, choice.weights, dtype)
    return encoder.config, choice.tokenizer, encoder, ""

"""Checks of a model folder before and while featx builds a network from it: a folder is untrusted input.

``modeling.load_model`` calls them in this order, each refusing with one ``ModelError``:

- ``check_files``: the files featx or transformers read (``CONFIG_FILES``; ``tokenizer.json`` and vocabularies:
  ``vocab.*``, ``merges.txt``, ``*.model``, ``*.spm``, ``*.tiktoken``) must be regular files of bounded size:
  ``CONFIG_LIMIT`` (10 MiB) for config JSON, ``VOCABULARY_LIMIT`` (100 MiB) for ``tokenizer.json`` and
  vocabulary files (the largest real ones are about 35 MB). A symbolic link may point only inside the folder
  (or, for a Hugging Face cache snapshot, inside its repository's cache folder, where the snapshot's links
  lead).
- ``check_tokenizer_files``: the folder holds a tokenizer vocabulary of its own (without one transformers
  builds an empty tokenizer in which every word is unknown); ``check_tokenizer`` refuses a loaded tokenizer
  that has nothing but its special tokens.
- ``check_config``: the sizes in ``config.json`` are whole numbers within ``BOUNDS`` and agree with the
  tensors in the safetensors files (their headers only): no hidden, intermediate or vocabulary size beyond the
  largest dimension of a tensor, and no more layers than some numbered stack of layers holds.
- ``load_checked``: transformers' load, with its multi-line load report silenced, refused when a weight of
  the network is missing, of another shape, or left over in the file (weights of heads, outside the network,
  are left out quietly, as before; a pooler without weights is removed, see ``_without_untrained_pooler``).
- ``encoder_only_class``: an encoder-only checkpoint (``T5EncoderModel``) is loaded by its own class.
- ``check_text_model``: the loaded network's forward reads ``input_ids`` (a vision or speech model, which would
  fail in its first forward pass, is refused).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...checks import parse_whole
from ...errors import ModelError
from ...json_fields import shown
from ...safe_files import loads_json

CONFIG_LIMIT = 10 * 2**20
VOCABULARY_LIMIT = 100 * 2**20
HEADER_LIMIT = 100 * 2**20  # safetensors' own limit on a header
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt")
VOCABULARY_SUFFIXES = (".model", ".spm", ".tiktoken")
# The other files featx or transformers read from a model folder (a training log beside them is not read).
CONFIG_FILES = (
    "config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "generation_config.json",
    "chat_template.json",
    "chat_template.jinja",
    "model.safetensors.index.json",
)

# config.json size fields by role, with the bounds featx accepts (the largest real models are far inside).
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers")
DECODER_LAYERS = ("num_decoder_layers", "decoder_layers")
HIDDEN = ("hidden_size", "d_model", "n_embd", "dim")
INTERMEDIATE = ("intermediate_size", "d_ff", "n_inner", "hidden_dim", "encoder_ffn_dim", "decoder_ffn_dim")
HEADS = (
    "num_attention_heads",
    "n_head",
    "num_heads",
    "n_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "num_key_value_heads",
)
POSITIONS = ("max_position_embeddings", "n_positions")
BOUNDS: dict[tuple[str, ...], tuple[int, int]] = {
    LAYERS: (1, 1024),
    DECODER_LAYERS: (0, 1024),
    HIDDEN: (1, 65536),
    INTERMEDIATE: (1, 1048576),
    HEADS: (1, 4096),
    POSITIONS: (1, 2**24),
    ("vocab_size",): (1, 2**24),
}
ENCODER_ONLY = ("T5EncoderModel", "MT5EncoderModel", "UMT5EncoderModel")


def _is_vocabulary(name: str) -> bool:
    return name in VOCABULARY_FILES or name.endswith(VOCABULARY_SUFFIXES) or name.startswith("vocab.")


def _limit(name: str) -> int:
    return VOCABULARY_LIMIT if _is_vocabulary(name) else CONFIG_LIMIT


def model_roots(folder: Path) -> list[Path]:
    """Where links in ``folder`` may lead: the folder, and a Hugging Face cache snapshot's repository folder."""
    roots = [folder.resolve()]
    if folder.parent.name == "snapshots":
        roots.append(folder.parent.parent.resolve())
    return roots


def check_file(path: Path, roots: list[Path], limit: int) -> None:
    """A ``ModelError`` unless ``path`` is a regular file of at most ``limit`` bytes inside ``roots``."""
    if path.is_symlink():
        try:
            target = path.resolve()
        except (OSError, RuntimeError):  # a loop of links
            raise ModelError(f"model file {path} is a link that leads nowhere") from None
        if not any(target == root or root in target.parents for root in roots):
            raise ModelError(
                f"model file {path} is a link that leads out of the model folder (to {target})",
                "copy the file into the folder instead of linking to it",
            )
    try:
        info = os.stat(path)
    except OSError as err:
        raise ModelError(f"cannot read model file {path}: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelError(f"model file {path} is not a regular file", "a model folder holds plain files")
    if info.st_size > limit:
        raise ModelError(
            f"model file {path} is {info.st_size / 2**20:.1f} MiB, over featx's limit of {limit // 2**20} MiB "
            "for such a file",
            "check that the file is what its name says",
        )


def check_files(folder: Path) -> None:
    """Every config or tokenizer file in ``folder`` (``CONFIG_FILES``, vocabularies) is a bounded regular file
    that stays inside it."""
    roots = model_roots(folder)
    for path in sorted(folder.iterdir()):
        if path.name in CONFIG_FILES or _is_vocabulary(path.name):
            check_file(path, roots, _limit(path.name))


def read_json(path: Path) -> Any:
    """The JSON in ``path``, read only after ``check_file`` (so never a device or a huge file)."""
    check_file(path, model_roots(path.parent), _limit(path.name))
    try:
        return loads_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelError(f"cannot read {path}: {err}", "check that the model folder is complete") from None


def check_tokenizer_files(folder: Path) -> None:
    """Refuse a folder without a tokenizer vocabulary of its own, naming the files looked for."""
    names = {path.name for path in folder.iterdir()}
    found = sorted(name for name in names if name in VOCABULARY_FILES or name.endswith(VOCABULARY_SUFFIXES))
    if found and all((folder / name).stat().st_size == 0 for name in found):
        raise ModelError(
            f"model folder {folder}: its tokenizer files are empty ({', '.join(found)})",
            "copy the tokenizer's files into the folder: AutoTokenizer.from_pretrained(NAME).save_pretrained(folder)",
        )
    if found:
        return
    raise ModelError(
        f"model folder {folder} has no tokenizer files (none of {', '.join(VOCABULARY_FILES)}, "
        f"*{', *'.join(VOCABULARY_SUFFIXES)}); transformers would make up an empty tokenizer",
        "copy the tokenizer's files into the folder: AutoTokenizer.from_pretrained(NAME).save_pretrained(folder)",
    )


def check_tokenizer(tokenizer: Any, name: str) -> Any:
    """``tokenizer``, refused if its vocabulary is nothing but its special tokens (every word would be unknown)."""
    specials = set(getattr(tokenizer, "all_special_tokens", []) or [])
    try:
        size = len(tokenizer)
    except TypeError:
        return tokenizer
    if size <= len(specials):
        raise ModelError(
            f"the tokenizer of {name} has only its {size} special tokens: every word would be unknown",
            "the folder's tokenizer files are incomplete; save the tokenizer into it again",
        )
    return tokenizer


def safetensors_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    """``{tensor name: shape}`` over ``files``, from their headers only (no tensor is read)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for path in files:
        try:
            with open(path, "rb") as handle:
                (length,) = struct.unpack("<Q", handle.read(8))
                if length > HEADER_LIMIT:
                    raise ValueError(f"a header of {length} bytes")
                header = loads_json(handle.read(length))
            tensors = {key: entry for key, entry in header.items() if key != "__metadata__"}
            shapes.update({key: tuple(int(size) for size in entry["shape"]) for key, entry in tensors.items()})
            end = 8 + length + max((int(entry["data_offsets"][1]) for entry in tensors.values()), default=0)
            file_size = os.stat(path).st_size
        except (OSError, ValueError, struct.error, TypeError, KeyError, AttributeError, IndexError) as err:
            raise ModelError(
                f"cannot load model {path.parent}: its weights file {path.name} has no readable safetensors "
                f"header ({type(err).__name__})",
                "check that the model folder is complete and undamaged",
            ) from None
        if file_size < end:
            raise ModelError(
                f"cannot load model {path.parent}: its weights file {path.name} is cut short ({file_size:,} bytes, "
                f"its header describes {end:,})",
                "the copy or download did not finish; copy the file again",
            )
    return shapes


def _size_fields(config: dict) -> Iterator[tuple[str, Any, int, int]]:
    for names, (low, high) in BOUNDS.items():
        for name in names:
            if config.get(name) is not None:
                yield name, config[name], low, high


def check_bounds(config: dict, path: Path) -> None:
    """Every size field present in ``config`` is a whole number within ``BOUNDS``."""
    for name, value, low, high in _size_fields(config):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ModelError(
                f"{path} has {name} {shown(value)}; featx accepts a whole number from {low} to {high}",
                "check that config.json belongs to these weights",
            )


def layer_stacks(keys: list[str]) -> dict[str, set[int]]:
    """``{prefix: indices}`` of the numbered module lists in tensor names (``encoder.layer.3.x`` -> encoder.layer)."""
    stacks: dict[str, set[int]] = {}
    for key in keys:
        parts = key.split(".")
        for position, part in enumerate(parts):
            index = parse_whole(part)  # a tensor name is the checkpoint's text: '²' would pass isdigit, not int
            if index is not None:
                stacks.setdefault(".".join(parts[:position]), set()).add(index)
    return stacks


def _layer_fields(config: dict) -> list[str]:
    if config.get("model_type") == "albert" or "num_hidden_groups" in config:
        return ["num_hidden_groups"]  # ALBERT shares its layers: the checkpoint holds the groups
    return [name for name in LAYERS if config.get(name) is not None]


def check_against_tensors(config: dict, shapes: dict[str, tuple[int, ...]], path: Path, layers: bool = True) -> None:
    """The sizes in ``config`` fit the tensors: none larger than the largest dimension of a tensor (a smaller
    one that does not fit is refused when the weights are read), and (``layers``) a numbered stack of at least
    that many layers (a checkpoint may hold extra layers of a head; extra layers of the network are refused as
    weights left unused when loading)."""
    largest = max((size for shape in shapes.values() for size in shape), default=0)
    for names in (HIDDEN, INTERMEDIATE, ("vocab_size",)):
        for name in names:
            if config.get(name) is not None and config[name] > largest:
                raise ModelError(
                    f"{path} has {name} {config[name]}, larger than any tensor in the weights "
                    f"(the largest dimension is {largest})",
                    "check that config.json belongs to these weights",
                )
    stacks = layer_stacks(list(shapes))
    for name in _layer_fields(config) if layers else []:
        layers = config.get(name, 1)
        if not any(set(range(layers)) <= indices for indices in stacks.values()):
            longest = max(stacks.items(), key=lambda item: len(item[1]), default=("", set()))
            held = f"{longest[0]} has {len(longest[1])}" if longest[0] else "none are numbered"
            raise ModelError(
                f"{path} has {name} {layers}, but the weights hold no stack of {layers} layers ({held})",
                "check that config.json belongs to these weights",
            )


def check_config(
    folder: Path, weight_files: list[Path], trust_remote_code: bool = False, random_init: bool = False
) -> None:
    """``config.json`` is a bounded JSON object with sane sizes that fit the weights (custom code: bounds only;
    ``--random-init``, which loads no weights, may have more or fewer layers than the weights hold)."""
    path = folder / "config.json"
    config = read_json(path)
    if not isinstance(config, dict):
        raise ModelError(f"{path} is not a JSON object", "check that the model folder is complete")
    check_bounds(config, path)
    if not trust_remote_code:
        check_against_tensors(config, safetensors_shapes(weight_files), path, layers=not random_init)


def check_contents(
    folder: Path, weight_files: list[Path], trust_remote_code: bool = False, random_init: bool = False
) -> None:
    """``check_config`` and ``check_tokenizer_files``: what can be checked before anything is built."""
    check_config(folder, weight_files, trust_remote_code, random_init)
    check_tokenizer_files(folder)


def encoder_only_class(config: Any) -> Any:
    """The transformers class of an encoder-only checkpoint (``T5EncoderModel``), or None."""
    names = [name for name in getattr(config, "architectures", None) or [] if name in ENCODER_ONLY]
    if not names or getattr(config, "is_encoder_decoder", False):
        return None
    import transformers

    return getattr(transformers, names[0], None)


def check_text_model(network: Any, config: Any, name: str) -> None:
    """Refuse, before any forward pass, a model of several parts (CLIP: its sizes in sub-configs only) and a network
    whose forward reads no token ids (ViT's ``pixel_values``, Whisper's ``input_features``)."""
    import inspect

    sizes = getattr(config, "hidden_size", getattr(config, "dim", 0)), getattr(config, "num_hidden_layers", 0)
    if not all(isinstance(size, int) and size > 0 for size in sizes):
        raise ModelError(
            f"model {name} ({type(network).__name__}) names no hidden size and layer count of its own in its "
            "config.json: a model of several parts (text and vision towers, say), which featx does not run whole",
            "save its text model alone and extract that folder, e.g. CLIPTextModel.from_pretrained(folder)"
            ".save_pretrained(text_folder)",
        )

    named = [
        parameter.name
        for parameter in inspect.signature(network.forward).parameters.values()
        if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]
    if named and "input_ids" not in named:
        raise ModelError(
            f"model {name} ({type(network).__name__}) does not read text: its forward takes {named[0]}, not input_ids",
            "featx runs text models: an encoder (BERT, RoBERTa, DeBERTa, ...) or a decoder (GPT-2, Llama, Qwen2, ...)",
        )


def _errors_only(record: logging.LogRecord) -> bool:
    """A logging filter that keeps errors only."""
    return record.levelno >= logging.ERROR


@contextlib.contextmanager
def quiet_load_report() -> Iterator[None]:
    """transformers' multi-line load report (missing / unexpected weights) off: featx says what matters.

    A filter, not a level: transformers runs extra checks (and logs more) when its logger's level is raised.
    """
    logger = logging.getLogger("transformers.modeling_utils")
    logger.addFilter(_errors_only)
    try:
        yield
    finally:
        logger.removeFilter(_errors_only)


def _shortened(keys: list[str], shown: int = 3) -> str:
    """Keys with layer numbers folded (``encoder.layer.*.x``), the first ``shown`` of them, then a count."""
    folded = list(dict.fromkeys(re.sub(r"\.[0-9]+\.", ".*.", key) for key in sorted(keys)))
    more = f" and {len(folded) - shown} more names" if len(folded) > shown else ""
    return ", ".join(folded[:shown]) + more


def _top(network: Any, key: str) -> str:
    """The top-level module of ``network`` a key names (after the base model's prefix, as transformers reads it)."""
    parts = key.split(".")
    if parts[0] == getattr(network, "base_model_prefix", None) and len(parts) > 1:
        parts = parts[1:]
    return parts[0]


def _in_network(network: Any, key: str) -> bool:
    """Whether a checkpoint key names a part of ``network`` (not of a head it does not have)."""
    return _top(network, key) in {name for name, _ in network.named_children()}


def _without_untrained_pooler(network: Any, missing: list[str]) -> list[str]:
    """``missing`` less the pooler's weights; a pooler without them is removed (its output would be noise).

    A checkpoint saved from a masked-LM model (``BertForMaskedLM``, RoBERTa) has no pooler: the encoder is
    whole, and only the ``pooler`` pooling, which would read a randomly drawn head, is then not offered.
    """
    pooler = [key for key in missing if _top(network, key) == "pooler"]
    if pooler and getattr(network, "pooler", None) is not None:
        network.pooler = None
    return [key for key in missing if key not in pooler]


def check_loading_info(network: Any, info: dict, folder: Path) -> None:
    """Refuse a load that left weights of the network missing, of another shape, or unused in the file."""
    problems = {
        "missing": _without_untrained_pooler(network, sorted(info.get("missing_keys") or [])),
        "of another shape": sorted(key for key, *_ in info.get("mismatched_keys") or []),
        "unused": sorted(key for key in info.get("unexpected_keys") or [] if _in_network(network, key)),
    }
    listed = "; ".join(f"{len(keys)} {what}: {_shortened(keys)}" for what, keys in problems.items() if keys)
    if listed:
        raise ModelError(
            f"the weights in {folder} do not fit the {type(network).__name__} its config.json describes ({listed})",
            "check that config.json belongs to these weights; only --random-init runs a model without its weights",
        )


def load_checked(cls: Any, folder: Path, **kwargs: Any) -> Any:
    """``cls.from_pretrained(folder)`` (safetensors only), refused unless every weight of the network loaded."""
    with quiet_load_report():
        network, info = cls.from_pretrained(
            str(folder), use_safetensors=True, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs
        )
    check_loading_info(network, info, folder)
    return network

"""Loading an encoder and its tokenizer safely (safetensors only, no remote code by default)."""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ...errors import FeatxError, FeatxWarning, InputError, ModelError
from ...safe_files import loads_json
from . import checks as model_checks
from .devices import resolve_device, resolve_dtype, slow_precision
from .files import DEFAULT_MODEL, default_model_path, weight_files
from .fingerprints import weights_sha256_in_background
from .size import checked_length, row_limit

PICKLE_WEIGHTS = (
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "tf_model.h5",
    "model.ckpt.index",
    "flax_model.msgpack",
)


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: Any  # a transformers tokenizer or ``native.NativeTokenizer``: read by its attributes only
    name: str  # what the user asked for ("default" resolved to its folder)
    path: str  # local folder the weights came from
    weights_sha256: str
    device: torch.device
    dtype: torch.dtype
    n_layers: int  # hidden-state outputs, embeddings included
    hidden_size: int
    max_length: int
    part: str = ""  # "encoder": the encoder of an encoder-decoder checkpoint
    causal: bool = False  # decoder-only: a token sees only itself and the tokens before it
    implementation: str = "transformers"  # or "native": featx's own BERT (native/), same features

    @property
    def has_pooler(self) -> bool:
        return getattr(self.model, "pooler", None) is not None


def _check_folder(folder: Path) -> list[Path]:
    if not (folder / "config.json").exists():
        raise ModelError(f"model folder {folder} has no config.json", "point --model at a Hugging Face model folder")
    weights = weight_files(folder)
    if not weights:
        pickles = [name for name in PICKLE_WEIGHTS if (folder / name).exists()]
        if pickles:
            raise ModelError(
                f"model folder {folder} has only pickle-based weights ({', '.join(pickles)}); "
                "featx loads safetensors only, because unpickling can run arbitrary code",
                "convert once, in an environment you trust: "
                "AutoModel.from_pretrained(folder).save_pretrained(folder, safe_serialization=True)",
            )
        raise ModelError(f"model folder {folder} has no *.safetensors weights")
    return weights


def _custom_code(folder: Path) -> list[str]:
    """The Python modules a model folder asks transformers to import (``auto_map`` entries)."""

    modules = []
    for name in ("config.json", "tokenizer_config.json"):
        try:
            config = loads_json((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        auto_map = config.get("auto_map") if isinstance(config, dict) else None
        if isinstance(auto_map, dict):
            for target in auto_map.values():
                for reference in target if isinstance(target, list) else [target]:
                    if isinstance(reference, str):
                        module = reference.split("--")[-1].rsplit(".", 1)[0] + ".py"
                        if module not in modules:
                            modules.append(module)
    return modules


MODEL_HINT = "give a local model folder, or a Hugging Face id like org/name"


def _resolve_folder(model: str) -> tuple[str, Path]:
    """Map ``--model`` (default, a folder, or a hub id) to a local folder, without network."""
    if model in (None, "", DEFAULT_MODEL):
        return "default:all-MiniLM-L6-v2", default_model_path()
    candidate = Path(model).expanduser()
    try:
        exists = candidate.exists()
    except OSError as err:  # a name the file system cannot take (too long): neither a folder nor a hub id
        raise ModelError(f"--model {model[:80]}... is not a usable name ({err.strerror})", MODEL_HINT) from None
    if exists:
        if not candidate.is_dir():
            raise ModelError(f"--model {model} is a file; give the model's folder")
        return model, candidate.resolve()
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ModelError(
            f"model folder {model} does not exist", "check the path, or give a Hugging Face id like org/name"
        )
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(
            model,
            allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "tokenizer*"],
            local_files_only=os.environ.get("HF_HUB_OFFLINE", "1") != "0",
        )
    except Exception as err:
        raise ModelError(
            f"model '{model}' is not available offline ({type(err).__name__})",
            "pass a local model folder, e.g. --model /path/to/bert-base-uncased "
            "(save one with AutoModel.from_pretrained(...).save_pretrained(folder)); "
            "set HF_HUB_OFFLINE=0 to let featx download it",
        ) from None
    return model, Path(folder)


def model_folder(model: str) -> tuple[str, Path]:
    """``--model`` as its name and its local folder (the default model's, a folder, a hub id's snapshot),
    without network; a clear error when there is none."""
    return _resolve_folder(model)


def load_tokenizer(model: str = DEFAULT_MODEL, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    name, folder = _resolve_folder(model)
    try:
        return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
    except Exception as err:
        raise ModelError(f"cannot load the tokenizer of {name}: {err}") from None


def load_configured(config, native: bool | None = None) -> LoadedModel:
    """The model an ``ExtractConfig`` names, with its tokenizer, as every extraction loads it (extract, its dry
    run, ``embed``): featx's own BERT where certainly equivalent (``native.select.native_requested``);
    ``native=False``: transformers' modules whatever the config (``featx intervene`` hooks their blocks)."""
    from ..fast.select import native_requested

    return load_model(
        config.model,
        config.device,
        config.dtype,
        config.trust_remote_code,
        config.random_init,
        config.init_seed,
        config.max_length,
        config.device_map,
        native=native_requested(config) if native is None else native,
    )


def load_model(
    model: str = DEFAULT_MODEL,
    device: str = "auto",
    dtype: str = "auto",
    trust_remote_code: bool = False,
    random_init: bool = False,
    seed: int = 0,
    max_length: int | None = None,
    device_map: str | None = None,
    native: bool = False,
) -> LoadedModel:
    """Load encoder + tokenizer from a local folder (or the local HF cache) in eval mode.

    ``random_init`` keeps the architecture and tokenizer but re-draws the weights
    (seeded): the standard control for "is it the training or the architecture?". Of an
    encoder-decoder checkpoint (T5, BART) only the encoder is loaded and run. ``native``: the request
    allows featx's own BERT (``native.select.native_requested``); it runs where ``native.select.choose``
    finds the folder certainly equivalent, without importing transformers.
    """
    from ..fast import select

    name, folder = _resolve_folder(model)
    model_checks.check_files(folder)
    weights = _check_folder(folder)
    _refuse_custom_code(name, folder, trust_remote_code)
    model_checks.check_contents(folder, weights, trust_remote_code, random_init)
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    placement = device_placement(device_map, device)
    _check_precision(torch_dtype, torch_device)
    weights_digest = weights_sha256_in_background(weights)  # overlaps the imports and the load
    choice = select.choose(folder, weights, native, trust_remote_code, random_init, placement)
    if choice.native:
        config, tokenizer, encoder, part = select.load(choice, folder, torch_dtype, seed)
    else:
        config, tokenizer, encoder, part = _load_parts(
            name, folder, torch_dtype, trust_remote_code, random_init, seed, placement
        )
    encoder.eval()
    if placement:  # accelerate placed the layers; batches enter where the embeddings are
        torch_device = encoder.get_input_embeddings().weight.device
    else:
        encoder.to(torch_device)
    return LoadedModel(
        model=encoder,
        tokenizer=tokenizer,
        name=name,
        path=str(folder),
        weights_sha256=("random-init:" if random_init else "") + weights_digest(),
        device=torch_device,
        dtype=torch_dtype,
        n_layers=int(getattr(config, "num_hidden_layers", getattr(config, "n_layers", 0))) + 1,
        hidden_size=int(getattr(config, "hidden_size", getattr(config, "dim", 0))),
        max_length=row_limit(config, getattr(tokenizer, "model_max_length", None), max_length),
        part=part,
        # featx's own encoders attend both ways by construction (select.choose refuses is_decoder configs):
        # measuring it would cost a forward pass through plain, not yet prepacked, layers on every start
        causal=False if choice.native else is_causal(encoder, torch_device, getattr(config, "vocab_size", None)),
        implementation=select.NATIVE if choice.native else select.TRANSFORMERS,
    )


def _check_precision(torch_dtype: torch.dtype, torch_device: torch.device) -> None:
    """Refuse bfloat16 on a GPU without it; warn, before the weights are read, of a half precision that runs
    slower than float32 on this CPU (the user can stop there)."""
    if torch_dtype == torch.bfloat16 and torch_device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise InputError("--dtype bfloat16: this GPU does not support bfloat16", "use --dtype float16")
    slow = slow_precision(torch_dtype, torch_device)
    if slow is not None:
        warnings.warn(slow, FeatxWarning, stacklevel=3)


def _load_parts(
    name: str, folder: Path, torch_dtype, trust_remote_code: bool, random_init: bool, seed: int, placement: dict
):
    """Config, tokenizer and network of a model folder through transformers; any failure is one ``ModelError``."""
    import transformers
    from transformers import AutoConfig
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    try:
        config = AutoConfig.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
        tokenizer = model_checks.check_tokenizer(load_tokenizer(str(folder), trust_remote_code=trust_remote_code), name)
        encoder, part = _load_network(folder, config, torch_dtype, trust_remote_code, random_init, seed, placement)
        model_checks.check_text_model(encoder, config, name)
    except ValueError as err:
        if "trust_remote_code" in str(err):
            raise ModelError(
                f"model {name} needs custom code from its folder, which featx does not run by default",
                "read that code first; pass --trust-remote-code only if you trust it",
            ) from None
        unknown = re.search(r"has model type `([^`]*)` but Transformers does not recognize", str(err))
        if unknown:  # transformers' own text is a paragraph of pip advice, of no use offline
            raise ModelError(
                f"model {name}: transformers {transformers.__version__} does not know its model_type "
                f"'{unknown.group(1)}'",
                "check model_type in its config.json; a newer transformers may know it",
            ) from None
        raise ModelError(f"cannot load model {name}: {err}") from None
    except OSError as err:
        raise ModelError(f"cannot load model {name}: {err}") from None
    except FeatxError:
        raise
    except Exception as err:  # e.g. safetensors' own error on a damaged file
        raise ModelError(
            f"cannot load model {name}: {type(err).__name__}: {err}",
            "check that the model folder is complete and undamaged",
        ) from None
    return config, tokenizer, encoder, part


def _refuse_custom_code(name: str, folder: Path, trust_remote_code: bool) -> None:
    custom = _custom_code(folder)
    if custom and not trust_remote_code:
        # Refused up front: without the flag transformers would either refuse later or quietly use a
        # built-in class in place of the author's code, giving features of a different model.
        raise ModelError(
            f"model {name} ships its own Python code ({', '.join(custom)}, named by auto_map in its config), "
            "which featx does not run by default",
            "read that code first; pass --trust-remote-code only if you trust it",
        )


# Encoder-decoder families whose encoder has a class of its own (loads without the decoder's weights).
ENCODER_CLASSES = {"t5": "T5EncoderModel", "mt5": "MT5EncoderModel", "umt5": "UMT5EncoderModel"}


def device_placement(device_map: str | None, device: str = "auto") -> dict:
    """``from_pretrained`` arguments for ``--device-map auto`` (accelerate's placement), or none.

    Refused without accelerate, and without a CUDA GPU (or with ``--device cpu``): accelerate would then put
    every layer on the CPU, or spill them to disk, which is slower than a plain CPU run and no smaller.
    """
    if not device_map:
        return {}
    import importlib.util

    if importlib.util.find_spec("accelerate") is None:
        raise InputError(
            "--device-map auto needs the accelerate package, which is not installed here",
            "pip install accelerate (or: pip install 'featx[large]'), or leave out --device-map",
        )
    if (device or "auto").lower() == "cpu":
        raise InputError(
            "--device-map auto spreads a model over GPUs, and --device cpu asks for the CPU",
            "leave out --device-map to run on the CPU, or --device to use the GPUs",
        )
    if not torch.cuda.is_available():
        raise InputError(
            "--device-map auto spreads a model over GPUs, and no CUDA GPU is available here",
            "leave out --device-map: the model then runs on the CPU (--dtype bfloat16 halves its memory)",
        )
    return {"device_map": device_map}


def _load_network(
    folder: Path,
    config,
    torch_dtype,
    trust_remote_code: bool,
    random_init: bool,
    seed: int,
    placement: dict | None = None,
):
    """The network featx runs, and ``part``: "" for the whole model, "encoder" for an encoder-decoder's encoder.

    ``AutoModel`` on an encoder-decoder checkpoint would build the whole model and run its decoder with no
    inputs; featx wants the encoder's states. transformers reads weights onto the meta device first
    (what ``low_cpu_mem_usage`` used to ask for), so a model is never held twice in memory.
    """
    import transformers
    from transformers import AutoModel

    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    cls = model_checks.encoder_only_class(config) or AutoModel
    if encoder_decoder and hasattr(transformers, ENCODER_CLASSES.get(config.model_type, "")):
        cls = getattr(transformers, ENCODER_CLASSES[config.model_type])
    kwargs = dict(dtype=torch_dtype, trust_remote_code=trust_remote_code, **(placement or {}))

    def build(**extra):
        if random_init:
            torch.manual_seed(seed)
            if cls is AutoModel:
                return cls.from_config(config, **kwargs, **extra)
            # A concrete class (T5EncoderModel) has no from_config: _from_config is what AutoModel's calls.
            return cls._from_config(config, dtype=torch_dtype, **extra)
        return model_checks.load_checked(cls, folder, **kwargs, **extra)

    try:
        network = build(attn_implementation="sdpa")
    except ValueError as err:
        if "sdpa" not in str(err).lower() and "attn_implementation" not in str(err):
            raise
        # from_pretrained falls back to eager by itself; from_config (--random-init) would ask for sdpa again.
        network = build(**({"attn_implementation": "eager"} if random_init else {}))
    if encoder_decoder and cls is AutoModel:
        network = network.get_encoder()
    return network, "encoder" if encoder_decoder else ""


def with_max_length(loaded: LoadedModel, max_length: int | None) -> LoadedModel:
    """``loaded`` (loaded with its own maximum) run at ``max_length`` tokens a row, checked as at load time;
    the same network and tokenizer are shared."""
    if max_length is None or max_length == loaded.max_length:
        return loaded
    return replace(loaded, max_length=checked_length(max_length, loaded.max_length))


@torch.inference_mode()
def is_causal(model: torch.nn.Module, device: torch.device, vocab_size: int | None) -> bool:
    """Whether the first token's states ignore the tokens after it (a causal, decoder-only model).

    Measured, not looked up: two two-token inputs that differ in their second token only.
    """
    high = max(2, min(int(vocab_size or 8), 8))
    ids = torch.tensor([[1, 2 % high], [1, (high - 1)]], device=device)
    if ids[0, 1] == ids[1, 1]:
        return False
    try:
        output = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    except Exception:  # a model this probe cannot drive: treated as bidirectional, as before
        return False
    first = torch.stack([state[:, 0].float() for state in output.hidden_states[1:]])
    scale = first.abs().max().clamp_min(1e-12)
    return bool(((first[:, 0] - first[:, 1]).abs().max() / scale) < 1e-6)

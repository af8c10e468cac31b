"""``featx extract --dry-run`` for a model too large to load for an estimate: everything from ``config.json``.

``estimation.estimate`` loads the model, tokenises and times a few batches; for a 7B-8B model the load alone
takes minutes and may not fit. ``from_config_reason`` says when to skip that (the folder holds no weights, or
they would take more than ``LARGE_MODEL_BYTES`` at the compute dtype) and ``estimate_from_config`` then
estimates from the config alone (``model_budget``): the parameter count (``model_size``), the weights at the
chosen dtype, one batch's activations, the features file, whether the peak fits the device (free GPU memory
on a GPU, else available RAM), and a time that is a lower bound: the forward's FLOPs at the rate of a matmul
of the model's MLP shape timed on the device (a fraction of a second, no weights).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..model.size import ModelSize, model_size
from .model_budget import Budget, activation_bytes, available_memory, count_tokens, matmul_rate, model_max_length

LARGE_MODEL_BYTES = 4 * 2**30


def _folder(model: str):
    from ..model.files import local_model_folder

    folder = local_model_folder(model)
    return folder if folder is not None and (folder / "config.json").is_file() else None


def read_size(folder: Path, trust_remote_code: bool = False) -> ModelSize:
    """The ``ModelSize`` of a model folder's ``config.json``, read with the hostile-folder checks; when the
    folder holds weights, their headers (every shard) must fit the config too."""
    from ..model.checks import check_bounds, check_config, check_files, read_json
    from ..model.files import weight_files

    check_files(folder)
    config = read_json(folder / "config.json")
    weights = weight_files(folder)
    if weights:
        check_config(folder, weights, trust_remote_code)
    elif isinstance(config, dict):
        check_bounds(config, folder / "config.json")
    return model_size(config)


def from_config_reason(config) -> str | None:
    """Why ``config``'s dry run estimates from ``config.json`` alone, or None to load the model and calibrate."""
    folder = _folder(config.model)
    if folder is None:
        return None
    from ..model.files import weight_files

    if not weight_files(folder):
        return "the folder holds no weights"
    size = read_size(folder, config.trust_remote_code)
    weights = size.parameters * _device_and_itemsize(config)[2]
    if weights > LARGE_MODEL_BYTES:
        from .summary import human_size

        return f"weights ~{human_size(weights)}, not loaded"
    return None


def stored_layout(config) -> tuple[list[int], list[str] | None] | None:
    """The layers and sentence poolings ``config``'s extraction will store, from its model's ``config.json``
    alone (nothing loaded): None where that file is not on this machine (a hub id not downloaded); poolings
    None for word inputs, whose probes read word poolings. A pooling the model has not (``cls`` on a decoder)
    is the ``InputError`` the extraction would give."""
    folder = _folder(config.model)
    if folder is None:
        return None
    from ..checks import is_word_input

    size = read_size(folder, config.trust_remote_code)
    return _layers(config, size), None if is_word_input(config) else _poolings(config, size)


def shard_input(config, corpus):
    """``corpus`` and the shard of ``--shards N --shard-index I``: that shard's rows, which its run extracts (the
    whole corpus and None without ``--shards``)."""
    from ..shards.sharding import ShardSpec, select_rows

    shard = ShardSpec.from_options(config.shards, config.shard_index)
    return (corpus, None) if shard is None else (select_rows(corpus, shard)[0], shard)


def free_disk(output: Path) -> tuple[Path, int]:
    """(the folder the output goes to, or the working folder if it does not exist yet; its free bytes)."""
    directory = output.parent if output.parent.exists() else Path(".")
    return directory, shutil.disk_usage(directory).free


def _device_and_itemsize(config):
    """(torch device, compute dtype, its bytes per value) of ``--device`` and ``--dtype``."""
    import torch

    from ..model.devices import resolve_device, resolve_dtype

    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    return device, dtype, torch.empty((), dtype=dtype).element_size()


def _poolings(config, size: ModelSize) -> list[str]:
    """``--pooling`` for this model: no ``cls`` on a decoder, ``pooler`` only on BERT-like models."""
    from ...selection import POOLINGS, parse_poolings
    from ..inputs.pairs import pair_poolings
    from ..inputs.templates import prompt_poolings, with_pool_at

    poolings = with_pool_at(
        config, parse_poolings(config.poolings, prompt_poolings(config, pair_poolings(config, POOLINGS)))
    )
    unfit = {"cls"} if size.decoder else set()
    if size.family not in ("bert", "roberta", "xlm-roberta"):
        unfit.add("pooler")
    named = [name for name in poolings if name in unfit]
    if named and config.poolings.strip().lower() != "all":
        raise InputError(
            f"pooling '{named[0]}' does not fit {config.model} ({size.family})",
            "choose from mean, max, last" + ("" if size.decoder else ", cls"),
        )
    return [name for name in poolings if name not in unfit]


def _corpus_tokens(config, folder: Path, corpus, max_length: int):
    """(tokens kept per row, before truncation, their source) of the corpus (pairs: both texts; prompts:
    each row rendered into its template, and its chat template when the folder has a tokenizer)."""
    from ..inputs.templates import PromptMaker, uses_prompts

    texts = corpus.texts
    if corpus.pair_texts is not None:
        texts = [f"{a} {b}" for a, b in zip(corpus.texts, corpus.pair_texts, strict=True)]
    if uses_prompts(config):
        tokenizer = None
        if config.chat_template:
            from ..model.loading import load_tokenizer

            tokenizer = load_tokenizer(str(folder), config.trust_remote_code)
        maker = PromptMaker(config, corpus, tokenizer, str(config.model))
        texts = [maker.render(row)[0] for row in range(len(corpus))]
    return count_tokens(folder, texts, max_length, config.long != "window", config.trust_remote_code)


def _hints(config, budget: Budget, device, max_length: int) -> str:
    """What would make a model that does not fit fit."""
    hints = []
    if budget.dtype == "float32":
        hints.append("--dtype bfloat16 halves the weights")
    if budget.activation_bytes > budget.needed_bytes // 8:
        tokens = max(budget.max_tokens // 4, 512)
        also = f" --max-length {tokens}" if tokens < max_length else ""
        hints.append(f"--max-tokens {tokens}{also} cuts one batch's activations")
    if device.type == "cuda" and not config.device_map:
        hints.append("--device-map auto spreads the layers over the GPUs and RAM (needs accelerate)")
    if device.type != "cuda":
        hints.append("a GPU with enough memory runs it faster")
    return "the model does not fit: " + "; ".join(hints)


def estimate_from_config(config, reason: str, calibrate: bool = True):
    """The ``Estimate`` of ``featx.extract(config)`` from ``config.json`` alone (no weights read); its
    ``budget`` holds the model's side, its ``seconds`` a lower bound from a timed matmul (``calibrate``)."""
    from ..inputs.word_corpus import read_input
    from ..model.checks import read_json
    from .summary import Estimate, current_rss, human_size

    folder = _folder(config.model)
    if folder is None:
        raise InputError(f"--model {config.model}: no config.json to estimate from", "give a local model folder")
    size = read_size(folder, config.trust_remote_code)
    corpus = shard_input(config, read_input(config))[0]  # a shard's rows with --shards
    device, dtype, itemsize = _device_and_itemsize(config)
    max_length = model_max_length(folder, read_json(folder / "config.json"), config.max_length)
    kept, full, source = _corpus_tokens(config, folder, corpus, max_length)
    layers, poolings = _layers(config, size), _poolings(config, size)
    pooled, token_bytes, other, block = _file_parts(config, corpus, kept, size, layers, poolings)
    budget = _budget(config, reason, size, device, dtype, itemsize, layers, kept, max_length, source)
    host = current_rss() + 4 * block + (0 if device.type == "cuda" else budget.needed_bytes)
    if device.type != "cuda":  # on the CPU the whole process must fit in RAM
        budget.needed_bytes = host
    directory, free = free_disk(Path(_output(config)))
    result = Estimate(
        corpus=str(config.corpus),
        output=str(_output(config)),
        model=str(config.model),
        device=str(device),
        rows=len(corpus),
        tokens=int(kept.sum()),
        truncated_rows=int((full > kept).sum()),
        max_length=max_length,
        layers=layers,
        poolings=poolings,
        hidden_size=size.hidden,
        store_dtype=config.store_dtype,
        with_tokens=config.tokens,
        pooled_bytes=pooled,
        token_bytes=token_bytes,
        other_bytes=other,
        peak_memory_bytes=host,
        free_disk_bytes=free,
        peak_device_bytes=budget.needed_bytes if device.type == "cuda" else None,
        windowed_rows=int((full > max_length).sum()) if config.long == "window" else 0,
        budget=budget,
    )
    if budget.fits is False:
        result.warnings.append(_hints(config, budget, device, max_length))
    if result.file_bytes > free:
        result.warnings.append(
            f"the output needs ~{human_size(result.file_bytes)} but {directory} has only {human_size(free)} free"
        )
    if config.contrast:
        result.warnings.append("--contrast runs each row once per answer: time and features scale with the answers")
    if set(config.sites.split(",")) - {"hidden"}:
        result.warnings.append("--site beyond hidden is not counted in an estimate from config.json alone")
    if calibrate and len(corpus):
        _time(result, size, device, dtype, kept)
    return result


def _output(config) -> Path:
    from ..checks import output_path

    return output_path(config)


def _layers(config, size: ModelSize) -> list[int]:
    from ...selection import select_layers

    return select_layers(config.layers, size.layers + 1)


def _file_parts(config, corpus, kept, size: ModelSize, layers, poolings) -> tuple[int, int, int, int]:
    """(pooled, token-level, other) bytes of the features file, and one commit block's outputs."""
    from ..run.resolve import block_rows
    from .summary import file_sizes

    store = np.dtype(config.store_dtype).itemsize
    texts = sum(len(text.encode("utf-8")) for text in corpus.texts)
    ids = sum(len(str(row_id).encode("utf-8")) for row_id in corpus.ids)
    parts = file_sizes(
        len(corpus),
        int(kept.sum()),
        len(layers),
        size.hidden,
        len(poolings),
        store,
        config.tokens,
        texts,
        ids,
        len(corpus.labels),
        corpus.split is not None,
    )
    row_bytes = len(layers) * size.hidden * store * len(poolings)
    return (*parts, block_rows(config, row_bytes) * row_bytes)


def _budget(config, reason, size, device, dtype, itemsize, layers, kept, max_length, source) -> Budget:
    """The model's side: weights (all blocks; through the deepest layer), one batch, the device's room."""
    from ..model.devices import dtype_name
    from ..model.loading import device_placement
    from ..plan import CPU_MAX_TOKENS, DEFAULT_MAX_TOKENS

    max_tokens = max(int(config.max_tokens or DEFAULT_MAX_TOKENS.get(device.type, CPU_MAX_TOKENS)), max_length)
    longest = int(min(kept.max() if len(kept) else 1, max_length))
    blocks = max(layers) if layers else size.layers
    weights = size.parameters * itemsize
    activations = activation_bytes(size, max_tokens, longest, len(layers), itemsize)
    device_placement(config.device_map, config.device)  # accelerate and a GPU, as the real run checks
    available, what = available_memory(device, config.device_map)
    return Budget(
        reason=reason,
        size=size,
        dtype=dtype_name(dtype),
        blocks=blocks,
        weights_bytes=weights,
        needed_weights_bytes=size.parameters_through(blocks) * itemsize,
        activation_bytes=activations,
        max_tokens=max_tokens,
        needed_bytes=weights + activations,
        available_bytes=available,
        available=what,
        token_source=source,
    )


def _time(result, size: ModelSize, device, dtype, kept) -> None:
    """A lower bound on the forward passes' time: their FLOPs at a matmul rate measured on the device."""
    rate = matmul_rate(device, dtype, size)
    flops = float(kept.sum()) * size.flops_per_token(size.layers, float(kept.mean()))
    result.seconds = flops / rate
    result.budget.matmul_rate = rate
    result.calibration = (
        f"a lower bound: {flops:.3g} FLOP of forward passes at the {rate:.3g} FLOP/s a "
        f"{result.budget.dtype} matmul of the MLP's shape reaches on {device}; attention kernels, norms, padding, "
        "loading the weights and writing add to it"
    )

"""The model's side of a dry run from ``config.json`` alone (``config_estimate``): weights, one batch's
activations, the memory the device has free, a matmul rate measured on it, and the corpus's token count.

Tokens are counted with the model folder's tokenizer when it has one, else estimated from characters
(``CHARS_PER_TOKEN``). Nothing here reads a weight.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model.size import LLAMA_LIKE, ModelSize, model_size, row_limit

CHARS_PER_TOKEN = 4.0  # English text in the vocabularies of current LLMs: about 4 characters per token
MATMUL_SECONDS = 0.25


@dataclass
class Budget:
    """What a model costs before any weight is read; sizes in bytes (see ``Estimate.budget``)."""

    reason: str
    size: ModelSize
    dtype: str
    blocks: int  # blocks the deepest layer asked for needs (of size.layers)
    weights_bytes: int  # every block, as featx loads the network today
    needed_weights_bytes: int  # the blocks through the deepest layer asked for
    activation_bytes: int
    max_tokens: int
    needed_bytes: int  # the peak on the compute device
    available_bytes: int | None
    available: str  # what was measured: "free GPU memory on cuda:0", "available RAM"
    token_source: str
    matmul_rate: float | None = None  # FLOP/s measured on the device at the MLP's shape

    @property
    def fits(self) -> bool | None:
        return None if self.available_bytes is None else self.needed_bytes <= self.available_bytes

    def lines(self) -> list[str]:
        """The model-size part of the dry run's summary."""
        from .summary import human_size as size

        s = self.size
        kind = "exact for this family" if s.exact else "approximate: norms and biases left out"
        heads = f"{s.heads}/{s.kv_heads} heads (grouped-query)" if s.kv_heads != s.heads else f"{s.heads} heads"
        lines = [
            f"from config.json alone ({self.reason}): {s.family}, {s.parameters:,} parameters ({kind}), "
            f"{s.layers} blocks, hidden {s.hidden}, MLP {s.intermediate}, {heads}, vocabulary {s.vocab:,}",
            f"weights in {self.dtype} ~{size(self.weights_bytes)}"
            + (
                f" (the checkpoint's LM head, {s.lm_head_parameters:,} more, is not loaded)"
                if s.lm_head_parameters
                else ""
            )
            + f"; one batch of {self.max_tokens:,} tokens ~{size(self.activation_bytes)} of activations; "
            + f"tokens {self.token_source}",
        ]
        lines += truncation_notes(s, self.blocks, self.weights_bytes // max(1, s.parameters))
        if self.available_bytes is None:
            lines.append(f"needs ~{size(self.needed_bytes)}; {self.available} unknown")
        elif self.needed_bytes <= self.available_bytes:
            lines.append(f"fits: needs ~{size(self.needed_bytes)} of {size(self.available_bytes)} {self.available}")
        else:
            lines.append(
                f"does NOT fit: needs ~{size(self.needed_bytes)}, {size(self.available_bytes)} {self.available}"
            )
        return lines


def available_memory(device, device_map: str | None) -> tuple[int | None, str]:
    """(bytes free for the model, what they are) on ``device``: free GPU memory (with ``--device-map``: of
    every GPU, plus the available RAM accelerate spills onto), else the RAM available (``MemAvailable``)."""
    import torch

    ram = _available_ram()
    if device.type != "cuda":
        return ram, "available RAM"
    gpus = range(torch.cuda.device_count()) if device_map else [device.index or 0]
    free = sum(int(torch.cuda.mem_get_info(index)[0]) for index in gpus)
    if device_map:
        return free + (ram or 0), f"free on {len(gpus)} GPU(s) and in RAM (--device-map)"
    return free, f"free GPU memory on {device}"


def _available_ram() -> int | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def activation_bytes(size: ModelSize, max_tokens: int, longest: int, n_stored: int, itemsize: int) -> int:
    """One batch's forward: every hidden state (``output_hidden_states``) and the stacked copy of the stored
    layers, then one block's transients: query/key/value, the MLP's intermediates (gated: gate, up and
    their product) and the attention scores with their softmax, at the compute dtype."""
    states = max_tokens * size.hidden * (size.layers + 1 + n_stored + 2)
    qkv = max_tokens * (size.heads + 2 * size.kv_heads) * size.head_dim
    mlp = max_tokens * size.intermediate * (3 if size.family in LLAMA_LIKE else 2)  # gated: gate, up, product
    scores = (max_tokens // max(1, longest)) * size.heads * longest * longest * 2
    return int((states + qkv + mlp + scores) * itemsize)


def matmul_rate(device, dtype, size: ModelSize) -> float:
    """FLOP/s of ``torch.matmul`` at the model's MLP shape (rows x hidden x intermediate) on ``device``.

    Bounded in time whatever the device: on a CPU the rows double from 1 up to 128 while the next product
    is expected to take at most ``4 * MATMUL_SECONDS``, so a CPU without instructions for ``dtype``
    (bfloat16 on an AVX2-only CPU: one 128-row product at an 8B model's MLP shape takes minutes) costs
    seconds, not minutes; the rate is that of the largest product timed, at its fastest time (the time is a lower
    bound): on CPU cores shared with other jobs some products stall for milliseconds (a thread of the pool
    descheduled; 128 x 32 x 64 products on 2 busy cores: median 17 us, mean 477 us), and a mean of them let a few
    stalls lower the rate and raise the "lower bound".
    """
    import torch

    top = 4096 if device.type == "cuda" else 128
    a = torch.randn(top, size.hidden, device=device, dtype=dtype)
    b = torch.randn(size.hidden, size.intermediate, device=device, dtype=dtype)

    def timed(rows: int) -> float:
        began = time.perf_counter()
        torch.matmul(a[:rows], b)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - began

    rows = top if device.type == "cuda" else 1
    timed(rows)  # warm-up: kernel choice, first allocations
    seconds = timed(rows)
    while rows < top and 2 * seconds <= 4 * MATMUL_SECONDS:  # the next shape's product fits the budget
        rows *= 2
        seconds = timed(rows)
    times = [seconds]
    while len(times) < 2 or sum(times) < MATMUL_SECONDS:
        times.append(timed(rows))
    return 2.0 * rows * size.hidden * size.intermediate / min(times)


def count_tokens(folder: Path, texts: list[str], max_length: int, truncate: bool, trust_remote_code: bool):
    """(tokens per row kept, before truncation, where they came from): the folder's tokenizer when it has
    one, else ``CHARS_PER_TOKEN`` characters per token plus two special tokens."""
    from ...errors import ModelError
    from ..model.checks import check_tokenizer_files

    try:
        check_tokenizer_files(folder)
    except ModelError:
        full = np.array([int(np.ceil(len(text) / CHARS_PER_TOKEN)) + 2 for text in texts], dtype=np.int64)
        kept = np.minimum(full, max_length) if truncate else full
        return kept, full, f"estimated from characters (~{CHARS_PER_TOKEN:.0f} per token: no tokenizer in the folder)"
    from ..model.loading import load_tokenizer
    from ..tokens.tokenize import tokenize_texts

    tokenized = tokenize_texts(load_tokenizer(str(folder), trust_remote_code), texts, max_length, truncate=truncate)
    return tokenized.lengths.astype(np.int64), tokenized.full_lengths.astype(np.int64), "counted by its tokenizer"


def model_max_length(folder: Path, size_config: dict, asked: int | None) -> int:
    """``--max-length``, checked against the model's positions (and the tokenizer's limit); else that maximum."""
    from ..model.checks import read_json

    limit = None
    if (folder / "tokenizer_config.json").is_file():
        tokenizer_config = read_json(folder / "tokenizer_config.json")
        limit = tokenizer_config.get("model_max_length") if isinstance(tokenizer_config, dict) else None
    return row_limit(size_config, limit, asked)


def truncation_notes(size: ModelSize, blocks: int, itemsize: int) -> list[str]:
    """A line on what a forward truncated after ``blocks`` blocks would save, when it would save anything."""
    from .summary import human_size

    if blocks >= size.layers:
        return []
    return [
        f"the layers asked for need {blocks} of {size.layers} blocks: a forward truncated there would hold "
        f"~{human_size(size.parameters_through(blocks) * itemsize)} of weights instead of "
        f"~{human_size(size.parameters * itemsize)}"
    ]


def loaded_truncation_notes(loaded, layers: list[int]) -> list[str]:
    """``truncation_notes`` of a loaded model, from its folder's config.json (none where ``model_size`` cannot
    read it)."""
    import torch

    from ...errors import FeatxError
    from ..model.checks import read_json

    try:
        size = model_size(read_json(Path(loaded.path) / "config.json"))
    except FeatxError:
        return []
    itemsize = torch.empty((), dtype=loaded.dtype).element_size()
    return truncation_notes(size, max(layers) if layers else size.layers, itemsize)

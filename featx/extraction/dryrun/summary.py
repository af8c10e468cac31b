"""What a dry run reports (``Estimate``) and the sizes both estimates share: a features file's bytes for a
shape (``file_sizes``), this process's memory, sizes and durations for people.

``estimation`` fills an ``Estimate`` from the loaded model and a short calibration, ``config_estimate`` from
``config.json`` alone (a model too large to load for an estimate).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

STRING_OVERHEAD = 16  # bytes per stored string beyond its UTF-8 text (HDF5 variable-length heap entry)
FILE_OVERHEAD = 64 << 10  # HDF5 metadata, attributes, B-trees of a features file


@dataclass
class Estimate:
    """The expected cost of one extraction (sizes in bytes, time in seconds, None when not estimated)."""

    corpus: str
    output: str
    model: str
    device: str
    rows: int
    tokens: int
    truncated_rows: int
    max_length: int
    layers: list[int]
    poolings: list[str]
    hidden_size: int
    store_dtype: str
    with_tokens: bool
    pooled_bytes: int
    token_bytes: int
    other_bytes: int
    peak_memory_bytes: int
    free_disk_bytes: int
    peak_device_bytes: int | None = None  # accelerator memory (model + one batch), None on CPU
    seconds: float | None = None
    calibration: str = ""
    warnings: list[str] = field(default_factory=list)
    windowed_rows: int = 0  # --long window: rows longer than max_length, run as overlapping windows
    windows: int = 0  # ... and the windows they run as, in window_passes forward passes (as the run plans them)
    window_passes: int = 0
    notes: list[str] = field(default_factory=list)  # said after the figures, before the warnings
    budget: Any = None  # a ``model_budget.Budget`` when estimated from config.json alone (a large model)

    @property
    def file_bytes(self) -> int:
        return self.pooled_bytes + self.token_bytes + self.other_bytes

    def as_dict(self) -> dict:
        """The estimate as a dict, with the total ``file_bytes``."""
        return {**asdict(self), "file_bytes": self.file_bytes}

    def format(self) -> str:
        """The report ``featx extract --dry-run`` prints."""
        lines = [
            f"dry run: {self.corpus} -> {self.output} (nothing written)",
            f"model {self.model} on {self.device}: {len(self.layers)} layer{'s' * (len(self.layers) != 1)} x "
            f"{self.hidden_size} dims, "
            f"poolings {', '.join(self.poolings)}, stored as {self.store_dtype}"
            + (", with token-level states" if self.with_tokens else ""),
            f"rows {self.rows:,}, tokens {self.tokens:,} (max length {self.max_length}, "
            f"{self.truncated_rows:,} rows truncated"
            + (f", {self.windowed_rows:,} run in overlapping windows" if self.windowed_rows else "")
            + (f": {self.windows:,} windows in {self.window_passes:,} forward passes" if self.windows else "")
            + ")",
            f"output size ~{human_size(self.file_bytes)} (pooled {human_size(self.pooled_bytes)}"
            + (f", token-level {human_size(self.token_bytes)}" if self.with_tokens else "")
            + f", texts/ids/labels {human_size(self.other_bytes)}); free disk {human_size(self.free_disk_bytes)}",
            f"peak memory ~{human_size(self.peak_memory_bytes)} (process with model and tokens, "
            + ("write buffers" if self.peak_device_bytes is not None else "one batch's activations, write buffers")
            + ")"
            + (
                f"; {self.device} memory ~{human_size(self.peak_device_bytes)} (model + one batch)"
                if self.peak_device_bytes is not None
                else ""
            ),
        ]
        if self.budget is not None:
            lines[2:2] = self.budget.lines()
        if self.seconds is not None:
            lines.append(f"expected time ~{human_duration(self.seconds)} ({self.calibration})")
        lines += self.notes + [f"warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)


def human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def human_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def file_sizes(
    n_rows: int,
    n_tokens: int,
    n_layers: int,
    hidden: int,
    n_poolings: int,
    itemsize: int,
    with_tokens: bool,
    text_bytes: int,
    id_bytes: int,
    n_labels: int,
    has_split: bool,
) -> tuple[int, int, int]:
    """(pooled, token-level, everything else) bytes of a features file; mirrors ``store.FeatureWriter.create``.

    Features are preallocated in whole chunks (one layer of a block of rows), so the row count is
    rounded up to a multiple of the chunk's rows.
    """
    from ...store import allocated_rows

    def allocated(n: int) -> int:
        return allocated_rows(n, hidden, itemsize)

    pooled = allocated(n_rows) * n_layers * hidden * itemsize * n_poolings
    tokens = 0
    if with_tokens:  # states + input_ids + word_ids + offsets
        tokens = allocated(n_tokens) * n_layers * hidden * itemsize + n_tokens * 8 + (n_rows + 1) * 8
    strings = text_bytes + id_bytes + (2 + int(has_split)) * n_rows * STRING_OVERHEAD
    other = strings + n_rows * (4 + 4 + 1 + 4 * n_labels) + FILE_OVERHEAD
    return int(pooled), int(tokens), int(other)


def current_rss() -> int:
    """Resident memory of this process now (interpreter, torch, the loaded model, corpus and tokens)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)

"""``ExtractConfig`` (every option of ``featx extract``) and ``ExtractSummary`` (what a run did).

Kept free of torch, so that the CLI and the quick up-to-date check (``freshness.py``) can use them
without paying for the torch import.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from .model_files import DEFAULT_MODEL


@dataclass
class ExtractConfig:
    """Every option of an extraction; the CLI builds one of these from its flags."""

    corpus: str | Path
    output: str | Path | None = None
    model: str = DEFAULT_MODEL
    text_col: str = "text"
    id_col: str | None = None
    layers: str = "all"
    poolings: str = "all"
    tokens: bool = False
    sites: str = "hidden"  # also record attn_out, ffn, pre_ln, attn_heads, module:NAME (featx/sites.py)
    max_length: int | None = None
    device: str = "auto"
    dtype: str = "auto"
    store_dtype: str = "float16"
    max_tokens: int | None = None  # padded tokens per batch; default depends on the device
    batch_size: int = 256
    skip_empty: bool = False
    encoding: str = "utf-8"
    overwrite: bool = False
    trust_remote_code: bool = False
    random_init: bool = False
    seed: int = 0
    commit_rows: int | None = None  # rows per commit window; default sized by memory
    progress: bool = True
    shards: int | None = None  # extract only shard ``shard_index`` of ``shards`` (featx/sharding.py)
    shard_index: int | None = None


@dataclass
class ExtractSummary:
    output: Path
    status: str  # "written", "resumed" or "up-to-date"
    rows: int
    tokens: int
    truncated_rows: int
    skipped_empty: int
    seconds: float
    file_bytes: int
    model: str
    device: str
    dtype: str
    layers: list[int] = field(default_factory=list)
    poolings: list[str] = field(default_factory=list)
    resumed_from: int = 0
    notes: list[str] = field(default_factory=list)  # extra lines for the user (e.g. the merge of shards)
    # Where the time went (0 for an up-to-date file): model load, tokenisation, and the batch loop
    # (forward, pooling, copies; writing overlaps it). ``tokens / forward_seconds`` is the steady-state rate.
    load_seconds: float = 0.0
    tokenize_seconds: float = 0.0
    forward_seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    def line(self) -> str:
        size = f"{self.file_bytes / 1e6:.1f} MB"
        parts = [
            f"{self.rows} rows", f"{self.tokens} tokens", f"{self.truncated_rows} truncated",
        ]
        if self.skipped_empty:
            parts.append(f"{self.skipped_empty} empty skipped")
        if self.status == "up-to-date":
            return f"up to date: {self.output} ({', '.join(parts)}, {size}); use --overwrite to recompute"
        parts += [f"{self.seconds:.1f} s", f"{self.tokens_per_second:,.0f} tokens/s", size]
        resumed = f" (resumed at row {self.resumed_from})" if self.status == "resumed" else ""
        return f"wrote {self.output}{resumed}: " + ", ".join(parts)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["output"] = str(self.output)
        data["tokens_per_second"] = self.tokens_per_second
        return data


def output_path(config: ExtractConfig) -> Path:
    """``--output``, or ``<corpus stem>[.random-init].features.h5`` beside the corpus."""
    if config.output:
        return Path(config.output)
    corpus = Path(config.corpus)
    tag = ".random-init" if config.random_init else ""
    return corpus.with_name(f"{corpus.stem}{tag}.features.h5")


def make_config(config: ExtractConfig | str | Path | None = None, **options) -> ExtractConfig:
    """An ``ExtractConfig`` from a corpus path and options, or a config with some options replaced."""
    if isinstance(config, (str, Path)):
        return ExtractConfig(corpus=config, **options)
    if config is None:
        return ExtractConfig(**options)
    return ExtractConfig(**{**asdict(config), **options}) if options else config


def summary_of(path: Path, status: str, seconds: float, skipped: int) -> ExtractSummary:
    """The summary of a finished features file."""
    from .store import FeatureFile

    with FeatureFile(path) as features:
        attrs = features.attrs
        return ExtractSummary(
            output=path, status=status, rows=features.n_rows, tokens=int(features.n_kept.sum()),
            truncated_rows=int(features.truncated.sum()), skipped_empty=skipped, seconds=seconds,
            file_bytes=path.stat().st_size, model=str(attrs.get("model")), device=str(attrs.get("device")),
            dtype=str(attrs.get("compute_dtype")), layers=features.layers, poolings=features.poolings,
        )

"""``ExtractSummary``: what an extraction did, read back from the features file it wrote (``summary_of``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import store
from ..store import FeatureFile


@dataclass
class ExtractSummary:
    """What an extraction did: its output, ``status`` (written, resumed or up-to-date), rows, tokens, truncated
    and windowed rows, timings, the file's size, and notes; ``line()`` is the summary ``featx extract`` prints."""

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
    windowed_rows: int = 0  # rows longer than the model's maximum, run in overlapping windows (--long window)
    words: int = 0  # word inputs (CoNLL-U...): the words stored, one vector per word pooling and layer
    resumed_inside: int = 0  # rows an earlier run committed inside the window after ``resumed_from`` (by time)
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
        """The one-line summary ``featx extract`` prints."""
        size = f"{self.file_bytes / 1e6:.1f} MB"
        parts = [
            f"{self.rows} rows",
            f"{self.tokens} tokens",
            f"{self.truncated_rows} truncated",
        ]
        if self.words:
            parts.insert(1, f"{self.words} words")
        if self.windowed_rows:
            parts.append(f"{self.windowed_rows} windowed")
        if self.skipped_empty:
            parts.append(f"{self.skipped_empty} empty skipped")
        if self.status == "up-to-date":
            return f"up to date: {self.output} ({', '.join(parts)}, {size}); use --overwrite to recompute"
        parts += [f"{self.seconds:.1f} s", f"{self.tokens_per_second:,.0f} tokens/s", size]
        inside = (
            f", plus {self.resumed_inside} rows committed inside the next commit block" if self.resumed_inside else ""
        )
        resumed = f" (resumed at row {self.resumed_from}{inside})" if self.status == "resumed" else ""
        return f"wrote {self.output}{resumed}: " + ", ".join(parts)

    def as_dict(self) -> dict:
        """The summary as a JSON-ready dict."""
        data = asdict(self)
        data["output"] = str(self.output)
        data["tokens_per_second"] = self.tokens_per_second
        return data


def forward_tokens(features: FeatureFile) -> int:
    """The tokens every forward pass of the file's rows took: both sides of a separate-mode pair, every answer's
    prompt of ``--contrast`` (a file written before featx stored the other answers' counts: answer 0's only), the
    overlapping windows of a ``--long window`` row (a file written before featx recorded ``window_budget``: its
    stored tokens)."""
    return int(_row_tokens(features).sum() + features.pair_n_kept.sum() + features.contrast_n_kept.sum())


def _row_tokens(features: FeatureFile):
    from .tokens.long_windows import window_tokens

    attrs, kept = features.attrs, features.n_kept
    if str(attrs.get(store.schema.LONG_INPUTS, "truncate")) != "window":
        return kept
    try:
        max_length, budget = int(attrs[store.schema.MAX_LENGTH]), int(attrs[store.schema.WINDOW_BUDGET])
        stride = int(attrs[store.schema.STRIDE])
    except (KeyError, TypeError, ValueError):
        return kept
    return window_tokens(kept, max_length, budget, stride) if 0 <= stride < budget <= max_length else kept


def summary_of(path: Path, status: str, seconds: float, skipped: int) -> ExtractSummary:
    """The summary of a finished features file."""
    with FeatureFile(path) as features:
        attrs = features.attrs
        windowed = 0
        if str(attrs.get(store.schema.LONG_INPUTS, "truncate")) == "window":
            windowed = int((features.n_kept > int(attrs[store.schema.MAX_LENGTH])).sum())
        summary = ExtractSummary(
            output=path,
            status=status,
            rows=features.n_rows,
            tokens=forward_tokens(features),
            truncated_rows=int((features.truncated | features.pair_truncated).sum()),
            skipped_empty=skipped,
            seconds=seconds,
            file_bytes=path.stat().st_size,
            model=str(attrs.get(store.schema.MODEL)),
            device=str(attrs.get(store.schema.DEVICE)),
            dtype=str(attrs.get(store.schema.COMPUTE_DTYPE)),
            layers=features.layers,
            poolings=features.poolings,
            windowed_rows=windowed,
            words=int(features.word_offsets()[-1]) if features.has_words else 0,
        )
        if str(attrs.get(store.schema.MODEL_PART, "model")) == "encoder":
            summary.notes.append(
                f"{summary.model} is an encoder-decoder model: these are its encoder's states (the decoder was not run)"
            )
        blocks, top = attrs.get(store.schema.BLOCKS_RUN), int(attrs.get(store.schema.N_MODEL_LAYERS, 0)) - 1
        if blocks is not None and int(blocks) < top:
            summary.notes.append(
                f"ran {int(blocks)} of the model's {top} blocks: no stored layer is above layer {int(blocks)}"
            )
        if bool(attrs.get(store.schema.CAUSAL, False)):
            summary.notes.append(
                f"{summary.model} is causal (decoder-only): no cls pooling, its first token sees "
                "only itself; last is the last real token"
            )
        return summary

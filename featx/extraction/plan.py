"""``ExtractionPlan``: everything an extraction will do, resolved once from an ``ExtractConfig``, the
corpus and the loaded model (``run/resolve.py`` resolves it; this module holds the data only). The
runner, the batch loop, the writer, the dry-run estimate and the merge read it; none of them re-derives
a default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import store
from ..store import SiteLayout
from .config import ExtractConfig
from .forward.sites import Site
from .forward.truncation import Cut
from .shards.sharding import ShardSpec

COMMIT_BLOCK_BYTES = 256 << 20  # host memory for one commit block of outputs (rows written and committed together)
MIN_BLOCK_ROWS, MAX_BLOCK_ROWS = 64, 8192
DEFAULT_MAX_TOKENS = {"cuda": 65536}  # padded tokens per batch by device type; others: CPU_MAX_TOKENS
# CPU: 1,024 padded tokens a batch keeps a block's activations (1,024 x 3,072 floats of a base model's MLP, 12 MB)
# in the last-level cache; 8,192 spilled them. bench/ab.py, 27 Nov 2026 (BENCHMARKS.md): bert-base 1.34-1.70x,
# MiniLM 1.16-1.17x the batch loop of 8,192, and within 4% of the best size tried (512 to 8,192) on each corpus.
CPU_MAX_TOKENS = 1024
# Most rows (with --long window: windows) per batch by device type; others: 256. On a GPU the 65,536 tokens should
# bind: 256 rows of short texts starved it. bench/gpu_host.py, H100, 27 Nov 2026 (BENCHMARKS.md), 20,000 SST-2
# rows, bf16: 16,384 rows ran the batch loop 2.3x (MiniLM) and 1.6x (bert-base-sized) faster than 256, and faster
# than 4,096.
DEFAULT_BATCH_SIZE = {"cuda": 16384}
CPU_BATCH_SIZE = 256


@dataclass(frozen=True)
class WindowSpec:
    """``--long window``: specials around ``budget`` content tokens per window, ``stride`` shared."""

    n_lead: int
    n_trail: int
    budget: int
    stride: int


@dataclass(frozen=True)
class ExtractionPlan:
    """One extraction, fully resolved. ``sites`` holds every stored site, ``hidden`` first."""

    config: ExtractConfig
    output: Path  # the file this process writes (a shard's file in a sharded run)
    store_dtype: str
    sites: tuple[SiteLayout, ...]
    hooked: tuple[Site, ...]  # the sites besides hidden, with the model modules their hooks read
    max_tokens: int
    batch_size: int
    block_rows: int
    block_tokens: float | None  # token budget of a commit block when token-level states are stored
    commit_seconds: float  # most seconds of work between commits (inside a commit block, on batch boundaries)
    fingerprint: str  # this file's: resuming or reusing requires an exact match
    base_fingerprint: str  # the whole run's (equal to ``fingerprint`` unless sharded)
    shard: ShardSpec | None = None
    merged_output: Path | None = None  # the merged file of a sharded run
    pad_id: int = 0  # id in the padding positions (masked: it never changes a real token's features)
    pad_source: str = "tokenizer"  # where pad_id came from: tokenizer, eos or reserved
    max_length: int = 512  # tokens one forward pass takes per row (the model's maximum or --max-length)
    long_inputs: str = "truncate"  # or "window": longer rows run as overlapping windows (long_windows.py)
    window: WindowSpec | None = None  # the windows' shape, with --long window
    word_poolings: tuple[str, ...] = ()  # word inputs: the word vectors stored (first, last, mean subword)
    # The truncated forward (truncation.py): stop after the highest stored layer's block; None runs the whole model.
    # Not in the fingerprint: the features are the same either way.
    cut: Cut | None = None
    blocks_run: int = 0  # transformer blocks each forward pass runs (all of them without a cut)
    # --intervene: the edits inside the forward pass (edits/sources.py EditMap) and where the model's blocks are
    edits: tuple = ()
    edit_path: str | None = None

    @property
    def hidden(self) -> SiteLayout:
        return self.sites[0]

    @property
    def layers(self) -> list[int]:
        return list(self.hidden.layers)

    @property
    def poolings(self) -> list[str]:
        return list(self.hidden.poolings)

    @property
    def word_paths(self) -> list[str]:
        """The word-vector datasets of word inputs, in ``word_poolings`` order (none otherwise)."""
        return [store.schema.word_pooled_path(name) for name in self.word_poolings]

    def word_bytes(self) -> int:
        """Stored bytes of one word's vectors, every word pooling."""
        return len(self.word_poolings) * len(self.hidden.layers) * self.hidden.width * self.itemsize

    @property
    def with_tokens(self) -> bool:
        return bool(self.config.tokens)

    @property
    def itemsize(self) -> int:
        return np.dtype(self.store_dtype).itemsize

    def row_bytes(self) -> int:
        """Stored bytes of one row's pooled features, every site."""
        return sum(site.row_bytes(self.itemsize) for site in self.sites)

    def block_bytes(self, n_rows: int) -> int:
        """Host memory of one commit block of outputs on a corpus of ``n_rows`` (token states: their own budget)."""
        return min(n_rows, self.block_rows) * self.row_bytes() + (COMMIT_BLOCK_BYTES if self.with_tokens else 0)

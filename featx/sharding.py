"""Deprecated: moved to ``featx.extraction.sharding`` (shards), ``featx.extraction.distributed`` (torchrun)
and ``featx.store`` (the shard row index and attributes)."""

import warnings

from .extraction.distributed import DEFAULT_WAIT, LaunchEnv, extract_distributed, wait_timeout  # noqa: F401
from .extraction.sharding import *  # noqa: F401,F403
from .extraction.sharding import ASSIGNMENT, MANIFEST_FORMAT, ShardSpec, assign_rows, select_rows  # noqa: F401
from .store.schema import ROW_INDEX, SHARD_ATTRS  # noqa: F401

warnings.warn("featx.sharding moved to featx.extraction.sharding and featx.extraction.distributed; the old "
              "import path goes away in the next release", DeprecationWarning, stacklevel=2)

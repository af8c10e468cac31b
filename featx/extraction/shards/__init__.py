"""Sharded extraction: rows split over processes or machines, then merged in corpus order.

``sharding``       row assignment, shard files, the manifest
``distributed``    extraction under torchrun (each rank its shard, rank 0 merges)
``merge``          ``featx merge``: shards checked against their manifest and merged
"""

from ...lazy import lazy_exports

__all__ = ["distributed", "merge", "sharding"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

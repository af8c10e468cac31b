"""Sharded extraction: rows split over processes or machines, then merged in corpus order.

``sharding``       row assignment, shard files, the manifest
``distributed``    extraction under torchrun (each rank its shard, rank 0 merges)
``merge``          ``featx merge``: shards checked against their manifest and merged
"""

__all__ = ["distributed", "merge", "sharding"]

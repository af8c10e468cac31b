"""Every matrix a probing run will read, checked for inf and NaN before its first fit.

The jobs of a run read their layers one at a time, in workers, so a bad layer (a float16 overflow, a damaged
file) would be found only after the probes of the layers before it had been fitted: seconds on a toy file,
minutes on a big run. So every command that fits (``featx probe`` of each kind, ``--sweep``, ``erase``,
``neurons``, ``fit``) names the matrices its jobs will read, and ``FeatureFile.require_finite`` checks them all,
a bounded block at a time, with the error the read itself would raise; then the work starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..store import FeatureFile, FeatureRead
from .inputs import TOKENS_POOLING, FeatureJob
from .tasks.pairs import block_reads


def job_reads(features: FeatureFile, job: FeatureJob) -> list[FeatureRead]:
    """What ``load_job_features`` reads for ``job``: its layers' token states, or their pooled blocks."""
    if job.pooling == TOKENS_POOLING:
        return [FeatureRead("tokens", layer, site=job.site) for layer in job.spec.layers]
    return [read for layer in job.spec.layers for read in block_reads(features, job.pooling, layer, job.site)]


def require_finite_jobs(jobs: Iterable[Any], allow_partial: bool) -> None:
    """Refuse a file holding inf or NaN in anything the ``FeatureJob``s among ``jobs`` (the first item of each
    job's arguments, or the job itself) will read, before any of them runs; each file opened once."""
    by_path: dict[str, list[FeatureJob]] = {}
    for job in jobs:
        job = job[0] if isinstance(job, tuple) and job else job
        if isinstance(job, FeatureJob):
            by_path.setdefault(job.path, []).append(job)
    for path, its in by_path.items():
        with FeatureFile(path, allow_partial=allow_partial) as features:
            features.require_finite(read for job in its for read in job_reads(features, job))


def require_finite_words(reads: dict[Any, list[tuple[str, int]]], allow_partial: bool) -> None:
    """The same for word vectors: ``reads`` maps a features file's path to its (word pooling, layer) pairs; an
    in-memory source (the tests' planted objects) is left to its own reads."""
    for path, pairs in reads.items():
        if isinstance(path, str):
            with FeatureFile(path, allow_partial=allow_partial) as features:
                features.require_finite(FeatureRead("words", layer, pooling) for pooling, layer in pairs)


def require_finite_blocks(path: Any, blocks: Iterable[tuple[str, int]], as_probed: bool = True) -> None:
    """The same for the (pooling, layer) ``blocks`` of the hidden states of a complete file: as the probes read
    them (``pooled_block``: a separate-mode pair's two sides, a contrast's two answers), or with ``as_probed``
    false the stored features alone (``erase``, ``neurons``)."""
    with FeatureFile(path) as features:
        plain = (FeatureRead("pooled", layer, pooling) for pooling, layer in blocks)
        found = (read for pooling, layer in blocks for read in block_reads(features, pooling, layer))
        features.require_finite(found if as_probed else plain)

"""Running an extraction: the plan resolved, the entry point, the batch loop and its threads.

``resolve``        ``resolve_plan``: an ``ExtractionPlan`` from a config, the corpus and the model; the fingerprint
``orchestrate``    ``extract``: single process, one shard, or a torchrun rank
``loop``           the batch loop: commit blocks, batches, results scattered into the block
``threads``        the background writer and the batch prefetch
``freshness``      is a features file already what this request would write (no torch)
"""

from ...lazy import lazy_exports

__all__ = ["freshness", "loop", "orchestrate", "resolve", "threads"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

"""The forward passes of ``featx intervene``: the file's model loaded once (transformers' modules, whose blocks the
edits hook), checked to be the model the file was extracted with, then run over the file's own rows in memory
(``featx.extraction.encode``: the plan, tokenisation and batch loop of ``featx extract``) with or without edits."""

from __future__ import annotations

from ..errors import ModelError
from ..store import open_features
from .plan import InterventionPlan
from .provenance import embed_options


class Forward:
    """The loaded model and the in-memory extraction of the file's rows; ``run(maps)`` edits with ``maps``."""

    def __init__(self, plan: InterventionPlan):
        from ..extraction import as_texts, edit_block_path, embed_config, load_configured

        with open_features(plan.features) as features:
            self.texts = as_texts(features.texts, "the file's texts")
        options = embed_options(plan.provenance, plan.config.device, plan.config.progress)
        self.config = embed_config(self.texts, None, **options)
        config = self.config
        self.loaded = load_configured(config, native=False)  # the edits hook transformers' blocks
        expected = plan.provenance.model_sha256
        if expected and self.loaded.weights_sha256 != expected:
            raise ModelError(
                f"the model at {config.model} no longer matches {plan.features.name}: its weights' sha256 is "
                f"{str(self.loaded.weights_sha256)[:12]}..., the file was extracted with {expected[:12]}...",
                "restore the original model files, or extract again with this model",
            )
        self.n_blocks = int(self.loaded.n_layers) - 1
        self.block_path = edit_block_path(self.loaded.model, self.n_blocks, self.loaded.device)

    def run(self, maps=(), config=None, rows=None):
        """The ``Embeddings`` of every row (of the file rows ``rows``, in their order), with ``maps`` (``EditMap``s)
        applied inside the pass; ``config``: another in-memory extraction of the rows than the file's (a prompt
        around them, ``contrast.py``)."""
        from ..extraction import EditHooks, encode

        texts = self.texts if rows is None else [self.texts[int(row)] for row in rows]
        with EditHooks(self.loaded.model, self.block_path, self.n_blocks, maps):
            return encode(self.loaded, config or self.config, texts)


def bundle_matrix(embeddings, bundle):
    """What ``bundle`` reads of in-memory embeddings: one layer, layers side by side, or one matrix per layer."""
    import numpy as np

    blocks = [np.asarray(embeddings.array(layer, bundle.pooling), np.float32) for layer in bundle.layers]
    if bundle.spec.kind == "stack":
        return blocks
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)


__all__ = ["Forward", "bundle_matrix"]

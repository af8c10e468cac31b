"""Reference computations with plain transformers, used to check featx's features."""

from __future__ import annotations

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer


def reference_features(model_path, texts, max_length=None):
    """Per-sentence forward pass (no padding at all): {pooling: (n, layers, hidden)}."""
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    model = AutoModel.from_pretrained(str(model_path), dtype=torch.float32, attn_implementation="eager").eval()
    out = {"cls": [], "mean": [], "max": [], "last": [], "pooler": []}
    with torch.no_grad():
        for text in texts:
            encoded = tokenizer(
                text, return_tensors="pt", truncation=True, max_length=max_length or tokenizer.model_max_length
            )
            hidden = model(**encoded, output_hidden_states=True).hidden_states
            states = torch.stack(hidden, 1)[0]  # (layers, tokens, hidden)
            out["cls"].append(states[:, 0])
            out["mean"].append(states.mean(1))
            out["max"].append(states.max(1).values)
            out["last"].append(states[:, -1])
            out["pooler"].append(model.pooler(states))  # the head on every layer's first token
    return {name: torch.stack(values).numpy() for name, values in out.items()}


def interrupt_after_commits(monkeypatch, commits: int) -> None:
    """Make the writer raise KeyboardInterrupt (as Ctrl-C would) right after its ``commits``-th commit.

    Undo with ``monkeypatch.undo()`` before resuming.
    """
    from featx.store import FeatureWriter

    original_commit = FeatureWriter.commit
    calls = {"n": 0}

    def flaky_commit(self, rows_done):
        original_commit(self, rows_done)
        calls["n"] += 1
        if calls["n"] == commits:
            raise KeyboardInterrupt

    monkeypatch.setattr(FeatureWriter, "commit", flaky_commit)


def max_abs_diff(a, b) -> float:
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())

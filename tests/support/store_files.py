"""Small feature files written straight through ``FeatureWriter``, without a model: the store tests' data."""

from __future__ import annotations

import numpy as np

from featx.store import FeatureWriter, SiteLayout, hidden_layout, schema


class Rows:
    """The least a writer needs of a corpus and its tokenisation (duck-typed, like the extraction's)."""

    def __init__(self, n: int, tokens_per_row: int = 3):
        self.texts = [f"text {i}" for i in range(n)]
        self.ids = [str(i) for i in range(n)]
        self.split = None
        self.labels = {"y": type("L", (), {"codes": np.arange(n) % 2, "names": ["a", "b"]})()}
        self.full_lengths = np.full(n, tokens_per_row + 1, np.int32)
        self.lengths = np.full(n, tokens_per_row, np.int32)
        self.offsets = np.arange(n + 1, dtype=np.int64) * tokens_per_row
        self.input_ids = np.arange(n * tokens_per_row, dtype=np.int32)
        self.word_ids = np.zeros(n * tokens_per_row, dtype=np.int32)

    def __len__(self):
        return len(self.texts)

    @property
    def truncated(self):
        return self.lengths < self.full_lengths


def write_store_file(tmp_path, n=10, commit=None, with_tokens=True):
    """``tmp_path/f.h5`` with ``n`` rows of random hidden (layers 0, 2) and ffn (layer 2) features, committed up to
    ``commit`` (then left open as a partial file) or finished; returns the path and the values written."""
    sites = [hidden_layout([0, 2], 4, ["mean", "cls"]), SiteLayout("ffn", (2,), 6, ("mean", "cls"), ("x:output",))]
    rows = Rows(n)
    writer = FeatureWriter.create(
        tmp_path / "f.h5", {schema.FINGERPRINT: "fp", schema.MODEL: "m"}, rows, rows, sites, np.float32, with_tokens
    )
    rng = np.random.default_rng(0)
    values = {
        path: rng.normal(size=(n, len(site.layers), site.width)).astype(np.float32)
        for site in sites
        for path in site.pooled_paths.values()
    }
    if with_tokens:
        values.update(
            {
                site.tokens_path: rng.normal(size=(3 * n, len(site.layers), site.width)).astype(np.float32)
                for site in sites
            }
        )
    stop = commit if commit is not None else n
    writer.write_block(
        0, stop, {path: v[:stop] if not path.endswith("states") else v[: 3 * stop] for path, v in values.items()}
    )
    writer.commit(stop)
    if commit is None:
        writer.finish()
    else:
        writer.close()
    return tmp_path / "f.h5", values

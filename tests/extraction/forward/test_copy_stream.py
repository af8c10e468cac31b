"""``FEATX_COPY_STREAM=1`` moves the device-to-host copies of a CUDA batch to a side stream; anywhere else it
changes nothing: no stream is made and the features are bit for bit those of the default path."""

from __future__ import annotations

import numpy as np
from support.tiny import SENTENCES

from featx.extraction import embed
from featx.extraction.forward import runner

TEXTS = [row[0] for row in SENTENCES]


def test_copy_stream_changes_nothing_on_the_cpu(tiny_model, monkeypatch):
    made = []
    original = runner.Runner.__init__

    def recording_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self.copy_stream)

    monkeypatch.setattr(runner.Runner, "__init__", recording_init)
    default = embed(TEXTS, model=str(tiny_model), poolings="all", device="cpu")
    monkeypatch.setenv(runner.COPY_STREAM_ENV, "1")
    side = embed(TEXTS, model=str(tiny_model), poolings="all", device="cpu")
    assert made and all(stream is None for stream in made)
    for pooling in default.poolings:
        for layer in default.layers:
            np.testing.assert_array_equal(side.array(layer, pooling), default.array(layer, pooling))

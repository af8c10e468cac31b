"""The embedded default model (the packaged all-MiniLM-L6-v2) against a plain transformers forward pass."""

import pytest
from support.helpers import max_abs_diff, reference_features

import featx
from featx.extraction import ExtractConfig, extract

SENTENCES = [
    "A gripping, beautifully shot film.",
    "The plot collapses under its own weight and never recovers.",
    "What time does the museum open?",
    "Stocks rallied on Tuesday after the central bank held rates steady, easing fears of a slowdown.",
]


@pytest.mark.slow
def test_default_model_matches_transformers_on_every_layer(tmp_path, minilm_path):
    corpus = tmp_path / "c.csv"
    corpus.write_text("text\n" + "\n".join(f'"{s}"' for s in SENTENCES) + "\n")
    summary = extract(
        ExtractConfig(
            corpus=corpus,
            output=tmp_path / "f.h5",
            store_dtype="float32",
            poolings="mean,cls",
            progress=False,
            batch_size=3,
        )
    )
    reference = reference_features(minilm_path, SENTENCES)
    with featx.open(summary.output) as features:
        assert features.layers == list(range(7)) and features.hidden_size == 384
        assert features.attrs["model"].startswith("default")
        for pooling in ("mean", "cls"):
            for layer in features.layers:
                assert max_abs_diff(features.features(pooling, layer), reference[pooling][:, layer]) <= 1e-4

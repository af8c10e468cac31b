"""``--random-init`` on the families that load through transformers (the native ones: ``fast/test_random_init.py``).

DeBERTa-v2 has no sdpa attention, and T5's encoder is built from a concrete class (``T5EncoderModel``), which
has no ``from_config``: both were refused at load time.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.families import BY_NAME, per_row_states
from support.parity import parity, run_family
from support.tiny import SENTENCES

import featx

TEXTS = [row[0] for row in SENTENCES]
SEED = 3


def random_reference(folder, seed: int) -> list[np.ndarray]:
    """Per-row plain forward of ``AutoModel.from_config`` after ``torch.manual_seed(seed)`` (eager attention)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    torch.manual_seed(seed)
    model = AutoModel.from_config(AutoConfig.from_pretrained(str(folder)), attn_implementation="eager").eval()
    return per_row_states(model, tokenizer, TEXTS)


def test_random_deberta_is_the_model_from_config_draws(family_models, family_corpus, tmp_path):
    folder = family_models(BY_NAME["deberta-v2"])
    summary = run_family(folder, family_corpus, tmp_path / "random.h5", random_init=True, init_seed=SEED)
    assert parity(summary, random_reference(folder, SEED)) <= 1e-4


@pytest.mark.parametrize("name", ["t5-encoder", "t5-encoder-only"])
def test_random_t5_encoder_runs_with_its_seed(name, family_models, family_corpus, tmp_path):
    folder = family_models(BY_NAME[name])
    trained = run_family(folder, family_corpus, tmp_path / "trained.h5", poolings="mean")
    first, again, other = (
        run_family(folder, family_corpus, tmp_path / f"{index}.h5", poolings="mean", random_init=True, init_seed=seed)
        for index, seed in enumerate((SEED, SEED, SEED + 1))
    )
    with featx.open(first.output) as features:
        assert features.attrs["random_init"]
        random = features.features("mean", 1)
    with featx.open(again.output) as features:
        np.testing.assert_array_equal(features.features("mean", 1), random)
    for different in (trained, other):
        with featx.open(different.output) as features:
            assert np.abs(features.features("mean", 1) - random).max() > 1e-3

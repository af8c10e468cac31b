"""The LM loss rows of ``featx intervene`` where the checkpoint holds an LM head: the masked-token loss of a tiny BERT
saved with its masked-LM head, the next-token loss of a tiny GPT-2 saved with its LM head (the unedited loss checked
against transformers' own loss of each row alone)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.interventions import lm_features

from featx.interventions import intervene

pytestmark = pytest.mark.slow  # a model built and extracted per family, then the experiment (~4 s each)


def _loss_row(result):
    rows = result.table[result.table.role == "loss"]
    assert len(rows) == 1, result.notes
    return rows.iloc[0]


def test_masked_token_loss_of_an_encoder_with_its_head(tmp_path):
    features = lm_features(tmp_path, "bert", "BertForMaskedLM")
    result = intervene(features, label="animal", at="1", amnesic="none", loss="yes", n_bootstrap=100, write=False)
    row = _loss_row(result)
    assert row["name"] == "masked-token loss"
    assert all(math.isfinite(row[key]) for key in ("before", "after", "control"))
    assert row.before_low <= row.before <= row.before_high


def test_next_token_loss_of_a_decoder_matches_transformers(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    features = lm_features(tmp_path, "gpt2", "GPT2LMHeadModel")
    result = intervene(features, label="animal", at="1", amnesic="none", loss="yes", n_bootstrap=100, write=False)
    row = _loss_row(result)
    assert row["name"] == "next-token loss"
    folder = tmp_path / "model"
    model, tokenizer = AutoModelForCausalLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    losses = []
    with torch.inference_mode():
        for line in (tmp_path / "corpus.csv").read_text().splitlines()[1:]:
            if line.endswith(",test"):  # the rows the train split's eraser was not fitted on: the loss's rows
                ids = tokenizer(line.split(",")[0], return_tensors="pt")["input_ids"]
                losses.append(float(model(input_ids=ids, labels=ids).loss))
    assert row.before == pytest.approx(np.mean(losses), rel=1e-4)

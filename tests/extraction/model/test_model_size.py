"""``model_size.position_limit``: how many tokens a row may hold, with the padding offset of RoBERTa-style
position embeddings (positions numbered from the padding id + 1); ``row_limit``: that with the tokenizer's limit
and ``--max-length``, for the loaded model and the dry-run estimate alike."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from support.families import BY_NAME, build_family
from support.helpers import reference_features
from support.parity import relative_error, run_family
from support.tiny import write_csv

import featx
from featx.errors import InputError
from featx.extraction.model.size import position_limit, row_limit


@pytest.mark.parametrize(
    "config, limit",
    [
        ({"model_type": "bert", "max_position_embeddings": 512, "pad_token_id": 0}, 512),
        ({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}, 512),
        ({"model_type": "xlm-roberta", "max_position_embeddings": 514, "pad_token_id": 1}, 512),
        ({"model_type": "camembert", "max_position_embeddings": 514, "pad_token_id": 1}, 512),
        ({"model_type": "roberta", "max_position_embeddings": 66, "pad_token_id": 0}, 65),
        ({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": None}, 512),
        ({"model_type": "mpnet", "max_position_embeddings": 514, "pad_token_id": 0}, 512),  # MPNet's id is 1
        ({"model_type": "gpt2", "n_positions": 1024}, 1024),
        ({"model_type": "roberta", "max_position_embeddings": 2, "pad_token_id": 1}, 1),
        ({"model_type": "t5"}, None),
        ({"model_type": "bert", "max_position_embeddings": True}, None),
    ],
)
def test_position_limit_of_a_config_json(config, limit):
    assert position_limit(config) == limit


def test_position_limit_of_a_config_object():
    config = SimpleNamespace(model_type="roberta", max_position_embeddings=514, pad_token_id=1)
    assert position_limit(config) == 512


ROBERTA_66 = {"model_type": "roberta", "max_position_embeddings": 66, "pad_token_id": 1}


@pytest.mark.parametrize(
    "config, tokenizer_limit, limit",
    [
        (ROBERTA_66, None, 64),
        (ROBERTA_66, int(1e30), 64),  # transformers' "no limit"
        (ROBERTA_66, 32, 32),
        (ROBERTA_66, 32.0, 32),
        (ROBERTA_66, 1, 64),  # no room for the special tokens: not a limit anyone meant
        (ROBERTA_66, True, 64),
        (ROBERTA_66, "128", 64),
        ({"model_type": "t5"}, None, 512),
        ({"model_type": "t5"}, 1024, 1024),
    ],
)
def test_row_limit_takes_the_smaller_of_tokenizer_and_positions(config, tokenizer_limit, limit):
    assert row_limit(config, tokenizer_limit, None) == limit
    assert row_limit(config, tokenizer_limit, limit) == limit


def test_row_limit_refuses_a_max_length_outside_the_model():
    assert row_limit(ROBERTA_66, None, 2) == 2
    with pytest.raises(InputError, match="exceeds the model's maximum of 64") as error:
        row_limit(ROBERTA_66, None, 65)
    assert "--max-length 64" in error.value.hint
    with pytest.raises(InputError, match="too small"):
        row_limit(ROBERTA_66, None, 1)


def without_tokenizer_limit(folder):
    """The folder's tokenizer_config.json without model_max_length (transformers then assumes no limit)."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config.pop("model_max_length", None)
    path.write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("name", ["roberta", "mpnet"])
def test_rows_past_the_position_table_are_truncated_not_a_traceback(name, tmp_path):
    # 66 positions, 64 usable: before the fix a 65-token row indexed past the position table (IndexError).
    folder = without_tokenizer_limit(build_family(BY_NAME[name], tmp_path / name))
    texts = [" ".join(["the quick brown fox jumps"] * 30), "a short one"]
    corpus = write_csv(tmp_path / "long.csv", [(text, "a") for text in texts], header=("text", "label"))
    summary = run_family(folder, corpus, tmp_path / "out.h5")
    assert summary.truncated_rows == 1
    expected = reference_features(folder, texts, max_length=64)
    with featx.open(summary.output) as features:
        for layer in features.layers:
            assert relative_error(features.features("mean", layer), expected["mean"][:, layer]) < 1e-4
        assert np.isfinite(features.features("max", features.layers[-1])).all()
    with pytest.raises(InputError, match="exceeds the model's maximum of 64"):
        run_family(folder, corpus, tmp_path / "other.h5", max_length=65)


def test_the_estimate_from_config_uses_the_same_limit(tmp_path):
    folder = without_tokenizer_limit(build_family(BY_NAME["roberta"], tmp_path / "roberta"))
    corpus = write_csv(tmp_path / "c.csv", [("a short one", "a")], header=("text", "label"))
    assert featx.estimate(corpus, model=str(folder), from_config=True, calibrate=False).max_length == 64

"""A model edited after fitting (issue 46): only the weights and tokenizer files used to be hashed, so an edited
``config.json`` (``hidden_act`` relu, ``layer_norm_eps`` 0.5) predicted silently with other features. Every
file that shapes the features is recorded now; an edit is refused at ``featx.load`` and at ``featx predict``.

One row of ``EDITS`` per hostile edit: the case id, the file, how it is edited, and the expected message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.deploy_data import make_split_features
from support.errors import assert_one_clear_error
from support.tiny import build_tiny_bert

import featx
from featx.cli import main
from featx.errors import ModelError

SETTINGS = r"the model's settings in .* no longer match the bundle"


def _json_edit(**changes):
    def edit(text: str) -> str:
        return json.dumps({**json.loads(text), **changes})

    return edit


EDITS = [
    ("hidden_act", "config.json", _json_edit(hidden_act="relu"), SETTINGS),
    ("layer_norm_eps", "config.json", _json_edit(layer_norm_eps=0.5), SETTINGS),
    ("chat_template_added", "chat_template.jinja", lambda text: "{{ messages[0]['content'] }}", SETTINGS),
    ("tokenizer_config", "tokenizer_config.json", _json_edit(model_max_length=7), "the tokenizer files in"),
]


@pytest.fixture(scope="module")
def fitted_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("changed")
    model = build_tiny_bert(folder / "model")
    features = make_split_features(folder, model)
    bundle = featx.fit(features, label="label", layer="1", pooling="mean", folds=3, output=folder / "m.featx").path
    return model, bundle, folder


@pytest.mark.parametrize("name, edit, expected", [case[1:] for case in EDITS], ids=[case[0] for case in EDITS])
def test_an_edited_model_is_refused(fitted_model, name, edit, expected):
    model, bundle, folder = fitted_model
    path: Path = model / name
    original = path.read_bytes() if path.exists() else None
    path.write_text(edit(original.decode() if original is not None else ""))
    try:
        with pytest.raises(ModelError, match=expected):
            featx.load(bundle)
        corpus = folder / "corpus.csv"
        result = CliRunner().invoke(main, ["predict", str(bundle), str(corpus), "-o", str(folder / "p.csv"), "-q"])
        assert result.exit_code == 2, result.output
        assert_one_clear_error(result.output, expected)
    finally:
        if original is None:
            path.unlink()
        else:
            path.write_bytes(original)
    assert featx.load(bundle).predict(["the cat sat"]).shape == (1,)  # restored: accepted again

"""A bundle reproduces the features it was fitted on (issue 46): a bundle used to forget the template
(``predict`` encoded the bare text: 79 of 240 labels changed), the chat template and ``--system``, and the
``--contrast`` answers, and its ``--pooling at`` and ``span_*`` bundles were written and then refused. Now a
bundle records every setting that shaped its features and ``featx.load(bundle)`` renders each text the same
way, or ``featx fit`` refuses the setting with one line.

One row of ``KINDS`` per input kind fit accepts: the case id, the model, the extraction's options and fit's.
For each, the bundle's features of the training texts equal the stored features (float32, 1e-5) and its
predictions equal the head applied to the stored rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from support.deploy_data import deploy_rows
from support.errors import assert_one_clear_error
from support.prompt_models import add_chat_template, build_sentencepiece_llama
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.deploy.features import stored_matrix

N_ROWS = 40
MEAN = {"layer": "1", "pooling": "mean"}
KINDS = [
    ("plain", "bert", {}, MEAN),
    ("pairs_cross", "bert", {"text_pair_col": "second"}, MEAN),
    ("pairs_separate", "bert", {"text_pair_col": "second", "pair_mode": "separate"}, MEAN),
    ("template", "bert", {"template": "This review is clearly {text} Overall sentiment:"}, MEAN),
    ("template_named_column", "bert", {"text_col": "review", "template": "Review: {review} Sentiment:"}, MEAN),
    ("span", "bert", {"template": "Review: {text} Sentiment:"}, {"layer": "1", "pooling": "span_mean"}),
    ("pool_at_index", "bert", {"pool_at": "index:1"}, {"layer": "1", "pooling": "at"}),
    ("pool_at_marker", "llama", {"template": "{text} Answer:", "pool_at": "marker:Answer"}, {"pooling": "at"}),
    ("chat_template", "chat", {"chat_template": True}, {"layer": "-1", "pooling": "last"}),
    ("chat_system", "chat", {"chat_template": True, "system": "Be brief."}, {"layer": "-1", "pooling": "mean"}),
    ("contrast", "bert", {"template": "Is it good? {text} Answer:", "contrast": "yes,no"}, MEAN),
    ("sites", "bert", {"sites": "hidden,attn_out"}, MEAN),
    ("long_windows", "bert", {"long": "window", "max_length": 8}, MEAN),
    ("truncated_layers", "bert", {"layers": "0"}, {"layer": "0", "pooling": "cls"}),
    ("cat_layers", "bert", {}, {"layer": "cat(0,1)", "pooling": "mean"}),
]


@pytest.fixture(scope="module")
def models(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    llama = build_sentencepiece_llama(folder / "llama")
    chat = add_chat_template(build_sentencepiece_llama(folder / "chat"))
    return {"bert": tiny_model, "llama": llama, "chat": chat}


def _corpus(folder: Path, text_col: str) -> Path:
    rows = deploy_rows(N_ROWS)
    seconds = [rows[(i + 7) % len(rows)][0] for i in range(len(rows))]
    table = [(row[0], second, row[1], row[4]) for row, second in zip(rows, seconds, strict=True)]
    return write_csv(folder / "corpus.csv", table, header=(text_col, "second", "label", "split"))


def _fitted(folder: Path, model: Path, extract: dict, fit: dict) -> tuple[Path, Path]:
    corpus = _corpus(folder, extract.get("text_col", "text"))
    features = folder / "f.h5"
    options = {"store_dtype": "float32", "poolings": "all", "progress": False, **extract}
    featx.extract(corpus, model=str(model), output=features, **options)
    bundle = featx.fit(features, label="label", folds=3, output=folder / "m.featx", **fit).path
    return features, bundle


@pytest.mark.parametrize("model, extract, fit", [case[1:] for case in KINDS], ids=[case[0] for case in KINDS])
def test_a_bundle_gives_its_stored_features_and_predictions(models, tmp_path, model, extract, fit):
    features, bundle = _fitted(tmp_path, models[model], extract, fit)
    probe = featx.load(bundle)
    with featx.open(features) as file:
        texts, pairs = file.texts, file.pair_texts
        stored = stored_matrix(file, probe.spec, probe.pooling)
    computed = probe.features(texts, pairs or None)
    np.testing.assert_allclose(computed, stored, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        probe.predict_proba(texts, pairs or None), probe.predict_proba_features(stored), atol=1e-6
    )
    assert list(probe.predict(texts, pairs or None)) == list(probe.predict_features(stored))


# One row per setting a bundle cannot reproduce from a text: the case id, the extraction's options, the message.
REFUSED = [
    (
        "template_other_column",
        {"template": "{text} is about {second}"},
        r"the template of .*f\.h5 names column\(s\) second besides the text, and a bundle predicts from a text alone",
    ),
]


@pytest.mark.parametrize("extract, expected", [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_fit_refuses_what_a_bundle_cannot_reproduce(models, tmp_path, extract, expected):
    corpus = _corpus(tmp_path, "text")
    options = {"store_dtype": "float32", "progress": False, **extract}
    featx.extract(corpus, model=str(models["bert"]), output=tmp_path / "f.h5", **options)
    result = CliRunner().invoke(main, ["fit", str(tmp_path / "f.h5"), "--label", "label", "-o", str(tmp_path / "m")])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, expected)
    assert not (tmp_path / "m").exists()


def test_a_word_bundle_gives_its_stored_word_vectors(tiny_model, tmp_path):
    """Word inputs: every word of the training sentences gets its stored vector, and its stored prediction."""
    from support.report_runs import treebank

    train = treebank(tmp_path / "toy-ud-train.conllu", 20, 0, "tr")
    features = tmp_path / "w.h5"
    featx.extract(train, model=str(tiny_model), output=features, store_dtype="float32", progress=False)
    probe = featx.fit(features, label="upos", layer="1", pooling="mean", folds=3, output=tmp_path / "w.featx").probe
    probe = featx.load(probe.path)
    with featx.open(features) as file:
        offsets, forms = file.word_offsets(), file.word_forms()
        stored = file.word_features("mean", 1)
        sentences = [forms[offsets[s] : offsets[s + 1]] for s in range(file.n_rows)]
    computed, _ = probe.word_features(sentences)
    np.testing.assert_allclose(computed, stored, rtol=1e-5, atol=1e-5)
    predicted = np.concatenate(probe.predict(sentences))
    assert list(predicted) == list(probe.predict_features(stored))

"""``featx probe --baseline`` for word-level probes: the shared toy-treebank file against a random-init copy."""

from __future__ import annotations

import pandas as pd
import pytest

import featx
from featx.errors import InputError
from featx.report import format_probe


@pytest.fixture(scope="module")
def random_words(word_features, tiny_model, tmp_path_factory):
    """The shared word file's two treebanks extracted again with random weights."""
    features, test = word_features
    train = test.with_name("toy-ud-train.conllu")
    output = tmp_path_factory.mktemp("random-words") / "random.h5"
    featx.extract(
        train,
        more_corpora=(test,),
        model=str(tiny_model),
        random_init=True,
        store_dtype="float32",
        output=output,
        progress=False,
    )
    return output


@pytest.mark.slow
def test_the_baseline_is_probed_beside_the_model_layer_by_layer(word_features, random_words, tmp_path):
    features, _ = word_features
    result = featx.probe(
        features, label="upos", baseline=random_words, layers="all", poolings="first", jobs=1, output=tmp_path / "r"
    )
    table = result.table
    singles = table[table.kind == "single"]
    main, baseline = (singles[singles.features == name] for name in ("main", "baseline"))
    assert list(baseline.layer) == list(main.layer) == [0, 1, 2]
    assert baseline.accuracy.notna().all() and baseline.control_accuracy.notna().all()
    assert baseline.is_best.sum() == 1 and baseline.p_vs_best.notna().any()  # its own chosen layer and tests
    assert result.meta["baseline_model"].endswith("(random init)")
    assert result.meta.to_dict()["baseline_file"] == str(random_words.resolve())
    assert result.meta["selected"]["features"] == "main"
    predictions = pd.read_csv(
        result.predictions_path, dtype=str, keep_default_na=False
    )  # the model's, not the baseline's
    for layer, accuracy in zip(main.layer, main.accuracy, strict=True):
        assert (predictions[f"layer_{layer}"] == predictions.label).mean() == pytest.approx(accuracy)
    assert "on the baseline features" in format_probe(result)


def test_a_baseline_of_other_sentences_or_without_words_is_refused(word_features, tmp_path, tiny_model, corpus_csv):
    features, test = word_features
    fewer = tmp_path / "test-only.h5"
    featx.extract(test, model=str(tiny_model), output=fewer, progress=False)
    with pytest.raises(InputError, match="does not hold the same rows") as err:
        featx.probe(features, label="upos", baseline=fewer, write=False)
    assert err.value.hint
    sentences = tmp_path / "sentences.h5"
    featx.extract(corpus_csv, model=str(tiny_model), output=sentences, poolings="mean", progress=False)
    with pytest.raises(InputError, match="has no word-level data"):
        featx.probe(features, label="upos", baseline=sentences, write=False)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (dict(offsets=lambda o: o[:-1]), "does not hold the same sentences"),
        (dict(forms=lambda f: [*f[:-1], "other"]), "does not hold the same words: sentence 55"),
        (dict(layers=[0, 7]), r"does not store layer\(s\) \[7\]"),
        (dict(poolings=["first", "max"]), r"does not store word pooling\(s\) max"),
    ],
)
def test_the_baseline_must_hold_the_same_words_layers_and_poolings(random_words, change, expected):
    from types import SimpleNamespace

    from featx.probing.tasks.word_baseline import check_word_baseline

    with featx.FeatureFile(random_words) as opened:
        offsets, forms = opened.word_offsets(), opened.word_forms()
    offsets, forms = change.get("offsets", lambda o: o)(offsets), change.get("forms", lambda f: f)(forms)
    main = SimpleNamespace(word_offsets=lambda: offsets, word_forms=lambda: forms)
    with pytest.raises(InputError, match=expected) as err:
        check_word_baseline(main, random_words, change.get("layers", [0]), change.get("poolings", ["first"]), False)
    assert err.value.hint  # every refusal says what to do
    if "layers" in change:  # the probed layers both files store, as a sentence baseline's refusal names them
        assert err.value.hint.startswith("probe only those both files store, --layer 0, or extract the baseline")

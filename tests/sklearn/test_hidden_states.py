"""``featx.sklearn.HiddenStates``: a scikit-learn transformer from texts to one layer's pooled hidden states.

In a Pipeline with ``cross_val_score`` and ``GridSearchCV``, equal to ``featx.extraction.embed``, cached across fits
and clones, never pickled with its encoder, and through the estimator checks that apply to a text transformer.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_checks
from support.tiny import SENTENCES, build_tiny_bert

from featx.errors import InputError
from featx.extraction import embed
from featx.extraction.model import loading as extraction_modeling
from featx.sklearn import HiddenStates
from featx.sklearn import hidden_states as module

TEXTS = [row[0] for row in SENTENCES]
LABELS = np.array([row[1] for row in SENTENCES])


@pytest.fixture(scope="module")
def four_layers(tmp_path_factory):
    """A 4-layer tiny random BERT (layers 0..4), so that ``layer=3`` stops below the top."""
    return str(build_tiny_bert(tmp_path_factory.mktemp("bert-4"), layers=4))


@pytest.fixture
def loads(monkeypatch):
    """The cache emptied, and every model load counted."""
    module.clear_cache()
    counted = {"loads": 0}
    original = extraction_modeling.load_model

    def counting(*args, **kwargs):
        counted["loads"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(extraction_modeling, "load_model", counting)
    yield counted
    module.clear_cache()


def test_transform_equals_embed_and_runs_only_up_to_its_layer(four_layers, loads):
    states = HiddenStates(model=four_layers, layer=3, pooling="cls", batch_size=4)
    got = states.fit_transform(TEXTS)
    expected = embed(TEXTS, model=four_layers, layers="3", poolings="cls", batch_size=4)
    assert expected.model["blocks_run"] == 3 and expected.model["n_model_layers"] == 5
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 32)
    np.testing.assert_array_equal(got, expected.array(3, "cls"))
    assert states.layer_ == 3 and states.n_layers_ == 5 and states.n_features_out_ == 32
    names = states.get_feature_names_out()
    assert list(names[:2]) == ["hiddenstates_l3_cls_0", "hiddenstates_l3_cls_1"] and len(names) == 32


def test_pipeline_cross_val_score_and_grid_search_load_the_model_once(four_layers, loads):
    pipeline = make_pipeline(HiddenStates(model=four_layers, layer=3), LogisticRegression(max_iter=200))
    folds = StratifiedKFold(n_splits=2, shuffle=True, random_state=0)
    scores = cross_val_score(pipeline, TEXTS, LABELS, cv=folds, error_score="raise")
    assert scores.shape == (2,) and np.isfinite(scores).all() and ((scores >= 0) & (scores <= 1)).all()

    search = GridSearchCV(pipeline, param_grid={"hiddenstates__layer": [1, 2]}, cv=folds, error_score="raise")
    search.fit(pd.Series(TEXTS), LABELS)
    assert search.best_params_["hiddenstates__layer"] in (1, 2)
    assert list(search.cv_results_["param_hiddenstates__layer"]) == [1, 2]
    assert loads["loads"] == 1  # one encoder for every fold, clone and layer

    # The refitted pipeline is the one a user would build by hand from embed's features.
    layer = search.best_params_["hiddenstates__layer"]
    features = embed(TEXTS, model=four_layers, layers=str(layer)).array(layer, "mean")
    by_hand = LogisticRegression(max_iter=200).fit(features, LABELS)
    np.testing.assert_array_equal(search.predict(TEXTS), by_hand.predict(features))


def test_pickle_and_clone_never_carry_the_encoder(four_layers, loads):
    states = HiddenStates(model=four_layers, layer=2).fit(TEXTS[:2])
    assert "_loaded" in vars(states)
    restored = pickle.loads(pickle.dumps(states))
    assert "_loaded" not in vars(restored) and restored.layer_ == 2
    assert len(pickle.dumps(states)) < 10_000  # parameters and fitted numbers only, no weights
    np.testing.assert_array_equal(restored.transform(TEXTS[:3]), states.transform(TEXTS[:3]))
    assert "_loaded" not in vars(clone(states))
    assert loads["loads"] == 1


def test_set_output_pandas(four_layers, loads):
    states = HiddenStates(model=four_layers, layer=1).set_output(transform="pandas")
    frame = states.fit_transform(pd.DataFrame({"text": TEXTS[:4]}, index=list("abcd")))
    assert isinstance(frame, pd.DataFrame) and list(frame.index) == list("abcd")
    assert list(frame.columns) == list(states.get_feature_names_out())


@pytest.mark.parametrize(
    "params,message",
    [
        ({"layer": 7}, "layer 7 is out of range: .* has layers 0..4"),
        ({"layer": -6}, "layer -6 is out of range"),
        ({"max_length": 1000}, "exceeds the model's maximum of 64"),
    ],
)
def test_bad_layer_or_length_is_one_clear_error_at_fit(four_layers, loads, params, message):
    with pytest.raises(InputError, match=message):
        HiddenStates(model=four_layers, **params).fit(TEXTS)


def test_bad_texts_are_refused_at_fit_and_transform(four_layers, loads):
    with pytest.raises(InputError, match=r"X\[1\] is int"):
        HiddenStates(model=four_layers).fit(["a text", 3])
    fitted = HiddenStates(model=four_layers).fit(TEXTS)
    with pytest.raises(InputError, match="X is empty"):
        fitted.transform([])
    assert loads["loads"] == 1


# Applicable estimator checks: those about parameters, construction, cloning, tags and validation. The others
# (check_dont_overwrite_parameters, check_estimators_overwrite_params, check_n_features_in_after_fitting,
# check_fit_check_is_fitted, check_transformer_general...) fit on random numeric 2-D arrays, which a transformer of
# texts refuses by design; their contracts (parameters unchanged by fit, only trailing-underscore attributes set
# by fit) are checked on texts in test_fit_changes_no_parameter_and_sets_only_fitted_attributes.
APPLICABLE = [
    "check_get_params_invariance",
    "check_set_params",
    "check_parameters_default_constructible",
    "check_no_attributes_set_in_init",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_estimator_tags_renamed",
    "check_param_validation",
]


@pytest.mark.parametrize("check", APPLICABLE)
def test_estimator_checks_that_apply_to_a_text_transformer(check):
    """``check_param_validation`` sets each parameter to an invalid value and expects fit to raise scikit-learn's
    InvalidParameterError before looking at the (numeric) data: parameters are validated first, loads nothing."""
    getattr(estimator_checks, check)("HiddenStates", HiddenStates(model="no/such-model"))


def test_fit_changes_no_parameter_and_sets_only_fitted_attributes(four_layers, loads):
    states = HiddenStates(model=four_layers, layer=-2, pooling="max")
    before = states.get_params(deep=False)
    states.fit(TEXTS)
    assert states.get_params(deep=False) == before
    public = {name for name in vars(states) if not name.startswith("_")}
    assert public - set(before) == {"layer_", "n_layers_", "n_features_out_", "model_sha256_"}
    assert states.layer_ == 3

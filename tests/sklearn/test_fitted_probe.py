"""featx.sklearn.FittedProbe: a bundle as a scikit-learn classifier or regressor of texts. The encoder is stood
in by the stored features of the same texts (``support.deploy_data.stored_lookup``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import cross_val_predict, cross_val_score
from support.deploy_data import stored_lookup

import featx
from featx.deploy.probe import Probe
from featx.sklearn import FittedProbe


@pytest.fixture
def texts_and_labels(split_features, monkeypatch):
    monkeypatch.setattr(Probe, "features", stored_lookup(split_features))
    with featx.open(split_features) as features:
        names = np.asarray(features.label_names("label"), dtype=object)
        return list(features.texts), names[features.labels("label")]


def test_a_bundle_predicts_as_featx_load_does(bundle, texts_and_labels):
    texts, labels = texts_and_labels
    estimator = FittedProbe(bundle)
    assert is_classifier(estimator) and not is_regressor(estimator)
    probe = featx.load(bundle)
    assert list(estimator.predict(texts)) == list(probe.predict(texts))
    assert np.array_equal(estimator.predict_proba(texts), probe.predict_proba(texts))
    assert list(estimator.classes_) == ["neg", "pos"]
    assert estimator.score(texts, labels) == pytest.approx(accuracy_score(labels, estimator.predict(texts)))
    f1_score(labels, estimator.predict(texts), pos_label="pos")  # sklearn metrics take its predictions


def test_clone_and_cross_val_predict_refit_the_head_per_fold(bundle, texts_and_labels):
    texts, labels = texts_and_labels
    estimator = clone(FittedProbe(bundle, seed=1))
    assert estimator.get_params() == {"bundle": bundle, "balanced": False, "seed": 1}
    predicted = cross_val_predict(estimator, np.asarray(texts, dtype=object), labels, cv=3)
    assert predicted.shape == (len(texts),) and set(predicted) <= {"neg", "pos"}
    scores = cross_val_score(FittedProbe(bundle), np.asarray(texts, dtype=object), labels, cv=3)
    assert len(scores) == 3 and np.all((scores >= 0) & (scores <= 1))


def test_fit_on_integer_labels_keeps_them(bundle, texts_and_labels):
    texts, labels = texts_and_labels
    y = (labels == "pos").astype(int)
    estimator = FittedProbe(bundle).fit(texts, y)
    assert list(estimator.classes_) == [0, 1]
    assert set(estimator.predict(texts)) <= {0, 1}
    assert estimator.predict_proba(texts).shape == (len(texts), 2)


def test_a_regression_bundle_is_a_regressor(split_features, texts_and_labels, tmp_path):
    texts, _ = texts_and_labels
    path = featx.fit(split_features, label="score", layer="1", pooling="mean", output=tmp_path / "r.featx").path
    estimator = FittedProbe(path)
    assert is_regressor(estimator)
    with featx.open(split_features) as features:
        y = features.label_values("score")
    assert np.isfinite(estimator.score(texts, y))


def test_precomputed_features_are_accepted(bundle, split_features):
    with featx.open(split_features) as features:
        X = features.features("mean", 1)
    assert list(FittedProbe(bundle).predict(X)) == list(featx.load(bundle).predict_features(X))


def test_texts_through_the_real_encoder(bundle, split_features):
    with featx.open(split_features) as features:
        texts, X = list(features.texts), features.features("mean", 1)
    assert list(FittedProbe(bundle).predict(texts)) == list(featx.load(bundle).predict_features(X))


# The estimator checks that apply to a bundle as an estimator, run on a classification and a regression bundle.
# Most fit on random numeric matrices: FittedProbe takes a float matrix as precomputed features and trains a new
# head on it, so input validation (NaN/inf, complex, sparse, 1-D, empty, one sample, y None or 2-D, continuous y
# for a classifier), fit's contract (returns self, changes no parameter, idempotent, pickles) and predict's
# invariances are checked as for any estimator. Left out, as not applicable: the unfitted checks
# (check_estimators_unfitted, check_fit_check_is_fitted: a bundle is a fitted probe before any fit, by design),
# sample weights, multi-output and multi-label targets, sparsify, outlier detectors, pairwise and array-API
# checks, get_feature_names_out (not a transformer), and check_classifiers_train / check_regressors_train, which
# predict matrices of another width after construction.
APPLICABLE = [
    "check_complex_data",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimator_tags_renamed",
    "check_estimators_dtypes",
    "check_estimators_empty_data_messages",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit1d",
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_fit2d_predict1d",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_get_params_invariance",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_no_attributes_set_in_init",
    "check_param_validation",
    "check_parameters_default_constructible",
    "check_pipeline_consistency",
    "check_readonly_memmap_input",
    "check_requires_y_none",
    "check_set_params",
    "check_supervised_y_2d",
    "check_supervised_y_no_nan",
]


@pytest.fixture(scope="module")
def regression_bundle(split_features, tmp_path_factory):
    return featx.fit(split_features, label="score", layer="1", pooling="mean", folds=2,
                     output=tmp_path_factory.mktemp("sk-regression") / "r.featx").path  # fmt: skip


@pytest.mark.parametrize("check", APPLICABLE)
def test_estimator_checks_that_apply_to_a_bundle(check, bundle, regression_bundle):
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("FittedProbe", FittedProbe(bundle))
    getattr(estimator_checks, check)("FittedProbe", FittedProbe(regression_bundle))


def test_classifier_and_regressor_specific_checks(bundle, regression_bundle):
    from sklearn.utils import estimator_checks

    estimator_checks.check_classifiers_regression_target("FittedProbe", FittedProbe(bundle))
    estimator_checks.check_classifier_data_not_an_array("FittedProbe", FittedProbe(bundle))
    estimator_checks.check_regressor_data_not_an_array("FittedProbe", FittedProbe(regression_bundle))


@pytest.mark.parametrize(
    "y, message",
    [
        (np.full(10, np.nan), r"^Input y contains NaN: FittedProbe needs a class for every row"),
        (np.full(10, np.inf), r"^Input y contains infinity .*\): FittedProbe needs a class for every row"),
        (pd.Series(["neg", None] * 5), r"^Input contains NaN: FittedProbe needs a class for every row"),
    ],
)
def test_a_target_without_a_value_is_refused_before_its_classes_are_read(bundle, regression_bundle, y, message):
    """scikit-learn's check_supervised_y_no_nan passes on the ValueError alone; its type_of_target, read first,
    cast NaN and inf to integers (a RuntimeWarning) and failed to sort a missing value among strings (TypeError)."""
    X = np.random.default_rng(0).standard_normal((10, 32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=message):
            FittedProbe(bundle).fit(X, y)
        if y.dtype.kind == "f":
            with pytest.raises(ValueError, match=message.replace("a class", "a value")):
                FittedProbe(regression_bundle).fit(X, y)


def test_a_regression_bundle_has_no_predict_proba(regression_bundle):
    estimator = FittedProbe(regression_bundle)
    assert not hasattr(estimator, "predict_proba") and not hasattr(estimator, "decision_function")
    assert hasattr(FittedProbe(regression_bundle), "predict")


def test_precomputed_features_of_another_width_are_refused(bundle):
    with pytest.raises(ValueError, match=r"X has 5 features, but FittedProbe is expecting 32 features"):
        FittedProbe(bundle).predict(np.zeros((3, 5)))


def test_set_params_to_another_bundle_predicts_and_refits_with_it(bundle, split_features, tmp_path):
    other = featx.fit(split_features, label="label", layer="0", pooling="cls", folds=2,
                      output=tmp_path / "other.featx").path  # fmt: skip
    with featx.open(split_features) as features:
        first, second = features.features("mean", 1), features.features("cls", 0)
        y = np.asarray(features.label_names("label"), dtype=object)[features.labels("label")]
    estimator = FittedProbe(bundle)
    estimator.predict(first)  # the first bundle is loaded
    estimator.set_params(bundle=other)
    assert list(estimator.predict(second)) == list(featx.load(other).predict_features(second))
    estimator.set_params(bundle=bundle).fit(first, y)
    assert estimator.probe_.pooling == "mean" and estimator.probe_.spec == featx.load(bundle).spec
    estimator.set_params(bundle=other).fit(second, y)
    assert estimator.probe_.pooling == "cls" and estimator.probe_.spec == featx.load(other).spec


# A stacked bundle (--layer stack: one probe per layer and a meta-classifier) reads one matrix per layer.
@pytest.fixture(scope="module")
def stack_bundle(split_features, tmp_path_factory):
    return featx.fit(split_features, label="label", layer="stack", pooling="mean", folds=2,
                     output=tmp_path_factory.mktemp("sk-stack") / "s.featx").path  # fmt: skip


def _layer_matrices(split_features, layers):
    with featx.open(split_features) as features:
        return [features.features("mean", layer) for layer in layers]


def test_a_stacked_bundle_refits_a_stack_on_texts(stack_bundle, texts_and_labels):
    texts, labels = texts_and_labels
    estimator = FittedProbe(stack_bundle, seed=2).fit(texts, labels)
    assert estimator.probe_.head.kind == "stack" and estimator.probe_.head.widths == [32, 32, 32]
    assert estimator.n_features_in_ == 96 and list(estimator.classes_) == ["neg", "pos"]
    assert set(estimator.predict(texts)) <= {"neg", "pos"}
    assert np.allclose(estimator.predict_proba(texts).sum(axis=1), 1.0)
    assert estimator.decision_function(texts).shape == (len(texts),)
    assert 0 <= estimator.score(texts, labels) <= 1
    scores = cross_val_score(clone(estimator), np.asarray(texts, dtype=object), labels.astype(object), cv=3)
    assert len(scores) == 3 and np.all((scores >= 0) & (scores <= 1))


def test_a_stacked_bundle_reads_its_layers_side_by_side_or_as_a_list(stack_bundle, split_features):
    blocks = _layer_matrices(split_features, (0, 1, 2))
    side_by_side = np.concatenate(blocks, axis=1)
    probe, estimator = featx.load(stack_bundle), FittedProbe(stack_bundle)
    assert list(estimator.predict(side_by_side)) == list(probe.predict_features(blocks))
    assert list(estimator.predict(blocks)) == list(probe.predict_features(blocks))
    assert np.array_equal(estimator.predict_proba(side_by_side), probe.predict_proba_features(blocks))
    scores = probe.scores_features(blocks)
    assert np.array_equal(estimator.decision_function(side_by_side), scores[:, 1] - scores[:, 0])


def test_a_stacked_bundle_refit_on_a_matrix_stays_a_stack(stack_bundle, split_features, texts_and_labels):
    texts, labels = texts_and_labels
    side_by_side = np.concatenate(_layer_matrices(split_features, (0, 1, 2)), axis=1)
    estimator = FittedProbe(stack_bundle).fit(side_by_side, labels)
    assert estimator.probe_.head.kind == "stack" and estimator.n_features_in_ == 96
    assert list(estimator.predict(texts)) == list(estimator.predict(side_by_side))  # texts read the same layers


@pytest.mark.parametrize(
    ("X", "message"),
    [
        (
            np.zeros((3, 40)),
            r"X has 40 features, but FittedProbe is expecting 96 .*stacked layers \[0, 1, 2\] side by "
            r"side, 32\+32\+32 columns",
        ),
        (
            [np.zeros((3, 32)), np.zeros((3, 32))],
            r"X is 2 matrices of \[32, 32\] features, but FittedProbe is "
            r"expecting 3 of \[32, 32, 32\] features, one per stacked layer \[0, 1, 2\]",
        ),
        ([np.zeros((3, 32)), np.zeros((2, 32)), np.zeros((3, 32))], r"the layers' matrices have \[3, 2, 3\] rows"),
    ],
)
def test_a_stacked_bundles_features_of_other_shapes_are_refused(stack_bundle, X, message):
    with pytest.raises(ValueError, match=message):
        FittedProbe(stack_bundle).predict(X)


def test_a_list_of_matrices_is_refused_by_a_bundle_of_one_matrix(bundle):
    with pytest.raises(ValueError, match=r"X is a list of 2 matrices, but FittedProbe reads one matrix of 32 "):
        FittedProbe(bundle).predict([np.zeros((3, 16)), np.zeros((3, 16))])


# The checks that do not fit random matrices of their own widths (a stack reads its layers' widths only).
STACK_APPLICABLE = [
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_estimators_empty_data_messages",
    "check_get_params_invariance",
    "check_no_attributes_set_in_init",
    "check_param_validation",
    "check_parameters_default_constructible",
    "check_requires_y_none",
    "check_set_params",
]


@pytest.mark.slow
@pytest.mark.parametrize("check", STACK_APPLICABLE)
def test_estimator_checks_that_apply_to_a_stacked_bundle(check, stack_bundle):
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("FittedProbe", FittedProbe(stack_bundle))


def test_a_concatenation_bundle_refits_and_reads_its_matrix(split_features, texts_and_labels, tmp_path):
    texts, labels = texts_and_labels
    path = featx.fit(split_features, label="label", layer="cat(1,2)", pooling="mean", folds=2,
                     output=tmp_path / "c.featx").path  # fmt: skip
    side_by_side = np.concatenate(_layer_matrices(split_features, (1, 2)), axis=1)
    assert list(FittedProbe(path).predict(side_by_side)) == list(featx.load(path).predict(texts))
    estimator = FittedProbe(path).fit(texts, labels)
    assert estimator.n_features_in_ == 64 and list(estimator.predict(texts)) == list(estimator.predict(side_by_side))

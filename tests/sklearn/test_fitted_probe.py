"""featx.sklearn.FittedProbe: a bundle as a scikit-learn classifier or regressor of texts. The encoder is stood
in by the stored features of the same texts (``support.deploy_data.stored_lookup``)."""

from __future__ import annotations

import numpy as np
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

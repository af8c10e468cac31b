"""``featx intervene --site SITE``: the eraser fitted on the file's stored site vectors and applied to that
activation inside each edited layer (``--intervene erase:...@L:SITE``), with the random control at the same site;
bad input refused with one line before any forward pass."""

from __future__ import annotations

import numpy as np
import pytest
from support.interventions import planted_rows
from support.tiny import write_csv

import featx
from featx.errors import InputError
from featx.interventions import intervene


@pytest.fixture(scope="module")
def site_file(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("intervene-site")
    corpus = write_csv(folder / "corpus.csv", planted_rows(), header=("text", "animal", "other", "split"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", sites="ffn", progress=False)
    return output


@pytest.mark.slow  # ~4 s: three passes of the tiny BERT and the probes
def test_erase_at_a_site_inside_the_layer(site_file):
    from featx.interventions.config import InterveneConfig
    from featx.interventions.passes import layer_edits
    from featx.interventions.plan import make_plan

    options = dict(label="animal", at="1", amnesic="none", loss="no", write=False, n_bootstrap=200)
    result = intervene(site_file, site="ffn", **options)
    plain = intervene(site_file, **options)
    assert result.meta["site"] == "ffn" and "site" not in plain.meta
    probes = result.table[result.table.kind == "probe"].set_index("layer")
    np.testing.assert_allclose(probes.before, plain.table[plain.table.kind == "probe"].set_index("layer").before)
    drift = result.table[result.table.role == "drift"].iloc[0]
    # the layers above computed from the edited ffn (the control, one random direction centred on the site's mean,
    # moves the top layer less than the eraser: its cosine is 1 - 5e-8 here, far above rounding's 1e-16)
    assert drift.after < 1.0 - 1e-7 and drift.control < 1.0 - 1e-10
    plan = make_plan(InterveneConfig(features=site_file, site="ffn", **options))
    edits = layer_edits(plan, 1)
    edit, control = edits.edit, edits.controls[edits.key]  # the eraser's own control, centred on its mean
    with featx.open(site_file) as features:
        width = features.features("mean", 1, site="ffn").shape[1]
    assert edit.intervention.site == control.intervention.site == "ffn" and edit.mean.shape == (width,)
    assert control.left.shape == (width, 1) and np.array_equal(control.mean, edit.mean)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"site": "mlp"}, "site='mlp': not a site inside a layer"),
        ({"site": "ffn", "at": "0"}, "layer 0 is the embeddings' output"),
        ({"site": "ffn", "edit": "project", "bundle": "b.featx"}, "a bundle's directions are of the layers' outputs"),
    ],
)
def test_a_bad_site_is_one_line(options, message, planted_features):
    with pytest.raises(InputError, match=message) as error:
        intervene(planted_features, **{"label": "animal", "at": "1", "write": False, **options})
    assert "\n" not in error.value.message


def test_a_site_the_file_does_not_store_is_refused_before_any_forward_pass(planted_features, monkeypatch):
    from featx.interventions import forward

    monkeypatch.setattr(forward.Forward, "__init__", lambda *args, **kwargs: pytest.fail("the model was loaded"))
    with pytest.raises(InputError, match="does not store site ffn at layer 1 .*no layer"):
        intervene(planted_features, label="animal", at="1", site="ffn", write=False)

"""``featx.lens`` end to end: the lens and the probe scored on the same test rows, the scores as defined, the CSV
written; ``featx lens`` prints the same table and draws the figure."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import featx
from featx.cli import main
from featx.io import read_csv
from featx.logit_lens import score_layer


def test_scores_are_the_argmax_accuracy_and_the_margin_over_the_best_other_answer():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 5.0]])  # answer order
    y = np.array([0, 0, 1])  # class codes; class 0 is answer 2, class 1 answer 0
    scores = score_layer(logits, y, [2, 0], n_boot=200, seed=0)
    # class logits: row 0 (0, 2), row 1 (1, 0), row 2 (5, 1): predictions 1, 0, 0 against 0, 0, 1
    assert scores["lens_accuracy"] == pytest.approx(1 / 3)
    assert scores["logit_diff"] == pytest.approx(((0 - 2) + (1 - 0) + (1 - 5)) / 3)
    assert scores["lens_accuracy_low"] <= scores["lens_accuracy"] <= scores["lens_accuracy_high"]
    assert scores["logit_diff_low"] <= scores["logit_diff"] <= scores["logit_diff_high"]
    one = score_layer(logits, y, [2, 0], n_boot=1, seed=0)  # one resample (--n-bootstrap 1): its mean, low == high
    assert one["lens_accuracy_low"] == one["lens_accuracy_high"] and one["logit_diff_low"] == one["logit_diff_high"]


@pytest.mark.slow
def test_the_lens_sits_beside_the_probe_on_the_test_rows(head_models, corpus, tmp_path):
    from featx.logit_lens import LensConfig, lens_logits, prepare

    options = dict(
        model=str(head_models("llama")),
        template="Review: {text}\nSentiment:",
        answers="neg= the,pos= walk",
        label="sentiment",
        output=str(tmp_path / "lens"),
        progress=False,
        jobs=1,
    )
    result = featx.lens(corpus, **options)
    table = result.table
    with featx.open(result.features) as stored:
        test = np.flatnonzero(stored.split == "test")
        y = stored.labels("sentiment")[test]
        names = stored.label_names("sentiment")
        assert list(table["layer"]) == list(stored.layers)
    assert set(table["n_scored"]) == {len(test)} and set(table["evaluation"]) == {"split"}
    prepared = prepare(LensConfig(corpus, **options))
    answer = {"neg": 0, "pos": 1}
    for layer, logits in lens_logits(result.features, prepared, test).items():
        hits = np.argmax(logits, axis=1) == np.array([answer[names[code]] for code in y])
        assert table.set_index("layer").loc[layer, "lens_accuracy"] == pytest.approx(hits.mean())
    probe = featx.probe(
        result.features, label="sentiment", poolings="at", control=False, lexical=False, write=False, jobs=1
    )
    rows = probe.table[probe.table["classifier"] == "logreg"].set_index("layer")
    np.testing.assert_allclose(table["probe_accuracy"], rows.loc[table["layer"], "accuracy"])
    majority = probe.table[probe.table["kind"] == "majority"].iloc[0]
    assert set(table["majority_accuracy"]) == {majority["accuracy"]}  # the baseline, on the same scored rows
    train_y = stored_train_labels(result.features)
    most = np.bincount(train_y).argmax()
    assert majority["accuracy"] == pytest.approx(np.mean(y == most))
    assert (
        f"majority class (the training rows' most common label, scored on the same rows): {majority['accuracy']:.3f}"
        in result.format()
    )
    assert result.mapping == "neg -> ' the', pos -> ' walk'"
    written = read_csv(tmp_path / "lens.csv")
    np.testing.assert_allclose(written["logit_diff"], table["logit_diff"])
    assert "probe acc" in result.format() and result.files == [tmp_path / "lens.csv", tmp_path / "lens.json"]
    recorded = json.loads((tmp_path / "lens.json").read_text())
    assert recorded["results"] == json.loads(table.to_json(orient="records"))
    meta = recorded["meta"]
    assert (meta["command"], meta["label"], meta["answers"], meta["n_bootstrap"]) == (
        "lens",
        "sentiment",
        result.mapping,
        1000,
    )
    assert meta["features_file"] == str(result.features.resolve()) and meta["template"] == options["template"]
    args = ["--model", options["model"], "--template", "Review: {text}\\nSentiment:", "--answers", options["answers"]]
    args += ["--label", "sentiment", "-o", options["output"], "-q", "--jobs", "1"]
    again = CliRunner().invoke(main, ["lens", str(corpus), *args])  # the same features file, up to date
    assert again.exit_code == 0, again.output
    assert again.output.startswith(result.format() + "\n") and f"wrote {tmp_path / 'lens.svg'}" in again.output
    assert "Logit lens" in (tmp_path / "lens.svg").read_text()  # the command draws the figure


def stored_train_labels(path):
    with featx.open(path) as stored:
        return stored.labels("sentiment")[np.flatnonzero(stored.split == "train")]


def test_the_lens_probe_says_it_has_no_group(monkeypatch, tmp_path):
    """``featx lens`` has no ``--group``: its probe's config says so, and the repeated-text note it prints then
    names none (tests/probing/tasks/test_text_groups.py)."""
    import featx.probing
    from featx.logit_lens import LensConfig
    from featx.logit_lens.run import _probe

    seen = []

    def resolve(config):
        seen.append(config)
        raise RuntimeError("stop before the probe")

    monkeypatch.setattr(featx.probing, "resolve_plan", resolve)
    config = LensConfig(tmp_path / "corpus.csv", template="{text} is", answers="neg= the,pos= walk", n_bootstrap=7)
    with pytest.raises(RuntimeError, match="stop before the probe"):
        _probe(config, tmp_path / "features.h5")
    assert [probe.has_group for probe in seen] == [False] and seen[0].group is None
    assert seen[0].n_bootstrap == 7  # the probe's and the majority's intervals take the lens's resamples

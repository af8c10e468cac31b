"""``featx intervene`` (``featx/interventions``) on a planted label: erasing at layer L sends the probe at L to chance
while the random control of the same rank does not; the before column is a plain probe of the original file; the
table's columns; the steering dose-response moves nothing at alpha 0."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import featx
import featx.probing
from featx.interventions import STEER_COLUMNS, TABLE_COLUMNS, format_table, intervene

pytestmark = pytest.mark.slow  # the experiment runs the tiny model three times and fits a dozen probes (~5 s)


def _probe_rows(result, name: str) -> pd.DataFrame:
    table = result.table
    return table[(table.kind == "probe") & (table.name == name)].set_index("layer")


def test_erasing_at_l_sends_the_probe_at_l_to_chance_and_the_control_does_not(erased_at_1):
    at_1 = _probe_rows(erased_at_1, "animal").loc[1]
    assert at_1.before_low > at_1.majority + 0.1  # the planted label is there before
    assert at_1.at_chance and at_1.after_low <= at_1.majority
    assert at_1.control_low > at_1.majority  # removing a random direction of the same rank keeps it
    # the drop on these 32 test rows: 0.875 -> 0.625 with C chosen by log-loss, p 0.039 (0.077 after Holm over the two
    # layers); the accuracy-chosen C fell to 0.406, below the majority class, p 0.005
    assert at_1.p_after < 0.05 and at_1.p_control_holm < 0.05
    assert erased_at_1.table["rank"].iloc[0] == 1  # LEACE of two classes removes one direction


def test_before_is_a_plain_probe_of_the_original_file(erased_at_1, planted_features):
    options = {
        "poolings": "mean",
        "layers": "1,2",
        "classifiers": "logreg",
        "control": False,
        "n_bootstrap": 200,
        "jobs": 1,
    }
    plain = featx.probe(planted_features, label="animal", write=False, **options).table
    plain = plain[plain.classifier == "logreg"].dropna(subset=["layer"]).set_index("layer")
    before = _probe_rows(erased_at_1, "animal")
    for layer in before.index:
        assert before.loc[layer, "before"] == plain.loc[layer, "accuracy"]
        # n_bootstrap=200 in both: the same resamples of the same test rows, the same interval
        assert before.loc[layer, ["before_low", "before_high"]].tolist() == [
            plain.loc[layer, "accuracy_low"],
            plain.loc[layer, "accuracy_high"],
        ]


def test_the_table(erased_at_1):
    table = erased_at_1.table
    assert list(table.columns) == TABLE_COLUMNS
    assert set(table.role) == {"edited", "amnesic", "drift"}  # no bundle; the tiny BERT has no LM head
    assert set(table[table.kind == "probe"].layer) == {1, 2}  # the stored layers from the edit up
    drift = table[table.role == "drift"].iloc[0]
    assert drift.before == 1.0 and 0 < drift.after < 1 and drift.after_low <= drift.after <= drift.after_high
    assert any("LM loss skipped" in note for note in erased_at_1.notes)
    assert not any("unedited pass differs" in note for note in erased_at_1.notes)  # the same rows, the same vectors
    printed = format_table(erased_at_1)
    assert "edit at layer 1 (rank 1):" in printed and "last-layer cosine" in printed and "LM loss skipped" in printed


def test_the_files_are_written(erased_at_1):
    import json

    frame = pd.read_csv(erased_at_1.csv_path)
    assert list(frame.columns) == TABLE_COLUMNS and len(frame) == len(erased_at_1.table)
    payload = json.loads(erased_at_1.json_path.read_text())
    assert payload["meta"]["label"] == "animal" and len(payload["results"]) == len(frame)
    assert payload["meta"]["n_bootstrap"] == 200  # the fixture's: the resamples of the probe rows' intervals


@pytest.mark.parametrize("grouped", [False, True], ids=["split", "group"])
def test_each_label_is_loaded_once_before_the_model(grouped, request, monkeypatch):
    """``make_plan`` loads the task of every label column it checks (the edited one, each amnesic one, those
    ``--amnesic all`` skips) and carries those it probes (``plan.tasks``): the erasers, the folds' passes and the
    probes read them, so no column is loaded twice, nor after the model."""
    from featx.interventions import forward

    calls: list[str] = []
    load_task, init = featx.probing.load_task, forward.Forward.__init__

    def counted(features, name, *args, **kwargs):
        calls.append(name)
        return load_task(features, name, *args, **kwargs)

    def loaded(self, plan):
        calls.append("the model")
        init(self, plan)

    monkeypatch.setattr(featx.probing, "load_task", counted)  # what the interventions import
    monkeypatch.setattr(forward.Forward, "__init__", loaded)
    path = request.getfixturevalue("grouped_file" if grouped else "planted_features")
    label, options = ("label", {"group": "doc"}) if grouped else ("animal", {})
    result = intervene(path, label=label, at="2", loss="no", n_bootstrap=100, write=False, **options)
    with featx.open(path) as features:
        columns = sorted(features.label_columns)
    assert sorted(calls[:-1]) == columns and calls[-1] == "the model"
    probed = set(result.table[result.table.kind == "probe"].name)
    assert label in probed and probed <= set(columns)


def test_steering_with_alpha_zero_moves_nothing(planted_features, animal_bundle):
    result = intervene(
        planted_features, edit="steer", bundle=animal_bundle, toward="dogs", at="1", alphas="0,8", write=False
    )
    table = result.table
    assert list(table.columns) == STEER_COLUMNS
    zero = table[table.alpha == 0]
    assert (zero.moved == 0).all() and np.allclose(zero.score_change, 0)
    moved = table[(table.alpha == 8) & (table.direction == "probe")].iloc[0]
    assert moved.moved > 0.5 and result.meta["read_at"] == 2


def test_the_steering_printout_shows_every_measure_of_the_table_and_the_notes():
    """Read through contrast answers, the table's ``flipped`` share is printed beside ``moved``, with the same
    numbers as the CSV's; the run's notes (the bundle already predicting the class for every row...) follow it."""
    from pathlib import Path

    from featx.interventions import InterveneResult

    row = dict.fromkeys(STEER_COLUMNS, 0.0)
    row.update(alpha=4.0, direction="random", layer=1, read_at="answers", n_rows=12)
    row.update(moved=0.25, moved_low=0.125, moved_high=0.5, flipped=0.375, flipped_low=0.25, flipped_high=0.625)
    meta = {"toward": "pos", "at": 1, "reader": "the answers", "direction_source": "the class-mean difference"}
    note = "the bundle already predicts pos for every row: nothing can move"
    printed = format_table(InterveneResult(pd.DataFrame([row]), meta, Path("x"), [note]))
    assert "moved 0.250 [0.125, 0.500]  flipped 0.375 [0.250, 0.625]" in printed
    assert printed.endswith(f"note: {note}")


def test_the_printout_gives_the_tests_the_csv_holds():
    """Each printed p-value is the CSV's: a probe's Holm-adjusted tests against before and against the control, and
    the loss row's paired t-tests (not adjusted), which the printout left out."""
    from pathlib import Path

    from featx.interventions import InterveneResult

    probe = dict.fromkeys(TABLE_COLUMNS, 0.5)
    probe.update(edit="erase", edit_layer=1, rank=1, kind="probe", name="animal", role="edited", layer=1)
    probe.update(p_after=0.01, p_after_holm=0.02, p_control=0.03, p_control_holm=0.06, majority=0.4, at_chance=False)
    loss = {**probe, "kind": "output", "name": "masked-token loss", "role": "loss", "majority": float("nan")}
    loss.update(p_after=0.414, p_after_holm=float("nan"), p_control=0.269, p_control_holm=float("nan"))
    at_chance = {**probe, "layer": 2, "after": 0.41, "at_chance": True}
    tiny = {**probe, "layer": 3, "p_after_holm": 0.0004, "p_control_holm": 0.00999}
    meta = {"edit": "erase", "label": "animal", "pooling": "mean"}
    printed = format_table(InterveneResult(pd.DataFrame([probe, at_chance, loss, tiny]), meta, Path("x"))).splitlines()
    assert printed[2].endswith("p 0.020 / 0.060  majority 0.400") and printed[4].endswith("p 0.414 / 0.269")
    # each probe row beside its majority-class baseline, which the CSV held and the printout left out
    assert printed[3].endswith("p 0.020 / 0.060  majority 0.400: after at chance")
    assert printed[5].endswith("p <.001 / 0.010  majority 0.400")  # as every featx table writes a p, not 0.00999
    assert printed[0].endswith("(the loss: paired t-tests); majority: the majority class on the probes' test rows")
    grouped = format_table(InterveneResult(pd.DataFrame([probe, loss]), {**meta, "group": "doc"}, Path("x")))
    assert grouped.splitlines()[0].endswith("test rows; by whole groups of doc")  # --group's


def test_erasing_at_the_top_of_a_decoder_sends_its_probe_to_chance(tmp_path):
    """A decoder stores its top layer after its final norm; the eraser, fitted on those stored vectors, is applied
    to them (not to the last block's output before the norm), so the probe at the top reads at chance there too."""
    from support.interventions import lm_features

    features = lm_features(tmp_path, "llama", "LlamaForCausalLM", n_rows=300)
    result = intervene(features, label="animal", at="2", amnesic="none", loss="no", n_bootstrap=200, write=False)
    top = _probe_rows(result, "animal").loc[2]
    assert top.before_low > top.majority + 0.1
    assert top.at_chance and top.after_low <= top.majority

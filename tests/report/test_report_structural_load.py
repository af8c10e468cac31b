"""featx.report.structural: structural probe results read back as a checked ``StructuralResults``, and every
malformed or hostile file refused with one ``InputError``."""

from __future__ import annotations

import json

import pytest
from support.structural_results import structural_payload, write_structural

from featx.errors import InputError, StoreError
from featx.report import StructuralResults, load_structural
from featx.report.structural import is_structural


def test_the_rows_the_baseline_and_both_choices(tmp_path):
    results = load_structural(write_structural(tmp_path / "w.distance.structural.json"))
    assert isinstance(results, StructuralResults) and results.mode == "distance"
    assert results.measures == ("uuas", "dspr") and results.baseline_name == "linear chain"
    assert len(results.probes) == 8 and list(results.probes["pooling"].unique()) == ["mean", "first"]
    assert results.baseline["uuas"] == 0.35 and results.model == "tiny-model"
    assert (results.chosen["pooling"], results.chosen["layer"], results.chosen["uuas"]) == ("mean", 1, 0.4)
    assert (results.best_on_test["pooling"], results.best_on_test["layer"]) == ("first", 2)


def test_the_csv_is_read_through_its_json_and_a_prefix_is_recognised(tmp_path):
    json_path = write_structural(tmp_path / "run.json", mode="depth")  # -o run: no .structural in the name
    (tmp_path / "run.csv").write_text("kind\n", encoding="utf-8")
    assert is_structural(tmp_path / "run.csv") and is_structural(json_path)
    assert load_structural(tmp_path / "run.csv").baseline_name == "word position"
    (tmp_path / "other.json").write_text(json.dumps({"meta": {"label": "x"}, "results": []}), encoding="utf-8")
    assert not is_structural(tmp_path / "other.json")
    with pytest.raises(StoreError, match="the JSON beside"):
        load_structural(write_structural(tmp_path / "lone.csv").with_suffix(".csv").rename(tmp_path / "x.csv"))


def _broken(change):
    payload = structural_payload()
    change(payload)
    return json.dumps(payload)


ROW = 2  # a probe row (0 is the baseline)


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),  # deeper than the parser goes
        ("[1, 2]", "no 'meta' object"),
        (_broken(lambda p: p.update(results={"a": 1})), "'results' is not a list"),
        (_broken(lambda p: p["meta"].update(structural="<b>tree</b>")), "mode '<b>tree</b>' is not distance"),
        (_broken(lambda p: p["results"][ROW].update(kind="position")), "kind 'position'"),
        (_broken(lambda p: p["results"][ROW].update(layer="1; rm")), "layer '1; rm', not a layer number"),
        (_broken(lambda p: p["results"][ROW].update(layer=True)), "not a layer number"),
        (_broken(lambda p: p["results"][ROW].update(pooling=["mean"])), "no pooling name"),
        (_broken(lambda p: p["results"][ROW].update(pooling="x" * 201)), "no pooling name"),
        (_broken(lambda p: p["results"][ROW].update(uuas="0.9")), "uuas of results row 3 is '0.9', not a number"),
        (_broken(lambda p: p["results"][ROW].update(dspr_low=7.5)), "outside -1 to 1"),
        (
            '{"meta": {"structural": "distance"}, "results": [{"kind": "probe", "layer": 0, "pooling": "mean", '
            '"uuas": NaN}]}',
            "uuas of results row 1 is nan, not a number",
        ),
        (_broken(lambda p: p["results"].append(dict(p["results"][0]))), "2 'chain' baseline rows"),
        (_broken(lambda p: p.update(results=p["results"][:1])), "no probe rows"),
        (_broken(lambda p: p["results"].append(dict(p["results"][ROW]))), "more than one row"),
        (_broken(lambda p: p["results"][ROW + 1].update(is_best=True)), "2 rows are marked is_best"),
        (_broken(lambda p: p["results"][0].update(is_best=True)), "not true or false on a probe row"),
        (_broken(lambda p: p["results"][ROW].update(is_best_on_test="yes")), "is_best_on_test of results row 3"),
    ],
)
def test_a_malformed_or_hostile_file_is_one_input_error(tmp_path, text, message):
    path = tmp_path / "bad.distance.structural.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="is not featx structural probe results") as raised:
        load_structural(path)
    assert message in raised.value.message and raised.value.hint

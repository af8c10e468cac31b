"""A results JSON is someone else's file too: the predictions file it names is read only when it is a bare file
name beside it. A name holding ``/`` or markup (``</script>``) no longer ends ``featx report`` in a
``ValueError``: the report says there are no per-example diagnostics (escaped), ``featx explain`` refuses it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.results import synthetic_results

from featx.cli import main

NAMES = [
    ("markup", "x</script><script>alert(1)</script>.csv"),
    ("a parent folder", "../../etc/passwd"),
    ("a dot", "."),
    ("a number", 7),
]


@pytest.fixture(scope="module")
def results(tiny_features, tmp_path_factory):
    prefix = tmp_path_factory.mktemp("results") / "r"
    args = ["probe", str(tiny_features), "--label", "label", "--layer", "1", "--folds", "2", "--jobs", "1"]
    assert CliRunner().invoke(main, [*args, "-o", str(prefix)]).exit_code == 0
    return prefix


def _with_name(results, tmp_path, name):
    payload = json.loads(results.with_suffix(".json").read_text())
    payload["meta"]["predictions_file"] = name
    (tmp_path / "r.json").write_text(json.dumps(payload))
    (tmp_path / "r.csv").write_bytes(results.with_suffix(".csv").read_bytes())
    return tmp_path / "r.csv"


@pytest.mark.slow
@pytest.mark.parametrize(("case", "name"), NAMES, ids=[row[0] for row in NAMES])
def test_a_hostile_predictions_name_is_never_followed(results, tmp_path, case, name):
    csv = _with_name(results, tmp_path, name)
    report = CliRunner().invoke(main, ["report", str(csv), "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.output
    page = (tmp_path / "r.html").read_text()
    assert "No per-example diagnostics" in page and "<script>alert" not in page
    explain = CliRunner().invoke(main, ["explain", str(csv)])
    assert explain.exit_code == 2, explain.output
    assert_one_clear_error(explain.output, r"r\.json names its predictions file .*, which is not a file name")


DEEP = "[" * 200_000 + "]" * 200_000  # deeper than Python's JSON parser can recurse
_FRAME, _META = synthetic_results(names=("neg", "p\ud800s"), model="m\udc80")  # JSON escapes the halves alone
HALF = json.dumps({"meta": _META, "results": json.loads(_FRAME.to_json(orient="records"))})


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["report"], "deep.probe.json"),
        (["plot"], "deep.probe.json"),
        (["explain"], "deep.probe.json"),
        (["report"], "deep.structural.json"),
    ],
    ids=["report", "plot", "explain", "structural report"],
)
@pytest.mark.parametrize("text", [DEEP, HALF], ids=["nested too deeply", "half a surrogate pair"])
def test_a_json_nested_too_deeply_or_holding_no_text_is_one_clear_error(tmp_path, command, name, text):
    """Nested too deeply (a RecursionError), or holding half of a surrogate pair (no UTF-8 page, figure or pandas
    column holds one: a UnicodeEncodeError in the report): one clear error."""
    path = tmp_path / name
    path.write_text(text)
    out = ["-o", str(tmp_path / "out.html")] if command[0] == "report" else []
    out = ["-o", str(tmp_path / "out.png")] if command[0] == "plot" else out
    result = CliRunner().invoke(main, [*command, str(path), *out])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, RecursionError)
    assert_one_clear_error(result.output, rf"{name}.* not (a )?featx")


HOSTILE_META = [
    ("label_names", 5, "a list"),
    ("class_counts", [1, 2], "an object"),
    ("features_file", ["/tmp"], "a text"),
    ("n_rows", "many", "a whole number"),
    ("seed", {"a": 1}, "a whole number"),
    ("poolings", 3, "a list"),
    ("notes", 7, "a list"),
    ("metric", ["accuracy"], "a text"),
    ("predictions_layer", 3, "a text"),
    ("cosine_baseline", {"mean": 1}, "a list"),
    ("cosine_baseline", [{"layer": 1}], "a list"),
]


@pytest.mark.parametrize(
    ("key", "value", "wanted"), HOSTILE_META, ids=[f"{key}={value!r}" for key, value, _ in HOSTILE_META]
)
def test_a_meta_field_of_another_type_is_one_clear_error(tmp_path, key, value, wanted):
    """A results JSON whose meta holds a field of another JSON type (edited by hand, or someone else's file) is
    refused naming the field by every command that reads it, never a TypeError inside a figure or a table."""
    from support.results import synthetic_results, write_results

    frame, meta = synthetic_results()
    csv_path, json_path = write_results(frame, {**meta, key: value}, tmp_path / "r.probe")
    pattern = rf"r\.probe\.json: its meta field '{key}' is .*, not {wanted}"
    for command in (["report", "-o", str(tmp_path / "r.html")], ["plot"], ["explain"], ["compare", str(csv_path)]):
        for path in (csv_path, json_path):
            outcome = CliRunner().invoke(main, [command[0], str(path), *command[1:]])
            assert outcome.exit_code == 2, (command, outcome.output)
            assert_one_clear_error(outcome.output, pattern)
    payload = json.loads(json_path.read_text())
    for wrapped in ([payload], {**payload, "meta": 5}):  # the file or its meta not a JSON object
        json_path.write_text(json.dumps(wrapped))
        outcome = CliRunner().invoke(main, ["explain", str(csv_path)])
        assert outcome.exit_code == 2 and "Traceback" not in outcome.output, outcome.output

"""A results JSON is someone else's file too: the predictions file it names is read only when it is a bare file
name beside it. A name holding ``/`` or markup (``</script>``) no longer ends ``featx report`` in a
``ValueError``: the report says there are no per-example diagnostics (escaped), ``featx explain`` refuses it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error

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
def test_a_json_nested_too_deeply_is_refused_not_a_recursion_error(tmp_path, command, name):
    path = tmp_path / name
    path.write_text(DEEP)
    out = ["-o", str(tmp_path / "out.html")] if command[0] == "report" else []
    out = ["-o", str(tmp_path / "out.png")] if command[0] == "plot" else out
    result = CliRunner().invoke(main, [*command, str(path), *out])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, RecursionError)
    assert_one_clear_error(result.output, rf"{name}.* not (a )?featx")

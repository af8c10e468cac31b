"""featx.report.files.check_redrawn, through each command that draws its files again from results (compare,
plot, report, similarity): featx's own earlier figures, tables and pages are replaced on a second run; a user's
file at any of those paths (``-o data.png`` beside the corpus ``data.csv``) is refused before any work, unchanged."""

import matplotlib.pyplot as plt
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

from featx.cli import main


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _results(folder, name, label):
    frame, meta = synthetic_results(label=label)
    return str(write_results(frame, meta, folder / name)[0])


def _commands(folder, features):
    a, b = _results(folder, "a.x.probe", "x"), _results(folder, "b.y.probe", "y")
    out = str(folder / "data.png")
    return {  # each command with -o data.png (data.html for the report), and the file of it a user's file may hold
        "compare": (["compare", a, b, "-o", out], "data.csv", "comparison table"),
        "compare-tests": (["compare", a, b, "-o", out], "data.tests.csv", "paired-tests table"),
        "plot": (["plot", a, "-o", out], "data.svg", "figure"),
        "report": (["report", a, "-o", str(folder / "data.html")], "data.html", "report page"),
        "similarity": (["similarity", str(features), "-o", out], "data.csv", "similarity matrix"),
    }


@pytest.mark.parametrize("command", ["compare", "compare-tests", "plot", "report", "similarity"])
def test_a_run_redraws_its_own_files_and_refuses_a_users_file(tiny_features, tmp_path, command):
    args, theirs, what = _commands(tmp_path, tiny_features)[command]
    runner = CliRunner()
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    if command == "report":  # its one file: featx's own page, made again (the others' own figures and tables are
        again = runner.invoke(main, args)  # checked before the user's file below, so the refusal proves them)
        assert again.exit_code == 0 and again.output == first.output, again.output
    (tmp_path / theirs).write_text("text,label\nmine,1\n")  # the user's own file, where the command writes
    before = {path: path.read_bytes() for path in tmp_path.iterdir()}
    refused = runner.invoke(main, args)
    assert refused.exit_code == 2, refused.output
    assert f"{tmp_path / theirs} exists and is not a {what} featx wrote: not replaced" in refused.output
    assert "hint: move it away" in refused.output and refused.output.rstrip().endswith("or choose another -o path")
    assert {path: path.read_bytes() for path in tmp_path.iterdir()} == before

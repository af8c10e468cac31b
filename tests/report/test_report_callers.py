"""featx.report's Python functions word their refusals for their caller: the keyword with its value from Python
(``dpi=0``, ``output='x.png'``) and a command line as a Python call, where ``featx plot``, ``compare``,
``similarity`` and ``report`` name the flags (``--dpi 0``, ``-o x.png``). ``plot_files`` is a generator: its
checks run as it is iterated, after the call returned, and still speak Python."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

import featx.report
from featx.cli import main
from featx.errors import FeatxError


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Two synthetic results files of different labels ({a}, {b}), and {folder}."""
    folder = tmp_path_factory.mktemp("callers")
    paths = {"folder": folder}
    for name, label in (("a", "sentiment"), ("b", "other")):
        frame, meta = synthetic_results(label=label)
        paths[name] = write_results(frame, meta, folder / f"{name}.probe")[0]
    yield paths
    plt.close("all")


# (function, arguments, options, Python's words, the command line's arguments, its words); "{a}" is a results file
CALLERS = [
    (
        "plot_files",
        [["{a}", "{b}"]],
        {"output": "x.png"},
        "output='x.png' names one figure but 2 results files were given\n"
        "  hint: pass a directory to output, or one results file",
        ["plot", "{a}", "{b}", "-o", "x.png"],
        "-o x.png names one figure but 2 results files were given\n  hint: pass a directory to -o, or one results",
    ),
    (
        "plot_files",
        ["{a}"],
        {"compare": "{folder}/a.probe.png"},
        "compare='{folder}/a.probe.png' would overwrite the figure of one of the results files\n"
        "  hint: give compare a name of its own, e.g. compare='labels.png'",
        ["plot", "{a}", "--compare", "{folder}/a.probe.png"],
        "--compare {folder}/a.probe.png would overwrite the figure of one of the results files\n"
        "  hint: give --compare a name of its own, e.g. --compare labels.png",
    ),
    (
        "plot_files",
        ["{a}"],
        {"baseline": "{b}"},
        "baseline='b.probe.csv' probes 'other' (classification), these results 'sentiment' (classification)\n"
        "  hint: give the results of the same label probed on the second features file "
        "(featx.probe(other_features, label='sentiment')), or featx.report.compare_results to set",
        ["plot", "{a}", "--baseline", "{b}"],
        "--baseline b.probe.csv probes 'other' (classification), these results 'sentiment' (classification)\n"
        "  hint: give the results of the same label probed on the second features file (featx probe OTHER.h5 "
        "--label sentiment), or featx compare to set",
    ),
    ("plot_files", ["{a}"], {"dpi": 0}, "dpi=0 must be", ["plot", "{a}", "--dpi", "0"], "--dpi 0 must be"),
    (
        "compare_results",
        [["{a}", "{b}"]],
        {"classifier": "svm"},
        "no single-layer results for classifier 'svm'\n  hint: classifiers in these results: logreg; choose one "
        "with classifier, or featx.probe(..., classifiers='svm') to add it",
        ["compare", "{a}", "{b}", "--classifier", "svm"],
        "no single-layer results for classifier 'svm'\n  hint: classifiers in these results: logreg; choose one "
        "with --classifier, or probe with --classifier svm to add it",
    ),
    (
        "write_report",
        ["{a}"],
        {"metric": "r2"},
        "metric 'r2' is not in these results; they have: accuracy",
        ["report", "{a}", "--metric", "r2"],
        "metric 'r2' is not in these results; they have: accuracy",
    ),
    (
        "layer_similarity",
        ["{folder}/none.h5"],
        {"dpi": 0},
        "dpi=0 must be",
        ["similarity", "{folder}/none.h5", "--dpi", "0"],
        "--dpi 0 must be",
    ),
]


def _filled(value, paths):
    if isinstance(value, dict):
        return {key: _filled(item, paths) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, paths) for item in value]
    return value.format(**paths) if isinstance(value, str) else value


@pytest.mark.parametrize(
    "function, arguments, options, python, args, cli", CALLERS, ids=[f"{c[0]}-{'-'.join(c[2])}" for c in CALLERS]
)
def test_a_report_function_names_what_its_caller_gave(
    results, monkeypatch, function, arguments, options, python, args, cli
):
    monkeypatch.chdir(results["folder"])  # x.png, had it been written
    with pytest.raises(FeatxError) as caught:
        made = getattr(featx.report, function)(*_filled(arguments, results), **_filled(options, results))
        list(made)  # plot_files: its checks run as it is iterated
    said = str(caught.value)
    assert said.startswith(_filled(python, results)), said
    assert not re.search(r"(^|[\s(])(-o|--[a-z])", said), said  # no flag from Python
    result = CliRunner().invoke(main, _filled(args, results))
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {_filled(cli, results)}"), result.output

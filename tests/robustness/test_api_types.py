"""The Python API with the types a user naturally passes: ``layer=1``, ``layers=[1, 2]`` work as their text
would; a label that is not a name, an absurd bootstrap size or seed, NaN feature rows are one ``InputError``
(never an ``AttributeError`` or a 12 GB allocation); a ``FittedProbe`` that has predicted can be pickled."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error

import featx
from featx.cli import main
from featx.errors import InputError

# -- accepted as a user would mean them ------------------------------------------------------------------
# (case, command, options): each runs as its text spelling does
ACCEPTED = [
    ("fit layer=1", "fit", {"layer": 1}),
    ("fit layer=[1]", "fit", {"layer": [1]}),
    ("probe layers=[1, 2]", "probe", {"layers": [1, 2], "poolings": ["mean"]}),
    ("probe layers=2", "probe", {"layers": 2, "poolings": "mean"}),
]


@pytest.mark.parametrize(("case", "command", "options"), ACCEPTED, ids=[row[0] for row in ACCEPTED])
def test_natural_types_work(tiny_features, case, command, options):
    defaults = {"folds": 2, "write": False, "label": "label"} | ({"jobs": 1} if command == "probe" else {})
    result = getattr(featx, command)(tiny_features, **defaults, **options)
    if command == "fit":
        assert result.probe.layers == [1]
    else:
        probed = {int(layer) for layer in result.table["layer"] if str(layer).lstrip("-").isdigit()}
        assert probed == set(np.ravel([options["layers"]]))


# -- refused with one InputError before any work ----------------------------------------------------------
# (case, command, options, the expected message: featx.extract, featx.fit and featx.probe name their keywords,
# as the caller wrote them)
REFUSED = [
    ("fit label=5", "fit", {"label": 5}, r"^label=5 is not a name: give it as text"),
    ("probe label=['a']", "probe", {"label": ["a"]}, r"^label=\['a'\] is not a name"),
    ("fit layer=1.5", "fit", {"layer": 1.5}, r"^layer=1\.5 is not understood: give it as text or whole numbers"),
    ("probe layers=[]", "probe", {"layers": []}, r"^layers=\[\] is empty: it takes one value or a comma list"),
    ("probe layers=[1, None]", "probe", {"layers": [1, None]}, r"^layers=\[1, None\] is not understood"),
    ("fit pooling={}", "fit", {"pooling": {}}, r"^pooling=\{\} is not understood"),
    ("fit n_bootstrap=10**9", "fit", {"n_bootstrap": 10**9}, r"^n_bootstrap=1000000000 is too large: at most 100000"),
    ("probe n_bootstrap=10**9", "probe", {"n_bootstrap": 10**9}, r"^n_bootstrap=1000000000 is too large"),
    ("fit seed=10**23", "fit", {"seed": 10**23}, r"^seed=10{23} is too large: at most 4294967295"),
    ("probe seed=2**32", "probe", {"seed": 2**32}, r"^seed=4294967296 is too large"),
    ("extract init_seed=2**64", "extract", {"init_seed": 2**64}, r"^init_seed=18446744073709551616 is too large"),
]


@pytest.mark.parametrize(("case", "command", "options", "pattern"), REFUSED, ids=[row[0] for row in REFUSED])
def test_unnatural_types_are_one_input_error(tiny_features, tmp_path, case, command, options, pattern):
    first = tmp_path / "corpus.csv" if command == "extract" else tiny_features
    with pytest.raises(InputError, match=pattern):
        getattr(featx, command)(first, **options)


@pytest.mark.parametrize(("command", "flag"), [("probe", "--seed"), ("fit", "--seed"), ("extract", "--init-seed")])
def test_a_huge_seed_on_the_command_line_is_one_clear_error(tiny_features, tmp_path, command, flag):
    first = tmp_path / "corpus.csv" if command == "extract" else tiny_features
    extra = ["--label", "label"] if command != "extract" else []
    result = CliRunner().invoke(main, [command, str(first), *extra, flag, "99999999999999999999999"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, rf"{flag} 99999999999999999999999 is too large: at most 4294967295")


# -- a fitted probe ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundle(tiny_features, tmp_path_factory):
    return featx.fit(tiny_features, label="label", layer="1", folds=2, output=tmp_path_factory.mktemp("b") / "m.featx")


def test_a_fitted_probe_pickles_after_predicting(bundle):
    from featx.sklearn import FittedProbe

    estimator = FittedProbe(bundle.path)
    before = estimator.predict(["the cat sat", "a dog ran"])
    copy = pickle.loads(pickle.dumps(estimator))  # the loaded model is not pickled, only the head
    assert list(copy.predict(["the cat sat", "a dog ran"])) == list(before)
    probe = featx.load(bundle.path)
    probe.predict(["the cat sat"])
    assert (
        pickle.loads(pickle.dumps(probe)).predict(["the cat sat"]).tolist() == probe.predict(["the cat sat"]).tolist()
    )


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("method", ["predict_features", "predict_proba_features", "scores_features"])
def test_non_finite_feature_rows_are_refused(bundle, method, value):
    probe = bundle.probe
    X = np.zeros((4, probe.head.n_features), np.float32)
    X[2, 3] = value
    with pytest.raises(InputError, match=r"^1 of 4 feature rows hold NaN or infinite values \(rows 2\)"):
        getattr(probe, method)(X)


# -- every Python entry point of a command: its config's keywords, nothing else --------------------------------
def _entry_points():
    import featx.deploy
    import featx.extraction
    import featx.interventions
    import featx.probing
    import featx.report
    import featx.study

    def plot(first, **options):
        return list(featx.report.plot_files(first, **options))

    return {  # name: (the function, whether a list is its first argument's right type)
        "featx.extract": (featx.extract, False),
        "featx.estimate": (featx.estimate, False),
        "featx.probe": (featx.probe, False),
        "featx.fit": (featx.fit, False),
        "featx.explain": (featx.explain, False),
        "featx.lens": (featx.lens, False),
        "featx.embed": (featx.embed, True),
        "featx.load": (featx.load, False),
        "featx.extraction.merge": (featx.extraction.merge, False),
        "featx.deploy.predict": (featx.deploy.predict, False),
        "featx.deploy.export_directions": (featx.deploy.export_directions, False),
        "featx.probing.erase": (featx.probing.erase, False),
        "featx.probing.neurons": (featx.probing.neurons, False),
        "featx.probing.add_labels": (featx.probing.add_labels, False),
        "featx.interventions.intervene": (featx.interventions.intervene, False),
        "featx.report.compare_results": (featx.report.compare_results, True),
        "featx.report.layer_similarity": (featx.report.layer_similarity, False),
        "featx.report.write_report": (featx.report.write_report, False),
        "featx.report.plot_files": (plot, True),
        "featx.study.run": (featx.study.run, False),
        "featx.study.status": (featx.study.status, False),
    }


ENTRY_POINTS = _entry_points()
TAKES_KEYWORDS = [name for name in ENTRY_POINTS if name not in ("featx.load", "featx.study.status")]


@pytest.mark.parametrize("name", TAKES_KEYWORDS)
def test_an_unknown_keyword_is_an_input_error_naming_it(name, tmp_path, monkeypatch):
    """A mistyped keyword (``colour=``) is one InputError naming it, before any file is read: never a TypeError."""
    monkeypatch.chdir(tmp_path)
    function, _ = ENTRY_POINTS[name]
    with pytest.raises(InputError) as error:
        function(["a text"] if name == "featx.embed" else "x.h5", colour="red")
    assert "colour" in error.value.message, error.value


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_a_first_argument_of_the_wrong_type_is_an_input_error(name, tmp_path, monkeypatch):
    """A number, None or (where one path is taken) a list as the first argument is one InputError, before any file
    is read: never a TypeError or an AttributeError from inside."""
    monkeypatch.chdir(tmp_path)
    function, takes_a_list = ENTRY_POINTS[name]
    for wrong in [3, None] + ([] if takes_a_list else [["a.h5", "b.h5"]]):
        if wrong is None and name in ("featx.probe", "featx.explain", "featx.report.plot_files", "featx.fit"):
            continue  # None: the last file written in this folder (none here: a StoreError saying so)
        with pytest.raises(InputError):
            function(wrong)

"""featx.report.compare and ``featx compare``: lines named by what differs, the table, paired tests per layer."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

from featx.cli import main
from featx.errors import InputError
from featx.report import compare as cmp


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _write(tmp_path, name, **options):
    meta_extra = options.pop("meta", {})
    tent = options.pop("tent", None)
    frame, meta = synthetic_results(**options)
    if tent is not None:  # accuracy peaks at layer ``tent`` and falls 0.05 a layer on either side
        single = frame["kind"] == "single"
        frame.loc[single, "accuracy"] = 0.9 - 0.05 * (frame.loc[single, "layer"].astype(float) - tent).abs()
    meta.update(meta_extra)
    return write_results(frame, meta, tmp_path / name)[0]


def _legend(ax):
    return [text.get_text() for text in ax.get_legend().get_texts()]


@pytest.mark.parametrize("output", ["a.label.probe.png", "a.label.predictions.png"])
def test_an_output_beside_the_results_never_replaces_them(tmp_path, output):
    """-o a.label.probe.png would write its table over a.label.probe.csv, the results it reads (and
    a.label.predictions.png over their per-row predictions): refused before anything is written."""
    first = _write(tmp_path, "a.label.probe", label="a")
    second = _write(tmp_path, "b.label.probe", label="b")
    (tmp_path / "a.label.predictions.csv").write_text("row,id,label,layer_0\n")
    before = {path: path.read_bytes() for path in tmp_path.iterdir()}
    result = CliRunner().invoke(main, ["compare", str(first), str(second), "-o", str(tmp_path / output)])
    assert result.exit_code == 2 and "which is an input of this run" in result.output
    assert {path: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_lines_are_named_by_the_corpus_when_corpora_differ(tmp_path, monkeypatch):
    """Also: a comparison without paired tests (here --no-tests) removes the .tests.csv an earlier run wrote, and
    says so (it stayed, read as this run's tests); the outputs are checked once a run (twice before: compare, then
    Comparison.write), and by Comparison.write called alone."""
    paths = [
        _write(tmp_path, f"{corpus}.label.probe", label="label", meta={"corpus_path": f"/data/{corpus}/data.csv"})
        for corpus in ("trec", "banking77")
    ]  # the shared corpora are all called data.csv
    out, checks = tmp_path / "cmp.svg", []
    stale = out.with_suffix(".tests.csv")
    stale.write_text("a,b,layer,layer_b,metric,score_a,score_b,difference,p,p_holm,significant,tested\n")
    monkeypatch.setattr(cmp, "check_redrawn", lambda output, *args, **kw: checks.append(output))
    monkeypatch.setattr(cmp, "save", lambda figure, output, *args: [output])  # the figure is drawn, not saved
    result = cmp.compare(paths, output=out, tests=False)
    assert result.written == [out, out.with_suffix(".csv")] and not stale.exists() and checks == [out]
    assert f"note: removed {stale}, the paired-tests table of an earlier run: this run has none" in result.format()
    stale.write_text("text,label\nmine,1\n")  # a user's file (check_redrawn refuses it): never removed
    assert result.write(out) == [out, out.with_suffix(".csv")] and stale.exists() and checks == [out, out]
    assert [entry.name for entry in result.entries] == ["trec/data.csv", "banking77/data.csv"]
    assert _legend(result.figure.axes[0])[:2] == [
        "trec/data.csv (mean): best layer 2, 0.83",
        "banking77/data.csv (mean): best layer 2, 0.83",
    ]
    assert result.figure._suptitle.get_text() == "tiny-bert · 2 corpora · 12 rows"


def test_names_join_every_differing_field_and_can_be_given(tmp_path):
    a = _write(tmp_path, "a.probe", label="sentiment", model="bert-base")
    b = _write(tmp_path, "b.probe", label="tense", model="minilm")
    assert [e.name for e in cmp.load_entries([a, b])] == ["bert-base · sentiment", "minilm · tense"]
    assert [e.name for e in cmp.load_entries([a, b], names=["A", "B"])] == ["A", "B"]
    with pytest.raises(InputError, match="--names gives 1 name"):
        cmp.load_entries([a, b], names=["A"])


def test_relative_depth_puts_models_of_any_depth_on_one_axis(tmp_path):
    six = _write(tmp_path, "six.probe", layers=range(7), tent=3, model="six")
    twelve = _write(tmp_path, "twelve.probe", layers=range(13), tent=6, model="twelve")
    result = cmp.compare([six, twelve], relative_depth=True, tests=False)
    ax = result.figure.axes[0]
    lines = {line.get_label().split(" ")[0]: line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert list(lines["six"].get_xdata()) == pytest.approx([i / 6 for i in range(7)])
    assert list(lines["twelve"].get_xdata())[-1] == pytest.approx(1.0)
    assert ax.get_xlabel().startswith("relative depth")
    assert list(result.table["relative_depth"]) == [0.5, 0.5]
    assert list(result.table["best_layer"]) == [3, 6]


def test_table_has_best_layer_pooling_interval_and_selectivity(tmp_path):
    a, b = _write(tmp_path, "a.probe", label="sentiment"), _write(tmp_path, "b.probe", label="number", peak=(1, "cls"))
    table = cmp.compare([a, b], tests=False).table
    assert list(table["name"]) == ["sentiment", "number"]
    assert list(table["pooling"]) == ["mean", "cls"] and list(table["best_layer"]) == [2, 1]
    assert table.loc[0, "accuracy"] == pytest.approx(0.83) and table.loc[0, "accuracy_low"] == pytest.approx(0.78)
    assert table.loc[0, "selectivity"] == pytest.approx(0.83 - 0.54)
    # each score beside its file's majority class (and lexical baseline, where the run fitted one): a TREC run's
    # 0.81 and an SST-2 run's 0.80 read alike without their 0.10 and 0.53
    assert list(table["majority"]) == [0.5, 0.5] and table["lexical"].isna().all()
    from featx.report.text.compare import format_comparison

    printed = format_comparison(table, None, []).splitlines()
    assert printed[0].split()[-3:] == ["majority", "lexical", "select."]
    assert printed[2].split()[-3:] == ["0.500", "-", "+0.290"]


@pytest.mark.slow
def test_paired_tests_between_a_model_and_its_random_init(real_runs):
    result = cmp.compare([real_runs["main"], real_runs["baseline"]])
    names = [entry.name for entry in result.entries]
    assert names[1].endswith("(random init)") and not names[0].endswith("(random init)")
    tests = result.tests
    assert list(tests["layer"]) == [0, 1, 2] and set(tests["b"]) == {names[1]}
    assert tests["p"].between(0, 1).all() and (tests["p_holm"] >= tests["p"] - 1e-12).all()
    main_rows = cmp.load_entries([real_runs["main"]])[0].rows
    if (main_rows["pooling"] == "mean").all():  # the drawn curve is the tested pooling: same accuracies
        assert list(tests["score_a"]) == pytest.approx(list(main_rows["accuracy"]), abs=1e-9)
    assert set(tests["metric"]) == {"accuracy"}
    text = result.format()
    assert "paired test per layer" in text and "Holm over layers" in text and "accuracy A" in text


@pytest.mark.slow
def test_paired_tests_follow_the_chosen_metric(real_runs):
    from sklearn.metrics import f1_score

    result = cmp.compare([real_runs["main"], real_runs["baseline"]], metric="macro_f1")
    tests = result.tests
    assert set(tests["metric"]) == {"macro_f1"} and list(tests["layer"]) == [0, 1, 2]
    predictions = pd.read_csv(str(real_runs["main"]).replace(".probe.csv", ".predictions.csv"), dtype=str)
    for record in tests.itertuples():
        expected = f1_score(predictions["label"], predictions[f"layer_{record.layer}"], average="macro")
        assert record.score_a == pytest.approx(expected, abs=1e-9)
    text = result.format()
    assert "macro_f1 A" in text and "macro_f1 B" in text and "acc A" not in text
    for entry, row in zip(result.entries, result.table.itertuples(), strict=True):
        best = entry.best
        assert row.selectivity == pytest.approx(best["macro_f1"] - best["control_macro_f1"])  # in the same metric


@pytest.mark.slow
def test_no_paired_test_for_different_rows_says_why(tmp_path, real_runs):
    other = _write(tmp_path, "other.probe", label="sentiment")
    result = cmp.compare([real_runs["main"], other])
    assert result.tests.empty
    paired = [note for note in result.notes if note.startswith("no paired test of")]
    assert len(paired) == 1 and "different seed" in paired[0]
    assert all(note in paired or "chosen on the training part" in note for note in result.notes)


@pytest.mark.slow
def test_files_of_the_same_rows_are_paired_whatever_their_names(tmp_path, real_runs, tiny_model):
    """Another corpus file (columns reordered, the label column renamed) of the same rows: paired on its rows."""
    from support.results import tiny_rows
    from support.tiny import write_csv

    import featx

    rows = [(split, label, text) for text, label, split in tiny_rows(80)]
    corpus = write_csv(tmp_path / "renamed.csv", rows, header=("split", "tone", "text"))
    features = featx.extract(
        corpus, model=str(tiny_model), output=tmp_path / "renamed.h5", poolings="mean", progress=False
    )
    other = featx.probe(features.output, label="tone", jobs=1, n_bootstrap=100, output=tmp_path / "renamed.probe")
    main_meta = cmp.load_entries([real_runs["main"]])[0].meta
    assert other.meta["rows_sha256"] == main_meta["rows_sha256"]
    result = cmp.compare([real_runs["main"], other.csv_path])
    assert list(result.tests["layer"]) == [0, 1, 2] and result.tests["p"].between(0, 1).all()
    assert not [note for note in result.notes if note.startswith("no paired test")]


def test_runs_of_different_tested_rows_are_not_paired_and_say_so():
    from featx.report.paired import why_not_paired

    a = {"rows_sha256": "a" * 64, "evaluation": "split", "label": "x"}
    assert "the tested rows differ" in why_not_paired(a, {**a, "rows_sha256": "b" * 64})
    assert "different folds" in why_not_paired(
        {**a, "evaluation": "5-fold cv", "folds": 5}, {**a, "evaluation": "5-fold cv", "folds": 3}
    )


def test_only_a_layer_column_in_ascii_digits_is_a_layer():
    """A predictions file's header is anyone's text: 'layer_²' passed str.isdigit and int() raised."""
    from featx.report.paired import _layer_columns

    header = ["row", "label", "layer_0", "layer_-1", "layer_\u00b2", "layer_--1", "layer_1_0", "layer_\u0663", "layer_"]
    assert _layer_columns(pd.DataFrame(columns=header)) == {0: "layer_0", -1: "layer_-1"}


@pytest.mark.slow
def test_cli_compare_writes_figure_table_and_tests(real_runs, tmp_path):
    out = tmp_path / "cmp" / "models.png"
    outcome = CliRunner().invoke(main, ["compare", str(real_runs["main"]), str(real_runs["baseline"]), "-o", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert {path.name for path in out.parent.iterdir()} == {
        "models.png",
        "models.svg",
        "models.csv",
        "models.tests.csv",
    }
    assert len(pd.read_csv(out.with_suffix(".tests.csv"))) == 3
    assert "(random init)" in out.with_suffix(".svg").read_text()
    assert "best layer" in outcome.output and "paired test per layer" in outcome.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.probe.csv"], "does not exist"),
        (["A", "A", "--names", "x"], "--names gives 1 name(s) for 2 results files"),
        (["A", "--pooling", "max"], "pooling 'max' is not in"),
    ],
)
def test_cli_compare_errors_exit_2_in_one_line(tmp_path, args, message):
    a = _write(tmp_path, "a.probe")
    args = [str(a) if arg == "A" else arg for arg in args]
    outcome = CliRunner().invoke(main, ["compare", *args, "-o", str(tmp_path / "c.png")])
    assert outcome.exit_code == 2, outcome.output
    assert message in outcome.output and "Traceback" not in outcome.output
    assert not (tmp_path / "c.png").exists()


@pytest.mark.slow
def test_paired_tests_under_cross_validation(tiny_model, tmp_path, monkeypatch):
    """Without a split column the probes are cross-validated: the folds are rebuilt from seed and fold count."""
    from support.results import tiny_rows
    from support.tiny import write_csv

    import featx

    monkeypatch.chdir(tmp_path)
    rows = [(text, label) for text, label, _ in tiny_rows(60)]
    corpus = write_csv(tmp_path / "cv.csv", rows, header=("text", "sentiment"))
    paths = []
    for name, random_init in (("model", False), ("random", True)):
        features = featx.extract(
            corpus,
            model=str(tiny_model),
            output=tmp_path / f"{name}.h5",
            poolings="mean",
            random_init=random_init,
            progress=False,
        ).output
        paths.append(
            featx.probe(
                features, label="sentiment", folds=3, jobs=1, n_bootstrap=100, output=tmp_path / f"{name}.probe"
            ).csv_path
        )
    result = cmp.compare(paths)
    assert result.entries[0].meta["evaluation"] == "3-fold cv"
    assert len(result.tests) == 3 and result.tests["p"].between(0, 1).all()
    same = cmp.compare([paths[0], paths[0]], names=["a", "b"]).tests
    assert (same["p"] == 1.0).all() and (same["difference"] == 0).all()  # a file against itself: no difference


def test_relative_depth_divides_by_the_model_s_layers_not_the_highest_probed(tmp_path, tiny_features):
    """A run that probed layers 0 and 1 of the 2-layer tiny model: its layer 1 is half-way up the model (0.5),
    not at its top (1.0, what the highest probed layer made it); a moved features file falls back to that."""
    probed, moved = (
        _write(tmp_path, f"{name}.probe", layers=range(2), peak=(1, "mean"), meta={"features_file": str(path)})
        for name, path in (("low", tiny_features), ("moved", "/gone/f.h5"))
    )
    table = cmp.compare([probed, moved], relative_depth=True, tests=False).table
    assert list(table["best_layer"]) == [1, 1]
    assert list(table["n_layers"]) == [2, 1] and list(table["relative_depth"]) == [0.5, 1.0]


@pytest.mark.slow
def test_relative_depth_pairs_the_layers_the_figure_aligns(real_runs):
    """With --relative-depth the paired tests pair layers at the same depth (as the curves line them up), not
    the same index: 6 vs 2 layers tests 3 against 1, not 2 against 2; the printout says which layers were paired."""
    from featx.report.paired import depth_pairs
    from featx.report.text.compare import format_comparison

    assert depth_pairs(range(7), 6, range(3), 2) == [(0, 0), (3, 1), (6, 2)]
    assert depth_pairs(range(3), 2, range(7), 6) == [(0, 0), (1, 3), (2, 6)]
    assert depth_pairs(range(7), 6, range(5), 4) == [(0, 0), (1, 1), (3, 2), (4, 3), (6, 4)]  # nearest, lower tie
    entries = cmp.load_entries([real_runs["main"], real_runs["baseline"]])
    entries[1].n_layers = 4  # as a 4-layer model whose run kept layers 0-2: its layer 2 is the other's layer 1
    tests, _ = cmp.paired_tests(entries, relative_depth=True)
    assert list(zip(tests.layer, tests.layer_b, strict=True)) == [(0, 0), (1, 2)]  # a's top (b's 4) not predicted
    assert list(cmp.paired_tests(entries)[0].layer_b) == [0, 1, 2]  # without it: layer by layer, as drawn
    text = format_comparison(cmp.comparison_table(entries), tests, [])
    assert "paired by relative depth" in text and "layer A / B" in text and "1 / 2" in text

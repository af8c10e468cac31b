"""featx predict over a corpus: the table, resuming, atomic writing and its one-line errors. The encoder is
stood in by a lookup of the stored features (``support.deploy_data.stored_lookup``), so that these tests
check the streaming and the table; tests/deploy/test_predict_texts.py runs the real encoder."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from support.deploy_data import deploy_rows, stored_lookup
from support.errors import assert_one_clear_error
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.deploy.probe import Probe


@pytest.fixture
def lookup(monkeypatch, split_features):
    monkeypatch.setattr(Probe, "features", stored_lookup(split_features))


def _run(*args):
    return CliRunner().invoke(main, ["predict", *map(str, args), "--no-progress"])


def test_predictions_table_and_score(fitted, split_features, tmp_path, lookup):
    corpus = split_features.parent / "corpus.csv"
    result = _run(fitted.path, corpus, "-o", tmp_path / "p.csv", "--label", "label", "--commit-rows", "16")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "p.csv")
    assert list(table.columns) == ["id", "prediction", "p_neg", "p_pos"]
    assert len(table) == len(deploy_rows())
    assert np.allclose(table[["p_neg", "p_pos"]].sum(axis=1), 1.0)
    with featx.open(split_features) as features:
        X = fitted.probe.features(features.texts)
    assert list(table.prediction) == list(fitted.probe.predict_features(X))
    assert "accuracy" in result.output and not (tmp_path / "p.csv.partial").exists()


def test_top_k_and_jsonl(fitted, split_features, tmp_path, lookup):
    result = _run(fitted.path, split_features.parent / "corpus.csv", "-o", tmp_path / "p.jsonl", "--top-k", "1")
    assert result.exit_code == 0, result.output
    table = pd.read_json(tmp_path / "p.jsonl", lines=True)
    assert list(table.columns) == ["id", "prediction", "top_1", "p_top_1"]
    assert (table.prediction == table.top_1).all()
    # every float as the CSV has it (pandas' to_json wrote 3e-12 as 0.0 and 2.6282156965944572e-05 as 0.0000262822)
    from featx.deploy.table import write_frame

    values = [3e-12, 2.6282156965944572e-05, 0.7903439208948392, float("nan")]
    write_frame(pd.DataFrame({"id": ["a", "b", "c", "d"], "p": values, "word": [1, 2, 3, 4]}), tmp_path / "x.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert [row["p"] for row in rows] == values[:3] + [None] and [row["word"] for row in rows] == [1, 2, 3, 4]


def test_a_failure_mid_run_writes_nothing_and_the_next_run_resumes(fitted, split_features, tmp_path, monkeypatch):
    real = stored_lookup(split_features)
    calls = []

    def failing(probe, texts, text_pairs=None, **overrides):
        calls.append(len(texts))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(probe, texts, text_pairs, **overrides)

    monkeypatch.setattr(Probe, "features", failing)
    output = tmp_path / "p.csv"
    result = _run(fitted.path, split_features.parent / "corpus.csv", "-o", output, "--commit-rows", "20")
    assert result.exit_code == 130 and not output.exists()
    assert (tmp_path / "p.csv.partial").exists()
    monkeypatch.setattr(Probe, "features", real)
    result = _run(fitted.path, split_features.parent / "corpus.csv", "-o", output, "--commit-rows", "20")
    assert result.exit_code == 0, result.output
    assert "resumed: 40 of 90 rows were already predicted" in result.output
    assert len(pd.read_csv(output)) == 90 and not (tmp_path / "p.csv.partial").exists()


def test_a_line_cut_by_a_kill_is_dropped_before_the_next_run_appends(fitted, split_features, tmp_path, monkeypatch):
    """A kill in the middle of a write leaves a partial line at the end of OUT.partial; a resumed run dropped it
    when reading but appended after it, gluing its first line onto the cut one, so a second resume threw every
    saved row away. The cut line is now cut off the file before anything is appended."""
    real = stored_lookup(split_features)
    calls = []

    def failing_at(n):
        def failing(probe, texts, text_pairs=None, **overrides):
            calls.append(len(texts))
            if len(calls) == n:
                raise KeyboardInterrupt
            return real(probe, texts, text_pairs, **overrides)

        return failing

    corpus, output = split_features.parent / "corpus.csv", tmp_path / "p.csv"
    partial = tmp_path / "p.csv.partial"
    monkeypatch.setattr(Probe, "features", failing_at(3))
    assert _run(fitted.path, corpus, "-o", output, "--commit-rows", "20").exit_code == 130
    text = partial.read_text()
    partial.write_text(text[: len(text) - 7])  # the last of the 40 saved rows cut mid-line
    calls.clear()
    monkeypatch.setattr(Probe, "features", failing_at(2))
    result = _run(fitted.path, corpus, "-o", output, "--commit-rows", "20")
    assert result.exit_code == 130 and partial.read_text().endswith("\n")
    calls.clear()
    monkeypatch.setattr(Probe, "features", real)
    result = _run(fitted.path, corpus, "-o", output, "--commit-rows", "20")
    assert result.exit_code == 0, result.output
    assert "resumed: 59 of 90 rows were already predicted" in result.output  # 39 whole rows, then 20 more
    monkeypatch.setattr(Probe, "features", real)
    plain = tmp_path / "plain.csv"
    assert _run(fitted.path, corpus, "-o", plain).exit_code == 0
    assert pd.read_csv(output).equals(pd.read_csv(plain))


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_partial_file_that_is_no_file_is_one_clear_error_not_a_hang(fitted, split_features, tmp_path, lookup, kind):
    """A FIFO planted at OUT.partial would block a plain read for ever; a folder there failed with a traceback."""
    import os

    partial = tmp_path / "p.csv.partial"
    os.mkfifo(partial) if kind == "fifo" else partial.mkdir()
    result = _run(fitted.path, split_features.parent / "corpus.csv", "-o", tmp_path / "p.csv")
    assert_one_clear_error(result.output, "is not the partial predictions file featx predict writes")
    assert result.exit_code == 2 and not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize(
    "lines, width",
    [
        (['["a", "b"]', "[0.5, 0.5]"], 2),  # text where numbers go
        (["[0.5, 0.5]", "[0.5]"], 2),  # rows of two widths
        (["[0.5, 0.5, 0.0]"] * 2, 2),  # another width than the bundle's classes
        (["[0.5, 0.5]"] * 4, 2),  # more rows than the corpus has
        (["{}", "[true, false]"], None),  # an object, flags
        (["[]", "[]"], None),  # empty rows
    ],
    ids=["text", "ragged", "width", "too many", "object", "empty"],
)
def test_a_partial_of_lines_that_are_no_score_rows_is_not_resumed(tmp_path, lines, width):
    """A damaged or planted partial file with the run's key line but other lines (they ended ``featx predict`` in
    a ValueError building the table) is dropped, said, and the run starts again."""
    import json

    from featx.deploy.partial import resume

    partial, key, notes = tmp_path / "p.csv.partial", {"bundle": "b", "corpus": "c"}, []
    partial.write_text("\n".join([json.dumps(key), *lines]) + "\n")
    assert resume(partial, key, notes, 3, width) == [] and not partial.exists()
    assert notes == ["p.csv.partial holds lines that are not this run's score rows: not reused, starting again"]
    partial.write_text("\n".join([json.dumps(key), "[0.25, 0.75]", "[1, 0]"]) + "\n")
    assert resume(partial, key, notes, 3, 2) == [[0.25, 0.75], [1, 0]]


def _corpus(tmp_path, rows, header=("text", "label")):
    return write_csv(tmp_path / "c.csv", rows, header=header)


BAD = {
    "missing text column": (lambda t: _corpus(t, [["x", "pos"]], ("words", "label")), [], r"has no text column 'text'"),
    "empty corpus": (lambda t: _corpus(t, []), [], r"has a header but no rows"),
    "a pairs corpus for a single-text bundle": (  # not extract's advice to read both columns as pairs
        lambda t: _corpus(t, [["a cat", "a dog", "pos"]], ("sentence_A", "sentence_B", "label")),
        [],
        r"has no text column 'text'.* hint: this bundle was fitted on single texts: name the column to read with "
        r"--text-col NAME",
    ),
    "unseen labels": (
        lambda t: _corpus(t, [["the cat", "pos"], ["a dog", "meh"]]),
        ["--label", "label"],
        r"label\(s\) 'meh' that the probe never saw",
    ),
    "threshold on three classes": (lambda t: _corpus(t, [["the cat", "a"]]), ["--threshold", "0.5"], r"--threshold"),
    "missing score column": (
        lambda t: _corpus(t, [["the cat", "pos"]]),
        ["--label", "gold"],
        r"no label column 'gold' to score against \(label columns: label\)\s+hint: name one of them with --label",
    ),
    "an empty text": (
        lambda t: _corpus(t, [["the cat", "pos"], ["  ", "neg"]]),
        [],
        r"1 empty or whitespace-only text\(s\) in column 'text': row 1 .* hint: fill them in, or leave those rows out",
    ),
    "zero batch size": (lambda t: _corpus(t, [["the cat", "pos"]]), ["--batch-size", "0"], r"--batch-size 0 must be"),
    "missing corpus": (lambda t: t / "nope.csv", [], r"corpus file \S+nope\.csv does not exist\s+hint: check the path"),
    "pair column on single texts": (
        lambda t: _corpus(t, [["the cat", "pos"]]),
        ["--text-pair-col", "label"],
        r"fitted on single texts",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_predict_input_is_one_clear_error(fitted, split_features, tmp_path, case, lookup):
    make, extra, pattern = BAD[case]
    bundle = fitted.path
    if case == "threshold on three classes":
        bundle = featx.fit(split_features, label="topic", layer="1", pooling="mean", output=tmp_path / "t.featx").path
    result = _run(bundle, make(tmp_path), "-o", tmp_path / "p.csv", *extra)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)
    assert not (tmp_path / "p.csv").exists()


def test_threshold_on_a_binary_probe(fitted, split_features, tmp_path, lookup):
    corpus = split_features.parent / "corpus.csv"
    result = _run(fitted.path, corpus, "-o", tmp_path / "p.csv", "--threshold", "0.0")
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(tmp_path / "p.csv").prediction) == {"pos"}


def test_stdin_to_tsv(fitted, split_features, tmp_path, lookup):
    corpus = (split_features.parent / "corpus.csv").read_text()
    output = tmp_path / "p.tsv"
    result = CliRunner().invoke(
        main, ["predict", str(fitted.path), "-", "-o", str(output), "--no-progress"], input=corpus
    )
    assert result.exit_code == 0, result.output
    assert list(pd.read_csv(output, sep="\t").columns) == ["id", "prediction", "p_neg", "p_pos"]


def test_stdin_needs_an_output(fitted, lookup):
    result = CliRunner().invoke(main, ["predict", str(fitted.path), "-", "--no-progress"], input="text\nthe cat\n")
    assert result.exit_code == 2
    assert_one_clear_error(
        result.output, r"reading the corpus from stdin needs -o FILE \(or -o - for standard output\)"
    )


def test_dash_writes_the_csv_to_standard_output_and_the_summary_to_standard_error(
    fitted, split_features, tmp_path, lookup, monkeypatch
):
    corpus = split_features.parent / "corpus.csv"
    assert _run(fitted.path, corpus, "-o", tmp_path / "p.csv", "--label", "label").exit_code == 0
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["predict", str(fitted.path), "-", "-o", "-", "--label", "label", "-q"], input=corpus.read_text()
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == (tmp_path / "p.csv").read_text()  # the same table, and nothing else
    assert "accuracy" in result.stderr
    assert f"wrote {len(deploy_rows())} predictions to standard output" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.csv"]  # no file named -, no partial file


@pytest.mark.parametrize("quiet", ["-q", "--quiet", "--no-progress", None])
def test_quiet_as_in_extract_leaves_out_the_progress_bar(fitted, split_features, tmp_path, lookup, quiet, monkeypatch):
    from featx.cli import generate

    monkeypatch.setattr(generate, "_on_terminal", lambda stream: True)  # a bar is drawn on a terminal only
    corpus = split_features.parent / "corpus.csv"
    args = ["predict", str(fitted.path), str(corpus), "-o", str(tmp_path / "p.csv")] + ([quiet] if quiet else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert ("predict:" in result.output) is (quiet is None)
    assert "wrote" in result.output and len(pd.read_csv(tmp_path / "p.csv")) == len(deploy_rows())


@pytest.mark.parametrize("name", ["p.parquet", "p.json", "p.xlsx", "predictions"])
def test_an_output_of_another_format_is_refused_before_any_row(fitted, split_features, tmp_path, name, monkeypatch):
    monkeypatch.setattr(Probe, "features", lambda *a, **k: pytest.fail("no row is predicted"))
    result = _run(fitted.path, split_features.parent / "corpus.csv", "-o", tmp_path / name)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, r"writes \.csv, \.tsv or \.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_an_output_in_a_missing_folder_is_refused_before_any_row(fitted, split_features, tmp_path, monkeypatch):
    monkeypatch.setattr(Probe, "features", lambda *a, **k: pytest.fail("no row is predicted"))
    result = _run(fitted.path, split_features.parent / "corpus.csv", "-o", tmp_path / "missing" / "p.csv")
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, r"output folder \S+missing does not exist")
    assert list(tmp_path.iterdir()) == []


def test_predict_does_not_print_what_the_reader_noticed_of_label_columns(fitted, split_features, tmp_path, lookup):
    table = pd.read_csv(split_features.parent / "corpus.csv")
    table["score"] = [f"{row / 7:.4f}" for row in range(len(table))]  # a continuous number: extract's note
    corpus = tmp_path / "scored.csv"
    table.to_csv(corpus, index=False)
    assert any("looks continuous" in note for note in featx.extraction.read_corpus(corpus).label_notes)
    result = _run(fitted.path, corpus, "-o", tmp_path / "p.csv")
    assert result.exit_code == 0, result.output
    assert "looks continuous" not in result.output and "regression" not in result.output
    assert len(pd.read_csv(tmp_path / "p.csv")) == len(table)


def test_a_score_on_the_corpus_the_probe_was_fitted_on_says_so_and_scores_its_test_rows_alone(
    fitted, split_features, tmp_path, lookup
):
    # The bundle's own corpus: most of its labelled rows trained the probe, so its accuracy is no held-out figure;
    # the note gives the test-split rows' score, which is featx fit's test score.
    result = _run(fitted.path, split_features.parent / "corpus.csv", "-o", tmp_path / "p.csv", "--label", "label")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(split_features.parent / "corpus.csv")
    n_train, n_test = int((table.split == "train").sum()), int((table.split == "test").sum())
    assert f"the probe was fitted (featx fit) on this corpus: {n_train} of these {len(table)} labelled rows" in (
        result.output
    )
    assert f"its {n_test} test-split rows alone: accuracy {fitted.test['score']:.4f} on {n_test} labelled rows" in (
        result.output
    )
    # Rows it never saw (another file): no such note, and the score stands beside the constant prediction's.
    held_out = tmp_path / "held_out.csv"
    table[table.split == "test"].to_csv(held_out, index=False)
    result = _run(fitted.path, held_out, "-o", tmp_path / "q.csv", "--label", "label")
    assert result.exit_code == 0, result.output
    assert "fitted (featx fit) on this corpus" not in result.output
    counts = table[table.split == "test"].label.value_counts()
    top = sorted(name for name, count in counts.items() if count == counts.max())[0]  # a tie: the first class
    assert f"on {n_test} labelled rows; most frequent class among them ('{top}'): {counts.max() / n_test:.4f}" in (
        result.output
    )


def test_without_test_rows_the_note_points_to_the_cross_validated_score(fitted, split_features):
    from featx.deploy.table import fitted_corpus_note
    from featx.extraction import read_corpus

    corpus = read_corpus(split_features.parent / "corpus.csv")
    corpus.split = None  # as a corpus without a split column: every labelled row trained the probe
    frame = pd.DataFrame({"prediction": ["neg"] * len(corpus)})
    truth = np.zeros(len(corpus), dtype=np.int64)
    note = fitted_corpus_note(fitted.probe, corpus, frame, truth)
    cv = fitted.probe.info["selection"]["cv_score"]
    assert note == (
        "the probe was fitted (featx fit) on this corpus: its training rows are among the scored ones, so the score "
        f"above is not held out; featx fit's cross-validated accuracy: {cv:.4f}"
    )
    corpus.sha256 = "0" * 64  # another corpus file: nothing to say
    assert fitted_corpus_note(fitted.probe, corpus, frame, truth) is None


def test_predict_takes_the_bundles_id_column_when_the_corpus_has_it(fitted, split_features, tmp_path, monkeypatch):
    """A bundle fitted on a features file extracted with --id-col pair_id: predict's ids come from pair_id by
    default (they were row numbers); --id-col still wins, --row-ids numbers the rows though the column is there, and a
    corpus without the column keeps row numbers. Repeated ids in the bundle's column point to --row-ids."""
    from featx.deploy import prediction

    probe = featx.load(fitted.path)
    probe.extraction["id_col"] = "pair_id"  # as a bundle of such a file records it
    monkeypatch.setattr(prediction, "load", lambda path: probe)
    monkeypatch.setattr(Probe, "features", stored_lookup(split_features))
    table = pd.read_csv(split_features.parent / "corpus.csv").head(6)
    table["pair_id"], table["other"] = [f"p{i}" for i in range(6)], [f"o{i}" for i in range(6)]
    with_ids = tmp_path / "with_ids.csv"
    table.to_csv(with_ids, index=False)
    table.drop(columns=["pair_id"]).to_csv(tmp_path / "without.csv", index=False)
    for corpus, extra, ids in [
        (with_ids, [], [f"p{i}" for i in range(6)]),
        (with_ids, ["--id-col", "other"], [f"o{i}" for i in range(6)]),
        (with_ids, ["--row-ids"], [str(i) for i in range(6)]),
        (tmp_path / "without.csv", [], [str(i) for i in range(6)]),
        (tmp_path / "without.csv", ["--row-ids"], [str(i) for i in range(6)]),
    ]:
        result = _run(fitted.path, corpus, "-o", tmp_path / "p.csv", "--overwrite", *extra)
        assert result.exit_code == 0, result.output
        assert list(pd.read_csv(tmp_path / "p.csv", dtype=str).id) == ids
    table.assign(pair_id="p").to_csv(with_ids, index=False)  # one id for every row: not ids of rows
    result = _run(fitted.path, with_ids, "-o", tmp_path / "q.csv")
    assert result.exit_code == 2
    assert_one_clear_error(
        result.output,
        r"id 'p' appears twice in column 'pair_id' .* hint: the ids come from the bundle's id column 'pair_id': pass "
        r"--row-ids to number the rows instead, or --id-col to name another column",
    )
    assert _run(fitted.path, with_ids, "-o", tmp_path / "q.csv", "--row-ids").exit_code == 0
    result = _run(fitted.path, with_ids, "-o", tmp_path / "r.csv", "--row-ids", "--id-col", "other")
    assert result.exit_code == 2
    assert_one_clear_error(result.output, r"--row-ids and --id-col cannot be combined")


# One refusal each, as featx.deploy.predict's Python caller reads it (keywords; a command line as a Python call)
# and as featx predict prints it (flags): (options, python, cli arguments, cli); None: Python only.
PHRASED = [
    (
        {"top_k": 2, "threshold": 0.5},
        "top_k and threshold cannot be combined\n  hint: use top_k for many classes, threshold for two",
        ["--top-k", "2", "--threshold", "0.5"],
        "--top-k and --threshold cannot be combined\n  hint: use --top-k for many classes, --threshold for two",
    ),
    (
        {"text_pair_col": "label"},
        "text_pair_col: this bundle was fitted on single texts\n  hint: leave text_pair_col out",
        ["--text-pair-col", "label"],
        "--text-pair-col: this bundle was fitted on single texts\n  hint: leave --text-pair-col out",
    ),
    (
        {"output": "OUT/p.parquet"},
        "output='OUT/p.parquet': featx predict writes .csv, .tsv or .jsonl (by the file's ending)\n"
        "  hint: name the predictions file with one of them, e.g. output='p.csv'",
        ["-o", "OUT/p.parquet"],
        "-o OUT/p.parquet: featx predict writes .csv, .tsv or .jsonl (by the file's ending)\n"
        "  hint: name the predictions file with one of them, e.g. -o p.csv",
    ),
    (
        {"corpus": None},
        "predict needs a bundle and a corpus\n"
        "  hint: featx.deploy.predict('model.featx', corpus='corpus.csv', output='predictions.csv')",
        None,
        None,
    ),
]


@pytest.mark.parametrize("options, python, args, cli", PHRASED, ids=[str(case[0]) for case in PHRASED])
def test_a_refusal_names_what_the_caller_gave(fitted, split_features, tmp_path, options, python, args, cli):
    """featx.deploy.predict names the keywords (top_k), featx predict the flags (--top-k); neither leaks into the
    other. Each is refused before any row is predicted."""
    from featx.deploy import predict

    corpus, folder = split_features.parent / "corpus.csv", str(tmp_path)
    options = {
        "corpus": corpus,
        **{k: v.replace("OUT", folder) if isinstance(v, str) else v for k, v in options.items()},
    }
    with pytest.raises(featx.FeatxError) as error:
        predict(fitted.path, **options)
    assert str(error.value) == python.replace("OUT", folder) and "--" not in str(error.value), str(error.value)
    if args is not None:
        result = _run(fitted.path, corpus, *(arg.replace("OUT", folder) for arg in args))
        assert result.exit_code == 2 and result.output.startswith(f"featx: error: {cli.replace('OUT', folder)}")
    assert list(tmp_path.iterdir()) == []


def test_a_class_column_scored_against_a_number_probe_is_refused_with_a_hint():
    from types import SimpleNamespace

    from featx.deploy.table import check_scoring
    from featx.errors import InputError
    from featx.io import label_column

    corpus = SimpleNamespace(labels={"gold": label_column("gold", ["pos", "neg"])})
    regression = SimpleNamespace(level="sentence", classes=None)
    with pytest.raises(InputError, match="label column 'gold' is not numeric; this probe predicts numbers") as error:
        check_scoring(corpus, "gold", regression)
    assert error.value.hint == "score against a column of numbers, or leave --label out"  # as the CLI says it

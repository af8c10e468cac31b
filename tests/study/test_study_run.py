"""Running a study: every cell once, a failing cell recorded while the others go on (exit 1), nothing done
redone, an interrupted run resumed to the same table, a second run refused while one holds the output, the
status and dry run, and the results table's columns."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from support.study_files import study_dict, to_toml, write_corpora

import featx.study
from featx.cli import main
from featx.errors import StoreError
from featx.study import RESULT_COLUMNS, load, status

FAILED = {"extract/tiny/bad", "extract/rand/bad", "probe/tiny/bad/label", "probe/rand/bad/label"}


@pytest.mark.slow
def test_a_study_runs_every_cell_and_records_the_failing_ones(done_study):
    study, result, lines = done_study
    assert len(result.statuses) == 6 + 8 and set(result.failed) == FAILED and result.exit_code == 1
    assert set(result.stages) == {"prepare", "extract", "probe", "close", "tables"}
    assert (
        "its extraction failed (extract/tiny/bad)"
        in status(study).set_index("cell").loc["probe/tiny/bad/label", "error"]
    )
    assert "has no text column 'text'" in result.errors["extract/rand/bad"]
    assert any(line.startswith("probe/rand/sents/topic: done") for line in lines)
    table = result.results
    assert list(table.columns) == list(RESULT_COLUMNS)
    assert set(zip(table.model, table.corpus, table.label, strict=True)) == {
        (model, corpus, label) for model in ("tiny", "rand") for corpus, label in
        (("sents", "label"), ("sents", "topic"), ("other", "topic"))
    }  # fmt: skip
    assert len(table) == 6 * 3 and (table.groupby(["model", "corpus", "label"]).chosen.sum() == 1).all()
    assert (table.relative_depth == table.layer / 2).all() and (table.n_layers == 2).all()
    assert table.random_init.tolist() == [False] * 9 + [True] * 9 and table.seed.tolist()[-1] == 0
    lexical = table.groupby(["corpus", "label"]).lexical.nunique()
    assert (lexical == 1).all() and table.lexical.notna().all()
    from featx.probing import load_results
    from featx.report import compare_results

    cells = [cell for cell in result.plan.probes if cell.corpus.name != "bad"]
    for cell in cells:  # each cell's own results carry its task's lexical baseline, fitted once: the same figure
        frame, meta = load_results(cell.results)
        row = frame[frame.kind == "lexical"]
        task = table[(table.corpus == cell.corpus.name) & (table.label == cell.label)]
        assert len(row) == 1 and row.accuracy.iloc[0] == task.lexical.iloc[0], cell.task.key
        assert cell.lexical or (meta["lexical"]["model"] == "tiny" and row.p_vs_best.isna().all())
    compared = compare_results([cell.results for cell in cells if cell.label == "label"])  # tiny's and rand's
    assert compared.table.lexical.notna().all() and compared.table.lexical.nunique() == 1
    compared.close()
    assert (table.selectivity == table.score - table.control).all()
    pd.testing.assert_frame_equal(load(result.plan.config.output), table)
    from featx.io import read_csv

    csv = read_csv(result.plan.config.output / "results.csv")
    assert list(csv.columns) == list(RESULT_COLUMNS) and len(csv) == len(table)
    assert len(result.summary) == 6 and len(result.paired) == 3  # one pair per task
    assert result.paired.p.notna().all() and (result.paired.note == "").all()


@pytest.mark.slow
def test_a_grouped_corpus_keeps_its_groups_whole_in_every_probe_and_says_so(done_study):
    """``sents`` is grouped by ``doc`` (``[[corpora]] group``), ``other`` is not: each sents probe (every model's,
    the lexical baseline's) ran with --group doc, the predictions give each row's group (the paired tests draw
    the groups again from them), and the table, the summary and the printout say which corpora are grouped."""
    study, result, _ = done_study
    output = result.plan.config.output
    for model in ("tiny", "rand"):
        for label in ("label", "topic"):
            meta = json.loads((output / model / "sents" / f"{label}.probe.json").read_text())["meta"]
            assert (meta["group"], meta["n_groups"], meta["evaluation"]) == ("doc", 15, "split")
        assert "group" not in json.loads((output / model / "other" / "topic.probe.json").read_text())["meta"]
        assert "group" in pd.read_csv(output / model / "sents" / "label.predictions.csv").columns
    groups = result.results.groupby("corpus").group.unique().to_dict()
    assert list(groups["sents"]) == ["doc"] and pd.isna(groups["other"]).all()
    assert result.summary.set_index(["model", "corpus", "label"]).group.fillna("").to_dict() == {
        (model, corpus, label): "doc" if corpus == "sents" else ""
        for model in ("tiny", "rand") for corpus, label in (("sents", "label"), ("sents", "topic"), ("other", "topic"))
    }  # fmt: skip
    printed = featx.study.format_summary(result)
    assert "tiny sents/label (grouped by doc): layer" in printed and "tiny other/topic: layer" in printed
    assert (result.paired.note == "").all()  # the grouped tasks' pairs tested, on their groups


@pytest.mark.slow  # the done_study fixture: a whole study (~1.8 s)
def test_the_printed_summary_carries_each_probes_warnings(done_study):
    """featx probe warns where a figure means little (here: a test split of a few rows, which still gives
    "significant" paired tests); the study's printout says so too, per cell, not only each probe's JSON."""
    _, result, _ = done_study
    printed = featx.study.format_summary(result)
    meta = json.loads((result.plan.config.output / "tiny" / "sents" / "label.probe.json").read_text())["meta"]
    warned = [note for note in meta["notes"] if note.startswith("warning: only")]
    assert warned and f"warning: tiny sents/label: {warned[0].removeprefix('warning: ')}" in printed
    assert result.warnings == tuple(line for line in printed.splitlines() if line.startswith("warning: "))


@pytest.mark.slow
def test_a_changed_group_makes_that_corpus_probes_pending_and_nothing_else(done_study):
    study, _, _ = done_study
    corpora = [{**entry, "group": "topic", "labels": ["label"]} if entry["name"] == "sents" else entry
               for entry in study["corpora"]]  # fmt: skip
    shown = status({**study, "corpora": corpora}).set_index("cell").status
    assert shown["probe/tiny/sents/label"] == shown["probe/rand/sents/label"] == "pending"
    assert shown["extract/tiny/sents"] == shown["probe/tiny/other/topic"] == "done"


@pytest.mark.slow  # the done_study fixture: a whole study (~1.8 s)
def test_the_same_command_again_redoes_nothing_done(done_study, tmp_path):
    study, result, _ = done_study
    output = result.plan.config.output
    before = {path.name: json.loads(path.read_text()) for path in (output / ".study").glob("*.json")}
    path = tmp_path / "study.toml"
    path.write_text(to_toml(study))
    ran = CliRunner().invoke(main, ["study", "run", str(path)])
    assert ran.exit_code == 1, ran.output
    assert "extract/tiny/sents: up to date" in ran.output and "probe/rand/other/topic: up to date" in ran.output
    assert "extract/tiny/bad: failed" in ran.output and "4 failed" in ran.output
    after = {path.name: json.loads(path.read_text()) for path in (output / ".study").glob("*.json")}
    done = [name for name, state in before.items() if state["status"] == "done"]
    assert len(done) == 10 and all(after[name] == before[name] for name in done)
    shown = CliRunner().invoke(main, ["study", "status", str(path)])
    assert shown.exit_code == 0 and "10 done, 0 pending, 4 failed" in shown.output
    assert "probe/tiny/sents/label: done  " in shown.output


@pytest.mark.slow
def test_an_interrupted_study_resumes_to_the_same_table(done_study, tiny_model, study_corpora, tmp_path, monkeypatch):
    study = study_dict(tiny_model, study_corpora, tmp_path / "out", bad=False)
    import featx.study.tasks as tasks

    original, calls = tasks.probe_cell, []

    def killed_on_the_third(options):
        calls.append(options["label"])
        if len(calls) == 3:
            raise KeyboardInterrupt  # as a kill would stop it: the cell is left "running"
        return original(options)

    monkeypatch.setattr(tasks, "probe_cell", killed_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        featx.study.run(study)
    monkeypatch.undo()
    shown = status(study).set_index("cell").status
    assert shown["probe/tiny/sents/label"] == "done" and shown["probe/tiny/other/topic"] == "pending (interrupted)"
    assert shown["probe/rand/sents/label"] == "pending"
    lines: list[str] = []
    result = featx.study.run(study, echo=lines.append)
    assert lines[:6] == [f"extract/{m}/{c}: up to date" for m in ("tiny", "rand") for c in ("sents", "other")][:4] + [
        "probe/tiny/sents/label: up to date", "probe/tiny/sents/topic: up to date"]  # fmt: skip
    assert result.exit_code == 0 and not result.failed
    pd.testing.assert_frame_equal(result.results, done_study[1].results)
    pd.testing.assert_frame_equal(result.summary, done_study[1].summary)


@pytest.mark.slow  # a study's extraction stopped, then run again (~2 s)
def test_ctrl_c_inside_an_extraction_stops_the_study(done_study, tiny_model, study_corpora, tmp_path, monkeypatch):
    """featx.extract turns Ctrl-C into its Interrupted error (the rows it kept): the study stops there, the cell
    stays pending, and no other cell runs or is failed; it was recorded as failed while the run went on."""
    study = study_dict(tiny_model, study_corpora, tmp_path / "out", bad=False)
    from featx.extraction.run import loop

    original, calls = loop.run, []

    def ctrl_c_in_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(loop, "run", ctrl_c_in_the_second)
    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        featx.study.run(study, echo=lines.append)
    monkeypatch.undo()
    assert len(calls) == 2 and lines == ["extract/tiny/sents: done" + lines[0].split("done", 1)[1]]
    shown = status(study).set_index("cell").status
    assert shown["extract/tiny/other"] == "pending (interrupted)"
    assert (shown.drop(["extract/tiny/sents", "extract/tiny/other"]) == "pending").all()
    result = featx.study.run(study)
    assert result.statuses["extract/tiny/other"] == "done"
    pd.testing.assert_frame_equal(result.results, done_study[1].results)


@pytest.mark.slow  # two extractions of 32 rows by the tiny model (~1 s)
def test_an_extraction_killed_then_given_other_options_starts_over(tiny_model, study_corpora, tmp_path, monkeypatch):
    """A study killed inside an extraction leaves its unfinished file; the study file then edited (another
    max_length) makes the cell pending, and its run starts that file over: a study cannot pass --overwrite (it is
    set by the study), so the cell failed on every run with "run the original command to resume it, or pass
    --overwrite" until the file was removed by hand (the same options resume it: the test above)."""
    from support.helpers import interrupt_after_commits

    from featx.extraction import ExtractConfig
    from featx.study.plan import config_args
    from featx.study.tasks import extract_cell

    output = tmp_path / "features.h5"
    options = {"model": str(tiny_model), "output": str(output), "poolings": "mean", "progress": False}
    killed = ExtractConfig(corpus=str(study_corpora["other"]), commit_rows=8, **options)
    interrupt_after_commits(monkeypatch, 1)
    with pytest.raises(Exception, match="interrupted"):
        extract_cell(config_args(killed))
    monkeypatch.undo()
    assert not output.exists() and output.with_name("features.h5.partial").is_file()
    done = extract_cell(config_args(killed.replace(max_length=16)))
    assert done["status"] != "up-to-date" and done["rows"] == 32
    from featx.store import open_features

    with open_features(output) as features:
        assert features.n_rows == 32


@pytest.mark.slow
def test_a_second_run_is_refused_while_one_holds_the_output(done_study):
    from featx.study.runner import lock_of

    study, result, _ = done_study
    with lock_of(result.plan.config.output), pytest.raises(StoreError, match="another featx study run .*is writing"):
        featx.study.run(study)


@pytest.mark.slow  # the done_study fixture: a whole study (~1.8 s)
def test_dry_run_lists_what_is_done_and_estimates_the_rest(done_study, tmp_path, monkeypatch):
    """Each pending extraction estimated (bad's fail reading the corpus), each model loaded once for its corpora."""
    from featx.extraction.model import loading

    study, _, _ = done_study
    for name, rows in (("more", 8), ("most", 6)):
        (tmp_path / f"{name}.csv").write_text("text,label\n" + "".join(f"the {name} {i},a\n" for i in range(rows)))
    added = [{"name": name, "path": str(tmp_path / f"{name}.csv")} for name in ("more", "most")]
    loads: list[bool] = []  # each load's random_init
    load = loading.load_configured
    monkeypatch.setattr(loading, "load_configured", lambda config: loads.append(config.random_init) or load(config))
    table = featx.study.dry_run({**study, "corpora": [*study["corpora"], *added]}).set_index("cell")
    assert (
        table.loc["extract/tiny/sents", "status"] == "done" and table.loc["probe/rand/sents/topic", "status"] == "done"
    )
    assert loads == [False, True]  # tiny, then rand: each once, not once per corpus
    for model, corpus, rows in (("tiny", "more", 8), ("rand", "more", 8), ("tiny", "most", 6), ("rand", "most", 6)):
        new = table.loc[f"extract/{model}/{corpus}"]
        assert new["status"] == "pending" and new["rows"] == rows and new["bytes"] > 0 and new["seconds"] > 0
    assert table.loc["probe/tiny/more/label", "lexical"] and not table.loc["probe/rand/more/label", "lexical"]
    text = featx.study.format_dry_run(table.reset_index())
    assert "10 extractions and 12 probes; to run: 6 extractions" in text


@pytest.mark.slow
def test_two_probe_workers_give_the_same_table(done_study, tiny_model, study_corpora, tmp_path):
    study = study_dict(tiny_model, study_corpora, tmp_path / "out", bad=False, jobs=2)
    result = featx.study.run(study)
    pd.testing.assert_frame_equal(result.results, done_study[1].results)
    pd.testing.assert_frame_equal(result.paired, done_study[1].paired)


@pytest.mark.slow
def test_changed_extract_options_redo_the_cells_they_change(tiny_model, study_corpora, tmp_path):
    study = {
        "study": {"output": str(tmp_path / "out")},
        "models": [{"name": "tiny", "model": str(tiny_model)}],
        "corpora": [{"name": "sents", "path": str(study_corpora["sents"]), "labels": ["topic"]}],
        "extract": {"pooling": "mean"},
        "probe": {"n_bootstrap": 100},
    }
    assert featx.study.run(study).results.pooling.unique().tolist() == ["mean"]
    lines: list[str] = []
    result = featx.study.run({**study, "extract": {"pooling": "mean,cls"}}, echo=lines.append)
    assert lines[0].startswith("extract/tiny/sents: done") and lines[1].startswith("probe/tiny/sents/topic: done")
    assert result.exit_code == 0 and sorted(result.results.pooling.unique()) == ["cls", "mean"]


@pytest.mark.slow
def test_an_edited_corpus_redoes_its_cells_only(tiny_model, study_corpora, tmp_path):
    """A corpus rewritten between runs (same path, other rows) makes its extraction and probes pending; the
    study said "up to date" and kept the old corpus's results."""
    import shutil

    corpus = shutil.copy(study_corpora["sents"], tmp_path / "sents.csv")
    other = shutil.copy(study_corpora["other"], tmp_path / "other.csv")
    study = {
        "study": {"output": str(tmp_path / "out")},
        "models": [{"name": "tiny", "model": str(tiny_model)}],
        "corpora": [{"name": "sents", "path": str(corpus)}, {"name": "other", "path": str(other), "labels": ["topic"]}],
        "extract": {"pooling": "mean"},
        "probe": {"n_bootstrap": 100},
    }
    assert set(featx.study.run(study).results.n_train) == {30, 24}
    rows = pd.read_csv(corpus).head(20)
    rows.to_csv(corpus, index=False)
    assert status(study).set_index("cell").status.to_dict() == {
        "extract/tiny/sents": "pending", "extract/tiny/other": "done",
        "probe/tiny/sents/label": "pending", "probe/tiny/other/topic": "done",
    }  # fmt: skip
    ran: list[str] = []
    result = featx.study.run(study, echo=ran.append)
    said = dict(line.split(": ", 1) for line in ran[:4])
    assert {key: text.split()[0] for key, text in said.items()} == {
        "extract/tiny/sents": "done", "extract/tiny/other": "up",
        "probe/tiny/sents/label": "done", "probe/tiny/other/topic": "up",
    }  # fmt: skip
    table = result.results.set_index("corpus")
    assert set(table.loc["sents", "n_train"]) == {(rows.split == "train").sum()} and set(
        table.loc["other", "n_train"]
    ) == {24}


@pytest.mark.slow  # the done_study fixture: a whole study (~1.8 s)
def test_without_pyarrow_the_table_is_csv_and_loads_alike(done_study, tmp_path, monkeypatch):
    import featx.study.results as results

    table = done_study[1].results
    (tmp_path / "results.parquet").write_bytes(b"an older table")
    monkeypatch.setattr(results, "has_parquet", lambda: False)
    assert results.write_results(table, tmp_path) == [tmp_path / "results.csv"]
    assert not (tmp_path / "results.parquet").exists()
    pd.testing.assert_frame_equal(load(tmp_path), table, check_dtype=False)
    with pytest.raises(StoreError, match="holds no study results"):
        load(tmp_path / "none")


def test_a_link_planted_in_the_output_folder_is_refused_before_any_work(tiny_model, study_corpora, tmp_path):
    study = study_dict(tiny_model, study_corpora, tmp_path / "out", bad=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out/rand").symlink_to(elsewhere)
    path = tmp_path / "study.toml"
    path.write_text(to_toml(study))
    ran = CliRunner().invoke(main, ["study", "run", str(path)])
    assert ran.exit_code == 2 and "featx: error: " in ran.output and "out/rand is a symbolic link" in ran.output
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "out/tiny").exists()  # no cell ran


@pytest.mark.slow
def test_a_run_hashes_each_corpus_once_and_an_edited_corpus_redoes_its_cells(tiny_model, tmp_path, monkeypatch):
    import featx.extraction.inputs.digests as digests

    corpora = write_corpora(tmp_path / "corpora")
    study = study_dict(tiny_model, corpora, tmp_path / "out", bad=False)
    reads: list[str] = []
    original = digests.hash_file

    def counted(path):
        reads.append(str(path))
        return original(path)

    monkeypatch.setattr(digests, "hash_file", counted)
    featx.study.run(study)  # 2 models x 2 corpora x 2 labels: a plan and 8 probes' freshness checks read them
    assert sorted(reads) == sorted(str(corpora[name]) for name in ("other", "sents"))
    with corpora["sents"].open("a") as handle:
        handle.write("one more sentence,pos,a,train,r99\n")
    reads.clear()
    lines: list[str] = []
    result = featx.study.run(study, echo=lines.append)
    assert sorted(reads) == sorted(str(corpora[name]) for name in ("other", "sents"))
    redone = {line.split(":")[0] for line in lines if ": done" in line}
    kept = {line.split(":")[0] for line in lines if ": up to date" in line}
    assert {"extract/tiny/sents", "extract/rand/sents", "probe/tiny/sents/label", "probe/rand/sents/topic"} <= redone
    assert {"extract/tiny/other", "extract/rand/other", "probe/tiny/other/topic", "probe/rand/other/topic"} <= kept
    assert result.results.query("corpus == 'sents'").n_train.max() > 0


def test_a_study_file_alone_never_turns_remote_code_on(tiny_model, study_corpora, tmp_path):
    """A study file is someone else's file too: its trust_remote_code = true ran a model folder's own Python code
    with no flag given; it is refused, at its line and before any work, unless the run is given --trust-remote-code."""
    from featx.errors import InputError

    study = study_dict(tiny_model, study_corpora, tmp_path / "out", bad=False)
    study["models"][1]["trust_remote_code"] = True
    with pytest.raises(InputError, match=r"\[\[models\]\] #2 trust_remote_code: .* code of model 'rand'") as caught:
        featx.study.run(study)
    assert caught.value.hint.startswith("if you trust that code, run the study with trust_remote_code=True")
    path = tmp_path / "study.toml"
    path.write_text(to_toml(study))
    ran = CliRunner().invoke(main, ["study", "run", str(path)])
    assert (
        ran.exit_code == 2 and f"{path}, line " in ran.output and "run the study with --trust-remote-code" in ran.output
    )
    assert not (tmp_path / "out" / "tiny").exists()  # nothing extracted
    dry = CliRunner().invoke(main, ["study", "run", str(path), "--dry-run"])  # its calibration runs too
    assert dry.exit_code == 2 and "run the study with --trust-remote-code" in dry.output
    with pytest.raises(InputError, match="a study file never turns it on alone"):
        featx.study.dry_run(study)

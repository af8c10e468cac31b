"""``[[corpora]] group``: a label column, read from the corpus file by ``study run`` (and its dry run) before any
extraction, never by ``study status`` or ``study report``; or a name of the texts (``@text``, ``@text_pair``,
``@texts``), which needs no column (``@text_pair`` needs the corpus's pair column) and goes to every probe of that
corpus as ``--group``."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from support.planted_pairs import chain_first_rows, chain_rows
from support.tiny import write_csv

import featx.extraction
import featx.study
from featx.cli import main
from featx.errors import InputError
from featx.study import dry_run, make_plan, status, study_config, study_toml
from featx.study.columns import check_corpora  # folds=False: these corpora of a few rows test their groups only

STUDY = """\
[study]
output = "out"

[[models]]
name = "m"

[[corpora]]
name = "sst2"
path = "sst2.csv"
labels = ["label"]
text_col = "sentence"
group = "GROUP"
"""
GROUP_LINE = 12  # the line of group = ...


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "sst2.csv").write_text("sentence,label\na b,x\n")
    (tmp_path / "pairs.csv").write_text("a,b,label\nthe cat,the dog,x\nthe dog,a film,y\n")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "past_present.txt").write_text("tr\tPAST\tShe walked .\nte\tPRES\tShe walks .\n")
    return tmp_path


def _write(folder, group: str):
    path = folder / "study.toml"
    path.write_text(STUDY.replace("GROUP", group))
    return path


class Reads:
    """``featx.extraction.read_input`` counted: the reader of a corpus file for its group column."""

    def __init__(self, monkeypatch):
        self.paths: list[str] = []
        original = featx.extraction.read_input

        def read_input(config, *args, **kwargs):
            self.paths.append(str(config.corpus))
            return original(config, *args, **kwargs)

        monkeypatch.setattr(featx.extraction, "read_input", read_input)


def test_a_group_column_missing_from_its_corpus_is_one_error_with_file_key_and_line(folder):
    path = _write(folder, "doc")
    config = study_config(path)  # made without reading the corpus
    with pytest.raises(InputError) as caught:
        check_corpora(config)
    message = caught.value.message
    assert str(path) in message and f", line {GROUP_LINE}:" in message and "[[corpora]] #1 group: corpus" in message
    assert "name a column of the corpus whose values are the groups" in caught.value.hint
    assert "group by its texts with @text, @texts" in caught.value.hint


def test_a_corpus_group_column_is_read_by_run_before_any_extraction(folder):
    """Each probe of the grouped corpus takes its group (``--group``), the others none; a corpus without the
    column, or with a labelled row without a group, is refused before the first model runs."""
    (folder / "docs.csv").write_text("text,label,doc\na b,x,d1\nc d,y,d1\ne f,x,\n")
    study = {
        "study": {"output": str(folder / "out")},
        "models": [{"name": "m"}],
        "corpora": [
            {"path": str(folder / "docs.csv"), "group": "doc"},
            {"path": str(folder / "sst2.csv"), "text_col": "sentence"},
        ],
    }
    with pytest.raises(InputError, match=r"#1 group: 1 of the 3 rows of .*docs.csv labelled 'label' have no group"):
        check_corpora(study_config(study), folds=False)
    (folder / "docs.csv").write_text("text,label,doc\na b,x,d1\nc d,y,d1\ne f,x,d2\n")
    config = study_config(study)
    check_corpora(config, folds=False)
    assert [(corpus.name, corpus.group) for corpus in config.corpora] == [("docs", "doc"), ("sst2", None)]
    study["corpora"][1]["group"] = "doc"  # sst2.csv has no doc column
    path = folder / "study.toml"
    path.write_text(study_toml(study))
    ran = CliRunner().invoke(main, ["study", "run", str(path)])
    assert ran.exit_code == 2 and "[[corpora]] #2 group: corpus" in ran.output and "no label column 'doc'" in ran.output
    assert "its label columns: label" in ran.output and not (folder / "out").exists()
    senteval = {**study, "corpora": [{"senteval": str(folder / "tasks"), "group": "doc"}]}
    with pytest.raises(InputError, match="#1 group: corpus .*past_present.txt has no label column 'doc'"):
        check_corpora(study_config(senteval), folds=False)  # a SentEval task file has no column but its label


def test_status_and_report_plans_read_no_corpus_for_its_groups(folder, monkeypatch):
    reads = Reads(monkeypatch)
    path = _write(folder, "doc")  # a column sst2.csv lacks: only a read would find out
    assert set(status(path).status) == {"pending"}
    assert make_plan(path).config.corpora[0].group == "doc"  # the report's plan
    assert reads.paths == []
    with pytest.raises(InputError, match="no label column 'doc'"):
        dry_run(path)  # refused before any calibration run of the model
    assert reads.paths == [str(folder / "sst2.csv")]
    ran = CliRunner().invoke(main, ["study", "status", str(path)])
    assert ran.exit_code == 0 and "2 pending" in ran.output, ran.output
    assert reads.paths == [str(folder / "sst2.csv")]


@pytest.mark.parametrize("group", ["@text", "@texts"])
def test_a_text_name_needs_no_column_and_goes_to_every_probe(folder, monkeypatch, group):
    reads = Reads(monkeypatch)
    plan = make_plan(_write(folder, group))
    check_corpora(plan.config, folds=False)
    assert reads.paths == [str(folder / "sst2.csv")]  # once, for its labels (columns.check_corpora)
    assert [cell.task.args["options"]["group"] for cell in plan.probes] == [group]


def test_the_second_text_needs_the_pair_column_and_a_misspelt_name_is_refused(folder):
    with pytest.raises(InputError) as caught:
        check_corpora(study_config(_write(folder, "@text_pair")), folds=False)
    assert f", line {GROUP_LINE}: [[corpora]] #1 group: group @text_pair" in caught.value.message
    assert "corpus" in caught.value.message and "has single texts" in caught.value.message
    assert "text_pair_col" in caught.value.hint
    pairs = {"study": {"output": str(folder / "out")}, "models": [{"name": "m"}],
             "corpora": [{"path": str(folder / "pairs.csv"), "text_col": "a", "text_pair_col": "b",
                          "group": "@text_pair"}]}  # fmt: skip
    check_corpora(study_config(pairs), folds=False)
    pairs["corpora"][0]["group"] = "@txt"
    with pytest.raises(InputError, match="no label column '@txt'") as caught:
        check_corpora(study_config(pairs), folds=False)
    assert "group by its texts with @text, @text_pair, @texts" in caught.value.hint


def test_a_label_named_as_the_group_is_refused_but_a_text_name_is_not_a_label(folder):
    with pytest.raises(InputError, match="group 'label' is also one of the corpus's labels"):
        study_config(_write(folder, "label"))
    text = STUDY.replace('labels = ["label"]', 'labels = ["@texts"]').replace("GROUP", "@texts")
    (folder / "study.toml").write_text(text)
    assert study_config(folder / "study.toml").corpora[0].group == "@texts"  # the texts, not that column


@pytest.mark.slow
def test_a_study_groups_a_pair_corpus_by_its_shared_sentences(tiny_model, tmp_path):
    """Every probe of the pair corpus ran with --group @texts (each model's, the lexical baseline's), its
    predictions name each row's group (its chain's first row) and the models' paired tests ran on those groups."""
    pairs, chains = chain_rows()
    rows = [[a, b, ("no", "yes")[(i * 7) % 3 == 0]] for i, (a, b) in enumerate(pairs)]
    corpus = write_csv(tmp_path / "chains.csv", rows, header=("a", "b", "label"))
    study = {
        "study": {"output": str(tmp_path / "out")},
        "models": [{"name": "tiny", "model": str(tiny_model)}, {"name": "rand", "model": str(tiny_model),
                                                               "random_init": True}],
        "corpora": [{"name": "chains", "path": str(corpus), "text_col": "a", "text_pair_col": "b",
                     "pair_mode": "separate", "group": "@texts"}],
        "extract": {"pooling": "mean"},
        "probe": {"layer": "all", "n_bootstrap": 100},
    }  # fmt: skip
    result = featx.study.run(study)
    assert result.exit_code == 0, result.errors
    output = tmp_path / "out"
    for model in ("tiny", "rand"):
        meta = json.loads((output / model / "chains" / "label.probe.json").read_text())["meta"]
        assert (meta["group"], meta["n_groups"], meta["evaluation"]) == ("@texts", 20, "5-fold cv by @texts")
        predictions = pd.read_csv(output / model / "chains" / "label.predictions.csv")
        assert list(predictions["group"]) == list(chain_first_rows(chains)[predictions["row"]])
    assert set(result.results.group) == {"@texts"}
    assert len(result.paired) and (result.paired.note == "").all()


@pytest.mark.parametrize("group", ["doc", "@texts"])
def test_a_group_on_both_sides_of_the_split_is_refused_before_any_extraction(folder, group):
    """Each probe refuses a split with a group in two of its parts (``featx.probing.check_split_groups``): the
    study checks it as it reads the corpus, not after extracting it with every model (SICK's own split puts
    pairs sharing a sentence in train and test: ``group = "@texts"`` failed each probe after every extraction).
    A row whose label is missing or whose split is another value is in no part; without a test part the probes
    cross-validate by group, and nothing is refused."""
    rows = ["the cat,the dog,x,d1,train", "the dog,a film,y,d1,test", "sun,rain,x,d2,train", "moon,star,y,d3,test"]
    corpus = {"path": str(folder / "pairs.csv"), "text_col": "a", "text_pair_col": "b", "group": group}
    study = {"study": {"output": str(folder / "out")}, "models": [{"name": "m"}], "corpora": [corpus]}

    def check(second: str):
        (folder / "pairs.csv").write_text("\n".join(["a,b,label,doc,split", rows[0], second, *rows[2:]]) + "\n")
        check_corpora(study_config(study), folds=False)

    with pytest.raises(InputError) as caught:
        check(rows[1])
    assert "#1 group: corpus" in caught.value.message and "pairs.csv" in caught.value.message
    assert "1 group(s) have rows in both the train and the test split" in caught.value.message
    assert "(train: row 0; test: row 1)" in caught.value.message and "put every group in one" in caught.value.hint
    for second in ("the dog,a film,,d1,test", "the dog,a film,y,d1,holdout", "the dog,a film,y,d1,train"):
        check(second)
    rows[3] = "moon,star,y,d3,dev"
    check("the dog,a film,y,d1,dev")  # no test part: cross-validated by group

"""A corpus's label columns, read from its file by ``study run`` (and its dry run) before any extraction: a label
the study names that a corpus lacks is one error at that corpus's ``labels`` key, naming the corpus, the label and
the columns it has (not a failed probe after its extraction ran); an unreadable corpus is left to its extraction
cell, which fails with the reader's error."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import featx.study
from featx.cli import main
from featx.errors import InputError
from featx.study import study_config, study_toml
from featx.study.columns import check_corpora


@pytest.fixture
def study(tmp_path):
    (tmp_path / "sents.csv").write_text("text,label,topic\n" + "a b,x,t\nc d,y,u\n" * 5)  # 5 rows a class: 5 folds
    (tmp_path / "other.csv").write_text("text,topic,mood\n" + "a b,t,m\nc d,u,n\n" * 5)
    (tmp_path / "bad.csv").write_text("words,label\nhello,a\n")  # no text column: its extraction fails
    (tmp_path / "gum.conllu").write_text("# text = The cat\n1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n"
                                         "2\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_\n\n")  # fmt: skip
    return {
        "study": {"output": str(tmp_path / "out")},
        "models": [{"name": "m"}],
        "corpora": [
            {"path": str(tmp_path / "sents.csv"), "labels": ["label", "topic"]},
            {"path": str(tmp_path / "bad.csv")},
            {"path": str(tmp_path / "gum.conllu"), "labels": ["upos"]},
            {"path": str(tmp_path / "other.csv"), "labels": ["topic", "label"]},
        ],
    }


def test_a_label_a_corpus_lacks_is_refused_at_its_labels_key_before_any_extraction(study, tmp_path, monkeypatch):
    with pytest.raises(InputError) as caught:
        check_corpora(study_config(study))
    message = caught.value.message
    assert message.startswith("study: [[corpora]] #4 labels: corpus ")
    assert "other.csv has no label column 'label'" in message
    assert message.endswith("its label columns: topic, mood")
    assert "take 'label' out of this corpus's labels" in caught.value.hint
    path = tmp_path / "study.toml"
    path.write_text(study_toml(study))
    monkeypatch.setattr(featx.study.tasks, "extract_cell", lambda options: pytest.fail("an extraction ran"))
    for command in (["study", "run", str(path)], ["study", "run", str(path), "--dry-run"]):
        ran = CliRunner().invoke(main, command)
        assert ran.exit_code == 2 and "line 20: [[corpora]] #4 labels: corpus" in ran.output, ran.output
        assert "has no label column 'label'" in ran.output and not (tmp_path / "out").exists()


def test_word_labels_count_and_an_unreadable_corpus_is_left_to_its_extraction(study):
    study["corpora"][3]["labels"] = ["topic", "mood"]
    check_corpora(study_config(study))  # bad.csv: its extraction cell fails with the reader's error
    study["corpora"][2]["labels"] = ["upos", "feats.Tense"]
    with pytest.raises(InputError) as caught:
        check_corpora(study_config(study))
    assert "#3 labels: corpus " in caught.value.message and "gum.conllu has no label column 'feats.Tense'" in (
        caught.value.message
    )
    assert "its label columns: (none); word label columns: upos, xpos, deprel" in caught.value.message


def test_a_metric_that_does_not_fit_a_label_is_refused_at_the_metric_key_before_any_extraction(study, tmp_path):
    """metric = "r2" beside a class label (and accuracy beside a number) failed every probe of it after the
    extractions; the label's task is decided on the values read, as the probes decide it (--bins: classes)."""
    study["study"]["metric"] = "r2"
    study["corpora"][3]["labels"] = ["topic"]
    with pytest.raises(InputError) as caught:
        check_corpora(study_config(study))
    assert caught.value.message == (
        "study: [study] metric: metric 'r2' does not fit label 'label' of corpus 'sents', probed as classes"
    )
    assert caught.value.hint.startswith("choose one of accuracy, macro_f1, balanced_accuracy")
    rows = "".join(f"t{row},{row / 4}\n" for row in range(12))  # 12 distinct numbers: a regression label
    (tmp_path / "scores.csv").write_text("text,score\n" + rows)
    study["corpora"] = [{"path": str(tmp_path / "scores.csv"), "labels": ["score"]}]
    check_corpora(study_config(study))
    study["study"]["metric"] = "accuracy"
    with pytest.raises(InputError, match="metric 'accuracy' does not fit label 'score' .* a number \\(regression\\)"):
        check_corpora(study_config(study))
    study["probe"] = {"bins": 3}
    check_corpora(study_config(study))


def test_more_folds_than_a_class_has_rows_is_refused_at_the_folds_key_before_any_extraction(study, tmp_path):
    """[probe] folds = 6 on classes of 5 rows (no split column) failed every probe of the label after its
    extractions; the plan is made from the corpus first, after every corpus's own keys are checked."""
    study["corpora"][3]["labels"] = ["topic", "mood"]
    study["probe"] = {"folds": 6}
    path = tmp_path / "study.toml"
    path.write_text(study_toml(study))
    ran = CliRunner().invoke(main, ["study", "run", str(path), "--dry-run"])
    assert ran.exit_code == 2 and "[probe] folds: corpus 'sents': class 'x' of label 'label' has only 5" in ran.output
    assert "hint: use fewer folds (folds = 5) or more data" in ran.output and not (tmp_path / "out").exists()
    (tmp_path / "sents.csv").write_text("text,label,topic,split\n" + "a b,x,t,train\nc d,y,u,test\n" * 5)
    study["corpora"] = study["corpora"][:1]
    check_corpora(study_config(study))  # a train/test split: no folds
    study["probe"] = {"folds": 6, "min_class_rows": 2}
    (tmp_path / "sents.csv").write_text("text,label,topic\n" + "a b,x,t\nc d,y,u\n" * 5)
    check_corpora(study_config(study))  # classes dropped first: left to the probes

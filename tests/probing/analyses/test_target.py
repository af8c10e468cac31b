"""The label of erasure, neuron ranking and the sweep (``analyses.target``): a continuous number is refused as what
it is, before any probe; ``featx erase --amnesic all`` leaves such a column out with a note."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import featx.probing
from featx.cli import main
from featx.errors import InputError

CONTINUOUS = "label 'score' of .* is a continuous number (48 distinct values from 0.00 to 17.39)"


@pytest.mark.parametrize(
    "command",
    [["erase", "--label", "score"], ["neurons", "--label", "score"], ["probe", "--label", "score", "--sweep"]],
    ids=["erase", "neurons", "sweep"],
)
def test_a_continuous_label_is_refused_as_regression_only(command, scored_file, tmp_path):
    args = [command[0], str(scored_file), *command[1:], "-o", str(tmp_path / "out")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "is a continuous number (48 distinct values from 0.00 to 17.39)" in result.output
    assert "work on classes only" in result.output and "fits it by regression" in result.output
    assert "never in train" not in result.output and "Traceback" not in result.output
    assert not list(tmp_path.iterdir())


def test_amnesic_probing_of_all_columns_leaves_a_continuous_one_out(scored_file, tmp_path):
    result = featx.probing.erase(scored_file, label="a", layers="1", output=tmp_path / "erased.h5", jobs=1)
    skipped = [note for note in result.notes if note.startswith("amnesic probing skips 'score': ")]
    assert len(skipped) == 1 and "is a continuous number" in skipped[0]
    assert result.amnesic.empty or "score" not in set(result.amnesic["label"])


def test_load_task_refuses_it_and_takes_the_class_column(scored_file):
    from featx.store import open_features

    with open_features(scored_file) as features:
        with pytest.raises(featx.errors.InputError, match=CONTINUOUS.replace("(", r"\(").replace(")", r"\)")):
            featx.probing.load_task(features, "score")
        assert featx.probing.load_task(features, "a").class_names == ["neg", "pos"]


def test_load_task_leaves_out_rows_of_a_split_value_featx_does_not_use(split_features, tmp_path):
    """erase, neurons, the sweep and intervene read a label through ``load_task``: as featx probe and featx fit,
    rows whose split is none of train, val and test are in no fold and no training part, said in a note."""
    import numpy as np
    from support.shared_files import resplit

    from featx.store import open_features

    def holdout(split):
        out = split.copy()
        out[np.flatnonzero(split == "train")[::3]] = "holdout"
        return out

    path = resplit(split_features, tmp_path, holdout)
    notes: list[str] = []
    with open_features(path) as features:
        split = np.asarray(features.split, dtype=str)
        task = featx.probing.load_task(features, "label", notes=notes)
    left = np.flatnonzero(split == "holdout")
    assert len(left) and not np.isin(left, task.kept).any()
    assert len(task.kept) == int((split != "holdout").sum())
    train, test = task.plan.folds[0]
    assert set(split[task.kept[train]]) == {"train"} and set(split[task.kept[test]]) == {"test"}
    assert notes == [
        f"{len(left)} rows with split 'holdout' left out: split values other than train, val (dev, "
        "validation, valid) and test are not used"
    ]
    erased = featx.probing.erase(path, label="label", layers="1", output=tmp_path / "erased.h5", jobs=1)
    assert notes[0] in erased.notes


def test_from_python_the_refusal_of_a_continuous_label_names_the_functions_and_a_python_call(scored_file):
    """The command line names the commands and quotes ``featx probe FILE --label score`` (above); a Python caller
    reads the functions and ``featx.probe('FILE', label='score')``, and no flag."""
    with pytest.raises(InputError) as error:
        featx.probing.erase(scored_file, label="score", write=False)  # neurons and the sweep: load_task's too
    text = str(error.value)
    assert "featx.probing.erase, featx.probing.neurons, featx.probing.sweep and featx.interventions.intervene" in text
    assert f"hint: featx.probe({str(scored_file)!r}, label='score') fits it by regression" in text
    assert "--" not in text, text


def test_the_group_note_names_the_keyword_from_python_and_the_flag_on_the_command_line(grouped_file):
    """The note of ``group`` (erase, neurons, the sweep and intervene: ``load_task``, ``group_rows``): ``group='doc'``
    inside a Python entry point (``keywords_of``), ``--group doc`` on the command line."""
    from featx.options import command_line, keywords_of
    from featx.probing.analyses.erase import EraseConfig
    from featx.probing.tasks.groups import group_rows
    from featx.store import FeatureFile

    said = {}
    for caller, context in (("python", keywords_of(EraseConfig)), ("cli", command_line())):
        notes: list[str] = []
        with context, FeatureFile(grouped_file) as features:
            group_rows(features, "doc", np.arange(features.n_rows), "label", notes)
        said[caller] = next(note for note in notes if note.startswith("rows kept together by"))
    assert said["python"].startswith("rows kept together by group='doc' (24 groups)"), said
    assert said["cli"].startswith("rows kept together by --group doc (24 groups)"), said

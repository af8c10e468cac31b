"""The label of erasure, neuron ranking and the sweep (``analyses.target``): a continuous number is refused as what
it is, before any probe; ``featx erase --amnesic all`` leaves such a column out with a note."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import featx.probing
from featx.cli import main

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

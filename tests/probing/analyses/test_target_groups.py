"""``--group COLUMN`` for ``featx erase``, ``featx neurons`` and ``featx probe --sweep`` (``analyses.target``), on rows
planted to share a spurious signal within their groups (``support.planted_groups``): every outer fold, every holdout
drawn from a training part (the C search, INLP's, the sweep's early stopping) and so every score keeps groups whole;
the group column is checked as ``featx probe --group`` checks it, and recorded in the results' meta."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.fold_spy import FoldSpy
from support.planted_groups import BAD_GROUPS

import featx.probing
from featx.cli import main
from featx.errors import InputError
from featx.probing import EraseConfig, NeuronConfig
from featx.probing.analyses.sweep import SweepConfig

QUICK = dict(layers="1", jobs=1, n_bootstrap=200)


def run_erase(path, **options):
    return featx.probing.erase(path, label="label", amnesic="none", write=False, **QUICK, **options)


def run_neurons(path, **options):
    return featx.probing.neurons(path, label="label", write=False, draws=2, **QUICK, **options)  # 2 draws: cheaper


def run_sweep(path, **options):
    return featx.probing.sweep(path, label="label", control=False, write=False, **QUICK, **options)


COMMANDS = {"erase": run_erase, "neurons": run_neurons, "sweep": run_sweep}


@pytest.fixture(scope="module")
def topic_file(grouped_file, tmp_path_factory):
    """The grouped file with a second label, ``topic``, that alternates within every group (amnesic probing)."""
    folder = tmp_path_factory.mktemp("analyses-topic")
    path = shutil.copy(grouped_file, folder / "topic.h5")
    labels = folder / "topic.csv"
    labels.write_text("row,topic\n" + "".join(f"{i},{('a', 'b')[i % 2]}\n" for i in range(120)))
    featx.probing.add_labels(path, labels, join="row")
    return path


@pytest.mark.parametrize(
    ("command", "options"),
    [("erase", {}), ("erase", {"method": "inlp"}), ("neurons", {}), ("sweep", {})],
    ids=["erase-leace", "erase-inlp", "neurons", "sweep"],
)
@pytest.mark.slow
def test_every_fold_and_holdout_keeps_groups_whole(grouped_file, monkeypatch, command, options):
    spy = FoldSpy(monkeypatch)
    result = COMMANDS[command](grouped_file, group="doc", **options)
    spy.check_whole_groups(24)
    if command == "erase" and options:
        assert len(spy.holdouts) > len(spy.folds)  # INLP's holdouts besides the C search's
    assert result.meta["evaluation"] == "5-fold cv by doc"
    assert (result.meta["group"], result.meta["n_groups"]) == ("doc", 24)
    if command == "sweep":  # scored on holdouts of whole groups: no memorised group counts towards a choice
        assert result.table.selection_score.notna().all() and result.table.selection_score.max() < 0.75
    if command == "neurons":  # its printout says so, as erase's and the sweep's do
        from featx.report import format_neurons

        assert "note: rows kept together by group='doc' (24 groups)" in format_neurons(result)
        assert any("group='doc' (24 groups)" in note for note in result.notes)  # the library's result has it too


def test_without_group_the_folds_are_not_grouped(grouped_file, monkeypatch):
    spy = FoldSpy(monkeypatch)
    result = run_erase(grouped_file)
    assert all(groups is None for *_, groups in spy.folds + spy.holdouts)
    assert result.meta["evaluation"] == "5-fold cv" and "group" not in result.meta


@pytest.mark.slow
def test_amnesic_probing_keeps_groups_whole_too(topic_file, monkeypatch):
    spy = FoldSpy(monkeypatch)
    result = featx.probing.erase(
        topic_file, label="label", method="inlp", amnesic="topic", group="doc", write=False, **QUICK
    )
    assert list(result.amnesic.label) == ["topic"]
    spy.check_whole_groups(24)
    assert len(spy.folds) == 5 * 3 + 5 * 3  # the erased label and topic: before, after, random control
    assert any("group='doc' (24 groups)" in note for note in result.notes)


@pytest.mark.slow
def test_grouped_scores_do_not_count_memorised_groups(grouped_file):
    ungrouped, grouped = (run_erase(grouped_file, **group) for group in ({}, {"group": "doc"}))
    assert ungrouped.table.before.iloc[0] > 0.95  # near-duplicates of every test row were fitted
    assert grouped.table.before.iloc[0] < 0.75  # the label is the group's, independent of its vector
    ungrouped, grouped = (run_neurons(grouped_file, **group) for group in ({}, {"group": "doc"}))
    every = [result.selection[result.selection.selection == "all"].accuracy.iloc[0] for result in (ungrouped, grouped)]
    assert every[0] > 0.95 and every[1] < 0.75
    assert set(grouped.selection.evaluation) == {"5-fold cv by doc"}  # the CSV's column says it per row


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("options", "message"), BAD_GROUPS, ids=[case[0]["group"] for case in BAD_GROUPS])
def test_bad_group_columns_are_refused_before_fitting(grouped_file, command, options, message):
    with pytest.raises(InputError, match=message) as error:
        COMMANDS[command](grouped_file, **options)
    if options["group"] == "topic":  # the columns that could be groups are named
        assert "label columns: label, doc, score, partial" in error.value.message


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_split_with_a_group_in_train_and_test_is_refused_as_probe_refuses_it(leaky_split_file, command):
    with pytest.raises(
        InputError, match="1 group\\(s\\) have rows in both the train and the test split, e.g. 'd1'"
    ) as error:
        COMMANDS[command](leaky_split_file, group="doc")
    assert "extract it again (or extract a copy without its split column" in error.value.hint  # no option drops it


@pytest.mark.parametrize("config", [EraseConfig, NeuronConfig, SweepConfig])
def test_the_group_equal_to_the_label_or_empty_is_refused_when_made(config):
    with pytest.raises(InputError, match="--group topic is the label probed: every group would hold one class"):
        config(features="x.h5", label="topic", group="topic")
    with pytest.raises(InputError, match="--group is empty"):
        config(features="x.h5", group=" ")
    assert config(features="x.h5", label="topic", group="doc").group == "doc"


@pytest.mark.parametrize(
    ("args", "written"),
    [
        (["erase", "--amnesic", "none", "-o", "{out}.h5"], "{out}.erase.json"),
        (["neurons", "--draws", "2", "-o", "{out}"], "{out}.json"),
        (["probe", "--sweep", "--no-control", "-o", "{out}"], "{out}.sweep.json"),
    ],
    ids=["erase", "neurons", "sweep"],
)
@pytest.mark.slow
def test_the_cli_flag_is_listed_and_groups_the_folds(grouped_file, tmp_path, args, written):
    assert "--group" in CliRunner().invoke(main, [args[0], "--help"]).output
    out = str(tmp_path / "grouped")
    command = [args[0], str(grouped_file), *(arg.format(out=out) for arg in args[1:])]
    result = CliRunner().invoke(main, [*command, "--label", "label", "--group", "doc", "--layer", "1", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    meta = json.loads(Path(written.format(out=out)).read_text())["meta"]
    assert (meta["group"], meta["n_groups"], meta["evaluation"]) == ("doc", 24, "5-fold cv by doc")
    if args[0] != "neurons":  # erase's printout and the sweep's say it (featx neurons prints no notes)
        assert "note: rows kept together by --group doc (24 groups)" in result.output
    refused = CliRunner().invoke(main, [*command, "--group", "nope"])
    assert refused.exit_code == 2 and "featx: error: --group nope: no label column 'nope'" in refused.output


def test_the_sweep_joins_a_labels_file_as_probe_does_and_groups_by_its_column(grouped_file, tmp_path, monkeypatch):
    """``featx probe --sweep --labels FILE --join row``: the label probed and a ``--group`` column the features file
    lacks come from FILE, joined by probe's own code; every fold and holdout keeps that column's groups whole."""
    labels = tmp_path / "more.csv"
    labels.write_text("row,topic,source\n" + "".join(f"{i},{('a', 'b')[i % 2]},s{i // 10}\n" for i in range(120)))
    spy = FoldSpy(monkeypatch)
    options = {"labels": labels, "join": "row", "label": "topic", "group": "source", "folds": 2, "layers": "1"}
    result = featx.probing.sweep_from_probe_options(
        grouped_file, False, {**options, "jobs": 1, "n_bootstrap": 100, "write": False}
    )
    spy.check_whole_groups(12)
    meta = result.meta
    assert (meta["label"], meta["classes"], meta["group"], meta["n_groups"]) == ("topic", ["a", "b"], "source", 12)
    assert (meta["labels_file"], meta["join"], meta["evaluation"]) == (str(labels), "row", "2-fold cv by source")
    assert f"labels from {labels} (joined by row): probing 'topic'" in meta["notes"]
    assert any("rows kept together by group='source' (12 groups)" in note for note in meta["notes"])
    labels.write_text("row,amount\n" + "".join(f"{i},{0.37 * i:.2f}\n" for i in range(120)))
    with pytest.raises(InputError, match=f"label 'amount' of {labels} is a continuous number"):  # as a stored one
        featx.probing.sweep(grouped_file, labels=labels, join="row", label="amount", write=False)

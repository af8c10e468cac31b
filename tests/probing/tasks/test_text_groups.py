"""``--group @text``, ``@text_pair`` and ``@texts`` (``tasks.groups``): groups read from the stored texts, compared
exactly; ``@texts`` joins pairs linked by shared sentences in chains, and no fold, holdout or split ever splits such
a chain; a pair file probed without ``--group`` says how many of its sentences its rows share; a misspelt name, or
``@text_pair`` of single texts, is one clear error (``support.planted_pairs``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from support.fold_spy import FoldSpy
from support.planted_pairs import SMALL_GROUPS, SMALL_SHARED, chain_first_rows, make_chains

import featx
from featx.cli import main
from featx.errors import InputError
from featx.probing import (
    TEXT_GROUPS,
    ProbeConfig,
    add_labels,
    check_split_groups,
    erase,
    group_codes,
    group_rows,
    load_task,
)
from featx.probing.tasks.groups import NO_GROUP, component_rows, quoted_text, read_groups, text_groups
from featx.store import FeatureFile

REPO = Path(__file__).resolve().parents[3]
QUICK = dict(layers="1", lexical=False, write=False, jobs=1, n_bootstrap=100)
SHARED = "sentence(s) occur in more than one of the 60 pairs (as text a or b)"  # the chains' note


def _partition(codes) -> set[frozenset[int]]:
    """The rows of each group, whatever the groups' codes."""
    codes = np.asarray(codes)
    return {frozenset(np.flatnonzero(codes == code).tolist()) for code in np.unique(codes)}


@pytest.mark.parametrize("name", TEXT_GROUPS)
def test_each_text_name_groups_the_small_pairs_as_written_out(small_pairs, name):
    expected = np.asarray(SMALL_GROUPS[name])
    with FeatureFile(small_pairs) as features:
        codes = group_codes(features, name)
        coded, names = text_groups(features, name)
        notes: list[str] = []
        groups = group_rows(features, name, np.arange(9), "label", notes)
    assert _partition(codes) == _partition(expected)
    assert [names[code] for code in coded] == [str(row) for row in expected]  # each named by its first row
    assert names == sorted(names, key=int)  # coded in the order of their first rows, as the names read back
    assert groups.count == len(set(expected)) and notes == [
        f"rows kept together by --group {name} ({groups.count} groups): the folds, the holdouts that choose C and "
        "the bootstrap resamples take whole groups"
    ]


def test_single_texts_group_by_text_and_refuse_the_second_text(tiny_features):
    with FeatureFile(tiny_features) as features:
        texts = features.texts
        assert np.array_equal(group_codes(features, "@texts"), group_codes(features, "@text"))
        assert _partition(group_codes(features, "@text")) == _partition([texts.index(text) for text in texts])
        with pytest.raises(InputError, match="--group @text_pair: .* holds single texts, not sentence pairs") as err:
            group_codes(features, "@text_pair")
    assert "@text" in err.value.hint


@pytest.mark.parametrize("path", ["small_pairs", "tiny_features"])
def test_a_misspelt_text_name_is_refused_with_the_names(request, path):
    pairs = path == "small_pairs"
    with pytest.raises(InputError, match="group='@txt': '@txt' is not a name of the texts") as err:
        featx.probe(request.getfixturevalue(path), label="label", group="@txt", **QUICK)
    assert err.value.hint == f"group by the texts with {'@text, @text_pair, @texts' if pairs else '@text, @texts'}, " \
        "or name a label column"  # fmt: skip
    with pytest.raises(InputError, match="no label column 'doc'") as err:
        featx.probe(request.getfixturevalue(path), label="label", group="doc", **QUICK)
    assert "group by the texts with @text" in err.value.hint


def test_the_folds_and_holdouts_never_split_a_chain(chain_pairs, monkeypatch):
    """Every labelled row is probed (positions are rows): no chain on both sides of an outer fold, and none on
    both sides of a holdout that chooses C inside a fold's training rows."""
    path, chains = chain_pairs
    spy = FoldSpy(monkeypatch)
    result = featx.probe(path, label="label", group="@texts", **QUICK)
    assert len(spy.folds) == 5 and spy.holdouts
    for train, test, groups in spy.folds:
        assert not set(chains[train]) & set(chains[test])
        assert _partition(groups) == _partition(chains)  # the chains, given to the C search of the fold too
    for fit, val, groups in spy.holdouts:
        assert groups is not None and len(fit) and len(val)
        assert not set(groups[fit]) & set(groups[val])
    meta = result.meta.to_dict()
    assert (meta["group"], meta["n_groups"], meta["evaluation"]) == ("@texts", 20, "5-fold cv by @texts")
    assert list(result.predictions["group"]) == [str(row) for row in chain_first_rows(chains)[result.predictions.row]]
    assert not any("occur in more than one of the" in note for note in result.notes)


def test_without_group_plain_folds_split_chains_and_the_note_says_so(chain_pairs, monkeypatch):
    path, chains = chain_pairs
    spy = FoldSpy(monkeypatch)
    result = featx.probe(path, label="label", **QUICK)
    assert any(set(chains[train]) & set(chains[test]) for train, test, _ in spy.folds)  # what @texts prevents
    note = (
        "40 sentence(s) occur in more than one of the 60 pairs (as text a or b): folds or a split can put pairs "
        "sharing a sentence on both sides, and score what the probe memorised of it; group='@texts' keeps every "
        "pair sharing a sentence with another in one group"
    )  # each chain of n pairs shares its n - 1 inner sentences: 60 pairs in 20 chains
    assert note in result.notes and note in result.meta.to_dict()["notes"]
    assert sum("occur in more than one of the" in line for line in result.notes) == 1
    regression = featx.probe(path, label="score", **QUICK)
    assert note in regression.notes


@pytest.mark.slow
def test_the_note_counts_the_small_pairs_and_single_texts_get_none(small_pairs, tiny_features):
    result = featx.probe(small_pairs, label="score", task="regression", folds=2, **QUICK)
    assert any(note.startswith(f"{SMALL_SHARED} sentence(s) occur in more than one of the 9 pairs") for note in
               result.notes)  # fmt: skip
    single = featx.probe(tiny_features, label="label", **QUICK)
    assert not any("occur in more than one of the" in note for note in single.notes)


def test_a_split_with_a_chain_on_both_sides_is_refused_and_a_clean_one_is_probed(tiny_model, tmp_path):
    leaky, _ = make_chains(tmp_path / "leaky", tiny_model, split="leaky")
    with pytest.raises(InputError, match="both the train and the test split"):
        featx.probe(leaky, label="label", group="@texts", **QUICK)
    clean, chains = make_chains(tmp_path / "clean", tiny_model, split="clean")
    result = featx.probe(clean, label="label", group="@texts", **QUICK)
    assert result.meta.to_dict()["evaluation"] == "split"
    assert set(result.predictions.row) == set(np.flatnonzero(chains % 4 == 0))  # the test rows: whole chains


def test_reserved_names_mean_the_texts_even_beside_a_label_column_of_that_name(chain_pairs, tmp_path):
    path, chains = chain_pairs
    copy = tmp_path / "named.h5"
    copy.write_bytes(path.read_bytes())
    labels = tmp_path / "named.csv"
    labels.write_text("row,@texts\n" + "".join(f"{row},{row % 2}\n" for row in range(len(chains))))
    add_labels(copy, labels, join="row")
    result = featx.probe(copy, label="label", group="@texts", **QUICK)
    assert result.meta.to_dict()["n_groups"] == 20  # the chains, not the column's two values
    assert any("the label column '@texts' is not read: this name means the texts" in note for note in result.notes)
    assert ProbeConfig(label="@texts", group="@texts").group == "@texts"  # not "the label itself"


@pytest.mark.slow
def test_erase_and_the_cli_take_the_text_names(chain_pairs, tiny_model, tmp_path):
    path, _ = chain_pairs
    cross, _ = make_chains(tmp_path / "cross", tiny_model, pair_mode="cross")  # erase reads one vector per row
    erased = erase(
        cross, label="label", group="@texts", amnesic="none", write=False, layers="1", jobs=1, n_bootstrap=100
    )
    assert (erased.meta["group"], erased.meta["n_groups"]) == ("@texts", 20)
    erase_args = ["erase", str(cross), "--label", "label", "--layer", "1", "--jobs", "1", "--amnesic", "none"]
    printed = CliRunner().invoke(main, [*erase_args, "-o", str(tmp_path / "erased.h5")])
    assert printed.exit_code == 0 and SHARED in printed.output, printed.output  # without --group: the note
    prefix = tmp_path / "cli"
    args = ["probe", str(path), "--label", "label", "--layer", "1", "--jobs", "1", "--no-lexical"]
    ran = CliRunner().invoke(main, [*args, "--group", "@text_pair", "-o", str(prefix)])
    assert ran.exit_code == 0, ran.output
    assert json.loads(prefix.with_suffix(".json").read_text())["meta"]["group"] == "@text_pair"
    refused = CliRunner().invoke(main, [*args, "--group", "@txt"])
    assert refused.exit_code == 2 and "featx: error: --group @txt: '@txt' is not a name of the texts" in refused.output


def test_erase_neurons_and_sweep_note_the_shared_sentences_as_probe_does(chain_pairs):
    """Their task (``load_task``, which erase, neurons and the sweep read) says the pair file's note of ``featx
    probe`` and ``featx fit`` (``note_shared_texts``), once; not with --group (``featx erase`` prints it: below)."""
    path, _ = chain_pairs
    with FeatureFile(path) as features:
        notes: list[str] = []
        load_task(features, "label", notes=notes)
        grouped: list[str] = []
        load_task(features, "label", group="@texts", notes=grouped)
    assert sum(SHARED in note for note in notes) == 1 and "--group @texts keeps" in notes[-1]
    assert not any(SHARED in note for note in grouped)


@pytest.mark.parametrize(
    ("name", "train", "test", "named"),
    [
        ("@text", [0, 2, 3], [1], 'e.g. the text "the cat" (train: row 0; test: row 1)'),
        ("@text_pair", [0, 1], [2], 'e.g. the second text "the dog" (train: row 0; test: row 2)'),
        ("@texts", [0, 1, 4], [2, 3, 5],
         'e.g. the pairs sharing sentences with "the cat" / "the dog" (train: rows 0, 1; test: rows 2, 3)'),
    ],
)  # fmt: skip
def test_a_text_group_on_both_sides_of_a_split_is_named_by_its_text_and_rows(small_pairs, name, train, test, named):
    with FeatureFile(small_pairs) as features:
        groups = group_rows(features, name, np.arange(9), "label", [])
    with pytest.raises(InputError) as caught:
        check_split_groups(groups, np.asarray(train), np.asarray(test), None)
    assert f"--group {name}: " in caught.value.message and named in caught.value.message, caught.value.message
    assert "e.g. '" not in caught.value.message  # not by its first row's number


def test_a_group_text_is_shortened_and_quoted_safely():
    text = 'a "quoted" line\nand \x1b[31m' + "long " * 30
    shown = quoted_text(text)
    assert shown.startswith('"a \\"quoted\\" line\\nand \\u001b[31m') and shown.endswith('…"')
    assert len(json.loads(shown)) == 60  # the text cut to 60 characters, before its escapes
    assert quoted_text("Ünïcode") == '"Ünïcode"'


def test_the_bundled_pairs_split_keeps_every_group_of_shared_sentences_on_one_side():
    """``data/pairs.csv`` (the sentence-pairs tutorial's): no ``@texts`` group has pairs in train and in test."""
    with open(REPO / "data" / "pairs.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    first = component_rows([row["sentence_a"] for row in rows], [row["sentence_b"] for row in rows])
    sides: dict[int, set[str]] = {}
    for group, row in zip(first.tolist(), rows, strict=True):
        sides.setdefault(group, set()).add(row["split"])
    assert [group for group, split in sides.items() if len(split) > 1] == []
    assert len(sides) == 76 and [row["split"] for row in rows].count("test") == 48 and len(rows) == 240


def test_single_texts_that_recur_get_the_note_that_pairs_get():
    """A corpus of single texts whose rows repeat a text (AG News and SST-2 hold copies): cross-validation can put
    copies of one text on both sides of a fold, a split can hold a test row's text in train; the probe scored
    1.000 on 320 rows of 80 texts thrice each (majority 0.359) and said nothing. Under a split only the test
    rows whose text a training (train or val) row holds count; copies inside one part are harmless."""
    from types import SimpleNamespace

    from featx.probing import note_shared_texts

    texts = ["a", "b", "a", "c", "a", "b", "d", "e"]
    cv = SimpleNamespace(texts=texts, pair_texts=None, split=None)
    notes: list[str] = []
    note_shared_texts(cv, np.arange(8), notes)
    assert notes == [
        "2 text(s) occur on more than one of the 8 rows (5 rows in all): folds can put copies of one text on both "
        "sides, and score what the probe memorised of it; --group @text keeps the rows of each text in one group"
    ]
    notes = []
    note_shared_texts(cv, np.array([0, 1, 3, 6]), notes)  # the rows probed (labelled) hold each text once
    assert notes == []
    split = np.array(["train", "train", "test", "train", "TEST", "dev", "test", "test"], dtype=object)
    notes = []
    note_shared_texts(SimpleNamespace(texts=texts, pair_texts=None, split=split), np.arange(8), notes)
    assert notes == [
        "2 of the 4 test rows have a text that a train or val row also has (1 distinct text(s)): their scores "
        "count what the probe memorised of it; --group @text names them (and refuses such a split)"
    ]
    notes = []
    inside = np.array(["train", "train", "train", "test", "train", "test", "test", "test"], dtype=object)
    note_shared_texts(SimpleNamespace(texts=texts, pair_texts=None, split=inside), np.arange(8), notes)
    assert notes == ["1 of the 4 test rows have a text that a train or val row also has (1 distinct text(s)): "
                     "their scores count what the probe memorised of it; --group @text names them (and refuses "
                     "such a split)"]  # fmt: skip


def test_the_note_of_a_command_without_group_names_no_group():
    """``featx lens`` probes beside its lens (folds, or a split) and said the note's ``--group @text``, an option it
    lacks: a caller without ``--group`` (``ProbeConfig(has_group=False)``) gets the note with the corpus as remedy."""
    from types import SimpleNamespace

    texts = ["a", "b", "a", "c", "a", "b", "d", "e"]
    split = np.array(["train", "train", "test", "train", "test", "dev", "test", "test"], dtype=object)
    pairs = ["x", "y", "x", "z", "w", "v", "u", "t"]
    files = [(texts, None, None), (texts, None, split), (pairs, texts, None)]  # folds, a split, pairs
    config = ProbeConfig("unused.h5", has_group=False)
    for shown, pair_texts, parts in files:
        features = SimpleNamespace(texts=shown, pair_texts=pair_texts, split=parts)
        notes: list[str] = []
        groups, _ = read_groups(features, config, SimpleNamespace(kept=np.arange(8)), "label", notes)
        assert groups is None and len(notes) == 1 and "--group" not in notes[0], notes
        assert notes[0].endswith(f"memorised of it; {NO_GROUP}"), notes

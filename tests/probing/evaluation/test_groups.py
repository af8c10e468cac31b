"""``--group``'s evaluation machinery: outer folds, the split check, the inner holdouts (C, alpha, the stacked
probe's folds) and the bootstrap, all by whole group."""

from __future__ import annotations

import numpy as np
import pytest

from featx.errors import InputError
from featx.probing import evaluation as ev
from featx.probing.evaluation import regression_metrics as rm
from featx.probing.solvers import ridge
from featx.probing.tasks.regression import make_plan as regression_plan


def _groups(sizes: list[int], column: str = "doc") -> ev.Groups:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    return ev.Groups(column, codes, [f"g{k}" for k in range(len(sizes))])


def _never_split(codes: np.ndarray, first: np.ndarray, second: np.ndarray) -> bool:
    return len(np.intersect1d(codes[first], codes[second])) == 0


def test_grouped_folds_never_split_a_group_and_cover_every_row_once():
    groups = _groups([3, 5, 2, 4, 6, 3, 2, 5, 4, 3, 2, 6])
    y = (groups.codes % 2).astype(np.int64)
    plan = ev.make_plan(y, None, 4, 0, ["a", "b"], "label", groups)
    assert plan.evaluation == "4-fold cv by doc"
    assert np.array_equal(plan.groups, groups.codes)
    tested = np.sort(np.concatenate([test for _, test in plan.folds]))
    assert np.array_equal(tested, np.arange(len(y)))
    for train, test in plan.folds:
        assert _never_split(groups.codes, train, test)
        assert len(np.unique(y[test])) == 2  # stratified as far as whole groups allow


def test_grouped_folds_are_seeded():
    groups = _groups([2] * 20)
    y = (np.arange(40) % 2).astype(np.int64)
    first, again, other = (ev.make_plan(y, None, 5, seed, ["a", "b"], "label", groups) for seed in (3, 3, 4))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(first.folds, again.folds, strict=True))
    assert any(not np.array_equal(a[1], b[1]) for a, b in zip(first.folds, other.folds, strict=True))


def test_regression_folds_are_grouped_too():
    groups = _groups([4, 1, 3, 5, 2, 4, 3, 2])
    values = np.linspace(0, 1, len(groups.codes))
    plan = regression_plan(values, None, 3, 0, groups)
    assert plan.evaluation == "3-fold cv by doc"
    for train, test in plan.folds:
        assert _never_split(groups.codes, train, test)
    assert sorted(np.concatenate([test for _, test in plan.folds]).tolist()) == list(range(len(values)))


def test_fewer_groups_than_folds_is_refused():
    groups = _groups([10, 10, 10])
    y = (np.arange(30) % 2).astype(np.int64)
    with pytest.raises(InputError, match="only 3 group.*5 folds") as raised:
        ev.make_plan(y, None, 5, 0, ["a", "b"], "label", groups)
    assert "--folds 2" in raised.value.hint


def test_a_split_with_a_group_on_both_sides_is_refused_naming_it():
    groups = _groups([4, 4, 4, 4])
    y = (np.arange(16) % 2).astype(np.int64)
    split = np.array(["train"] * 8 + ["test"] * 8, dtype=object)
    split[4] = "test"  # a row of g1 in test, the rest of g1 in train
    with pytest.raises(InputError, match="both the train and the test split, e.g. 'g1'"):
        ev.make_plan(y, split, 5, 0, ["a", "b"], "label", groups)
    split[4] = "train"
    plan = ev.make_plan(y, split, 5, 0, ["a", "b"], "label", groups)
    assert plan.is_split and np.array_equal(plan.groups, groups.codes)


def test_a_dev_part_sharing_a_group_with_test_is_refused():
    groups = _groups([4, 4, 4, 4])
    y = (np.arange(16) % 2).astype(np.int64)
    split = np.array(["train"] * 4 + ["dev"] * 4 + ["test"] * 8, dtype=object)
    split[8] = "dev"  # g2 in dev and test
    with pytest.raises(InputError, match="dev and the test split, e.g. 'g2'"):
        ev.make_plan(y, split, 5, 0, ["a", "b"], "label", groups)


def test_a_dev_part_sharing_a_group_with_train_is_refused():
    groups = _groups([4, 4, 4, 4])
    y = (np.arange(16) % 2).astype(np.int64)
    split = np.array(["train"] * 4 + ["dev"] * 4 + ["test"] * 8, dtype=object)
    split[4] = "train"  # a row of g1 in train, the rest of g1 in dev: C would be chosen on what was memorised
    with pytest.raises(InputError, match="both the train and the dev split, e.g. 'g1'.*C would be chosen"):
        ev.make_plan(y, split, 5, 0, ["a", "b"], "label", groups)
    split[4] = "dev"
    plan = ev.make_plan(y, split, 5, 0, ["a", "b"], "label", groups)
    assert plan.dev[0] is not None and len(plan.dev[0]) == 4


def test_the_c_holdout_takes_whole_groups():
    rng = np.random.default_rng(0)
    groups = _groups([5] * 30)
    y = (groups.codes % 2).astype(np.int64)
    X = rng.standard_normal((len(y), 6)).astype(np.float32)
    train = np.arange(120)
    fitted = ev.fit_logreg(X, [y], train, None, 2, (0.1, 1.0), False, 0, groups.codes)
    held = fitted[0][3][0]
    assert len(held) and _never_split(groups.codes, held, np.setdiff1d(train, held))
    fit, val = ev.inner_split(y, train, 0, groups.codes)
    assert np.array_equal(np.sort(np.concatenate([fit, val])), train)
    assert _never_split(groups.codes, fit, val) and len(np.unique(y[val])) == 2
    ungrouped_fit, ungrouped_val = ev.inner_split(y, train, 0)
    assert not _never_split(groups.codes, ungrouped_fit, ungrouped_val)  # what the groups prevent


def test_the_alpha_holdout_and_the_stacked_folds_take_whole_groups():
    rng = np.random.default_rng(1)
    groups = _groups([4] * 25)
    X = rng.standard_normal((100, 5))
    y_value = rng.standard_normal(100)
    train = np.arange(80)
    fits, _ = ridge.fit_ridge(X, [y_value], train, None, (1.0, 10.0), 0, groups.codes)
    held = fits[0][2][0]
    assert len(held) and _never_split(groups.codes, held, np.setdiff1d(train, held))
    y = (groups.codes % 2).astype(np.int64)
    blocks = [X.astype(np.float32), rng.standard_normal((100, 5)).astype(np.float32)]
    result = ev.run_stack("logreg", blocks, y, train, np.arange(80, 100), None, 2, (1.0,), False, 0, groups.codes)
    assert result.validation is not None and len(result.predictions) == 20


def test_a_training_part_of_one_group_is_refused():
    with pytest.raises(InputError, match="single group"):
        ev.group_holdout(np.zeros(6, np.int64), 0)


def test_split_bootstrap_intervals_resample_whole_groups():
    """Errors shared within groups: resampling groups gives wider intervals than resampling rows."""
    rng = np.random.default_rng(2)
    codes = np.repeat(np.arange(10), 40)
    y_true = rng.standard_normal(400)
    y_pred = y_true + rng.standard_normal(10)[codes]  # each group's error is one draw
    rows = rm.bootstrap(y_true, y_pred, 300, 0)
    grouped = rm.bootstrap(y_true, y_pred, 300, 0, codes)
    width = {name: high - low for name, (low, high) in (("rows", rows["r2"]), ("groups", grouped["r2"]))}
    assert width["groups"] > 2 * width["rows"]
    labels = (y_true > 0).astype(np.int64)
    predicted = np.where(rng.random(10)[codes] < 0.5, labels, 1 - labels)  # whole groups right or wrong
    plain = ev.bootstrap_intervals(labels, predicted, 2, 300, 0)["accuracy"]
    by_group = ev.bootstrap_intervals(labels, predicted, 2, 300, 0, codes)["accuracy"]
    assert by_group[1] - by_group[0] > 2 * (plain[1] - plain[0])


def test_the_stratified_holdout_takes_whole_groups_and_about_a_fifth_of_every_class():
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(3000), rng.integers(3, 30, size=3000))
    shares = np.r_[np.full(10, 0.09), 0.003, 0.097]
    y = rng.choice(12, size=len(codes), p=shares / shares.sum())
    fit, val = ev.group_holdout(codes, 0, y)
    assert not set(codes[fit]) & set(codes[val]) and len(fit) + len(val) == len(codes)
    held = np.bincount(y[val], minlength=12) / np.bincount(y, minlength=12)
    assert np.all(np.abs(held - 0.2) < 0.03), held  # the rare class (about 0.3% of the rows) too
    again = ev.group_holdout(codes, 0, 11 - y)  # the same rows, their classes coded the other way round
    assert np.array_equal(again[1], val)
    assert not np.array_equal(ev.group_holdout(codes, 1, y)[1], val)  # seeded


def test_the_stratified_holdout_of_few_groups_holds_one_out_and_keeps_one():
    for count in (2, 3, 5):
        codes = np.repeat(np.arange(count), 4)
        fit, val = ev.group_holdout(codes, 0, np.tile([0, 1], 2 * count))
        assert len(np.unique(codes[val])) >= 1 and len(np.unique(codes[fit])) >= 1

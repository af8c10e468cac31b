"""``FoldSpy``: every outer fold and every holdout of a training part a probing run draws, with the groups it was
given, so a test can check that no group is on both sides of either (``--group``)."""

from __future__ import annotations

import numpy as np

from featx.probing import evaluation
from featx.probing.evaluation import core


class FoldSpy:
    """Every outer fold (``run_linear_tasks``, ``run_logreg_sets``) and every holdout of a training part
    (``inner_split``: the C search of every logreg probe, INLP's and the sweep's torch probes) drawn during a run, each
    with its groups."""

    def __init__(self, monkeypatch):
        self.folds: list[tuple] = []
        self.holdouts: list[tuple] = []
        original_fits, original_split = evaluation.run_linear_tasks, evaluation.inner_split
        original_sets = evaluation.run_logreg_sets

        def fits(name, X, labels, train, test, dev, n_classes, cs, balanced, seed, groups=None):
            self.folds.append((train, test, groups))
            return original_fits(name, X, labels, train, test, dev, n_classes, cs, balanced, seed, groups)

        def sets(X, column_sets, y, train, test, dev, n_classes, cs, balanced, seed, groups=None, holdout=None):
            self.folds.append((train, test, groups))  # featx neurons' sets of k neurons (holdout: inner_split's)
            return original_sets(X, column_sets, y, train, test, dev, n_classes, cs, balanced, seed, groups, holdout)

        def split(y, rows, seed, groups=None):
            fit, val = original_split(y, rows, seed, groups)
            self.holdouts.append((fit, val, groups))  # the groups of the fold's training rows
            return fit, val

        monkeypatch.setattr(evaluation, "run_linear_tasks", fits)
        monkeypatch.setattr(evaluation, "run_logreg_sets", sets)
        monkeypatch.setattr(evaluation, "inner_split", split)  # INLP's and the sweep's torch probes'
        monkeypatch.setattr(core, "inner_split", split)  # the C search of every logreg probe

    def check_whole_groups(self, n_groups: int) -> None:
        assert self.folds and self.holdouts
        for train, test, groups in self.folds:
            assert groups is not None and len(np.unique(groups)) == n_groups
            assert not len(np.intersect1d(groups[train], groups[test]))  # no group on both sides of a fold
        for fit, val, groups in self.holdouts:
            assert groups is not None and len(val) and len(fit)
            assert not len(np.intersect1d(groups[fit], groups[val]))  # held out by whole groups

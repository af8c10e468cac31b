"""The order a stage hands out its probes: the longest first, by the expected cost read from each features
file's header; a probe whose features cannot be read costs nothing and keeps its place among its kind."""

from __future__ import annotations

import pytest

from featx.study.cells import EXTRACT
from featx.study.schedule import expected_cost, longest_first
from featx.study.workers import share_of_cores


@pytest.mark.slow  # the done_study fixture: a whole study (~1.8 s)
def test_probes_go_longest_first(done_study):
    _, result, _ = done_study
    tasks = [cell.task for cell in result.plan.probes]
    costs = [expected_cost(task) for task in tasks]
    order = longest_first(tasks)
    assert sorted(order) == list(range(len(tasks)))
    assert [costs[index] for index in order] == sorted(costs, reverse=True)
    unread = [index for index, task in enumerate(tasks) if "/bad/" in task.key]  # no features file: cost 0
    assert unread and all(costs[index] == 0.0 for index in unread) and order[-len(unread) :] == unread
    by_key = dict(zip((task.key for task in tasks), costs, strict=True))
    assert by_key["probe/tiny/sents/label"] > by_key["probe/rand/sents/label"] > 0  # tiny's computes the lexical
    assert expected_cost(result.plan.extractions[0].task) == 0.0 and result.plan.extractions[0].task.kind == EXTRACT


def test_each_worker_gets_its_share_of_the_cores():
    assert [share_of_cores(workers, cores=2) for workers in (1, 2, 3)] == [2, 1, 1]
    assert share_of_cores(4, cores=16) == 4 and share_of_cores(0, cores=2) == 2

"""A Ray probe's share of the CPUs (``probe_share``): the cluster's CPUs split between the probes in flight, never
more than its smallest node with CPUs has (any node fits one), at least one; on one machine the same
``cores // jobs`` as the local engine's workers."""

from __future__ import annotations

from types import SimpleNamespace

from featx.study.ray_engine import probe_share


def _cluster(*cpus: int, dead: int = 0) -> SimpleNamespace:
    nodes = [{"Alive": True, "Resources": {"CPU": count}} for count in cpus]
    nodes += [{"Alive": False, "Resources": {"CPU": 64}}] * dead
    return SimpleNamespace(nodes=lambda: nodes)


def test_one_machine_gives_each_probe_cores_over_jobs():
    assert [probe_share(_cluster(2), jobs) for jobs in (1, 2, 3)] == [2, 1, 1]
    assert probe_share(_cluster(16), 4) == 4


def test_a_probe_fits_any_node_and_dead_or_cpu_less_nodes_count_for_nothing():
    assert probe_share(_cluster(1, 1), 1) == 1
    assert probe_share(_cluster(1, 1), 2) == 1
    assert probe_share(_cluster(8, 4, dead=2), 2) == 4
    assert probe_share(_cluster(0, 8, 8), 2) == 8
    assert probe_share(_cluster(), 2) == 1

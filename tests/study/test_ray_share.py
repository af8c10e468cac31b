"""The Ray engine without a cluster (fakes of the few Ray calls it makes). A Ray probe's share of the CPUs
(``probe_share``): the cluster's CPUs split between the probes in flight, never more than its smallest node with
CPUs has (any node fits one), at least one; on one machine the same ``cores // jobs`` as the local engine's
workers. A dead Ray worker fails its cell and the others go on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from featx.errors import InputError
from featx.study.ray_engine import RayEngine, check_address, probe_share


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


class _Died(Exception):
    pass


class _FakeRay:
    """``remote``/``wait``/``get`` over outcomes given by key; ``get`` raises ``_Died`` (a RayError) for those
    whose worker died."""

    exceptions = SimpleNamespace(RayError=_Died)

    def __init__(self, died: set[str]):
        self.died = died
        self.cancelled: list = []

    def cluster_resources(self):
        return {"CPU": 2}

    def nodes(self):
        return [{"Alive": True, "Resources": {"CPU": 2}}]

    def remote(self, function):
        class Remote:
            def options(self, **wants):
                return SimpleNamespace(remote=lambda task, threads: task["key"])

        return Remote()

    def wait(self, references, num_returns):
        return references[:num_returns], references[num_returns:]

    def get(self, key):
        if key in self.died:
            raise _Died(f"The worker died unexpectedly while executing {key}.\nmore lines")
        return {"key": key, "status": "done", "seconds": 1.0}

    def cancel(self, reference, force):
        self.cancelled.append(reference)


def test_a_dead_ray_worker_fails_its_cell_and_the_others_go_on(monkeypatch):
    tasks = [SimpleNamespace(key=key, kind="probe", cost=1.0, as_dict=lambda key=key: {"key": key}) for key in "abc"]
    monkeypatch.setattr("featx.study.ray_engine.longest_first", lambda tasks: list(range(len(tasks))))
    seen: list[str] = []
    outcomes = RayEngine(None)._run(_FakeRay({"b"}), tasks, 2, lambda task, outcome: seen.append(outcome["status"]))
    assert [outcome["status"] for outcome in outcomes] == ["done", "failed", "done"] and len(seen) == 3
    assert outcomes[1]["error"] == "its Ray worker died (The worker died unexpectedly while executing b.)"


def test_a_cluster_that_refuses_the_connection_is_one_clear_error():
    """Ray's own ConnectionError (e.g. a cluster with token authentication and no token sent) becomes an
    InputError naming the cluster and what it may need."""

    def refuse(**kwargs):
        raise ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6391")

    ray = SimpleNamespace(is_initialized=lambda: False, init=refuse)
    engine = RayEngine(None)
    engine.address = "127.0.0.1:6391"  # as given (the constructor checks that it answers)
    with pytest.raises(InputError, match=r"could not connect to Ray \(127.0.0.1:6391\)") as raised:
        engine._connect(ray)
    assert "RAY_AUTH_MODE=token" in raised.value.hint


def test_the_local_cluster_is_a_new_one_whatever_ray_start_left_on_this_machine(monkeypatch):
    """Without an address the engine starts a cluster of its own for the run: Ray's ``init`` without an address
    joins the cluster named by ``RAY_ADDRESS`` or by the last ``ray start`` on this machine (its
    /tmp/ray/ray_current_cluster, left behind by a cluster that died too), and with ``num_cpus`` refuses it
    ("When connecting to an existing cluster, num_cpus and num_gpus must not be provided"); ``address="local"``
    is Ray's "start a new local instance, even if there is already one"."""
    calls: list[dict] = []
    ray = SimpleNamespace(is_initialized=lambda: False, init=lambda **kwargs: calls.append(kwargs))
    monkeypatch.setenv("RAY_ADDRESS", "192.0.2.2:6390")
    assert RayEngine(None)._connect(ray) is True  # started here: stopped at the end of the run
    assert calls[0]["address"] == "local" and calls[0]["_node_ip_address"] == "127.0.0.1"


@pytest.mark.parametrize("address", ["127.0.0.1:\u00b2", "127.0.0.1:\u0663", "127.0.0.1:65536", "ray://h:1_0", "h:"])
def test_a_port_that_is_not_ascii_digits_up_to_65535_is_refused_in_one_line(address):
    """'²' passed str.isdigit and int() raised; 65536 went to the socket, which raised OverflowError."""
    with pytest.raises(InputError, match="is not HOST:PORT"):
        check_address(address)

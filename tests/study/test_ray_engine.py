"""The Ray engine: the same results table as the local engine, on a local Ray cluster of 2 CPUs and on a
two-node cluster started with ``ray start`` on this machine (loopback only); an address that does not answer
is refused before any work. The Ray tests share one xdist worker (``ray stop`` ends every Ray process here)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support.study_files import study_dict

import featx.study
from featx.errors import InputError
from featx.study import check_address

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


def _small(model: Path, corpora: dict[str, Path], output: Path, **study) -> dict:
    """Two models over the one labelled corpus: enough cells to run side by side, few enough to be quick."""
    data = study_dict(model, corpora, output, bad=False, **study)
    data["corpora"] = [dict(data["corpora"][0], labels=["label"])]
    return data


def _table(result) -> pd.DataFrame:
    assert result.exit_code == 0, result.errors
    return result.results


@pytest.fixture(scope="module")
def local_table(tiny_model, study_corpora, tmp_path_factory) -> pd.DataFrame:
    output = tmp_path_factory.mktemp("ray-local") / "out"
    return _table(featx.study.run(_small(tiny_model, study_corpora, output), echo=lambda line: None))


def test_a_local_ray_cluster_gives_the_local_engines_table(local_table, tiny_model, study_corpora, tmp_path):
    study = _small(tiny_model, study_corpora, tmp_path / "out", engine="ray", jobs=2)
    lines: list[str] = []
    table = _table(featx.study.run(study, echo=lines.append))
    pd.testing.assert_frame_equal(table, local_table)
    assert any(line.startswith("probe/rand/sents/label: done") for line in lines)
    assert not ray.is_initialized()  # the engine stops the local cluster it started


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ray_cli(*args: str) -> None:
    binary = shutil.which("ray", path=os.path.dirname(sys.executable)) or "ray"
    # Without token authentication, which Ray turns on for `ray start` where ~/.ray/auth_token exists and then
    # asks of every node and driver that connects by address (RAY_AUTH_MODE=token): loopback only.
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    ran = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 0, f"ray {' '.join(args)}: {ran.stdout[-2000:]}{ran.stderr[-2000:]}"


def test_a_two_node_cluster_gives_the_local_engines_table(local_table, tiny_model, study_corpora, tmp_path):
    port = _free_port()
    address = f"127.0.0.1:{port}"
    head = ("start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=1")
    try:
        _ray_cli(*head, "--include-dashboard=false", "--disable-usage-stats")
        _ray_cli("start", f"--address={address}", "--node-ip-address=127.0.0.1", "--num-cpus=1")
        study = _small(tiny_model, study_corpora, tmp_path / "out", engine="ray", address=address, jobs=2)
        table = _table(featx.study.run(study, echo=lambda line: None))
        pd.testing.assert_frame_equal(table, local_table)
    finally:
        _ray_cli("stop", "--force")


def test_an_address_that_does_not_answer_is_refused_before_any_work(tiny_model, study_corpora, tmp_path):
    address = f"127.0.0.1:{_free_port()}"
    with pytest.raises(InputError, match=f"Ray address '{address}' does not answer"):
        check_address(address)
    study = _small(tiny_model, study_corpora, tmp_path / "out", engine="ray", address=address)
    with pytest.raises(InputError, match="does not answer"):
        featx.study.run(study, echo=lambda line: None)
    assert not (tmp_path / "out" / "tiny").exists()
    with pytest.raises(InputError, match="is not HOST:PORT"):
        check_address("nowhere")

"""Sharded extraction and ``featx merge``: separate processes, torchrun, crashes, and every refusal.

Equality with a single-process run: a shard batches only its own rows, so a row may
share its batch with other rows (and be padded to another width) than in the single
run. Padding is masked, so the features agree to float32 rounding (<= 1e-5) but need
not be bit-identical: the matrix products have other shapes. With ``batch_size=1``
every row is its own batch in both runs, the computations are the same, and the
stored features are exactly equal; ``test_same_batches_give_identical_features``
checks that.
"""

import json
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from support.shards import N_ROWS, options, run, run_shards
from support.tiny import build_tiny_bert

import featx
from featx.cli import main
from featx.errors import FeatxError, IncompleteError, Interrupted, StoreError
from featx.extraction import ExtractConfig, extract
from featx.extraction.shards.merge import merge
from featx.extraction.shards.sharding import ShardSpec, manifest_path
from featx.store import FeatureWriter, OutputLock, partial_path
from featx.store.schema import ROW_INDEX

ROOT = Path(__file__).resolve().parents[3]

# torchrun's own agent logs with glog-style prefixes ("E1129 12:29:56.478000 14410 .../torch/distributed/
# elastic/agent/server/api.py:1008] ..."). Its exit barrier races with the agent that hosts the store
# shutting down (pytorch/pytorch#69520): the other node's agent may log a DistNetworkError traceback after
# every worker has finished and the run has succeeded. That is the launcher, not featx.
LAUNCHER_LOG = re.compile(r"^[EWI]\d{4} [\d:.]+ \d+ \S*torch/distributed/elastic/\S+:\d+\] ")


def featx_stderr(stderr: str) -> str:
    """What the featx processes wrote to stderr, without torchrun's agent log lines."""
    return "\n".join(line for line in stderr.splitlines() if not LAUNCHER_LOG.match(line))


def cli_args(corpus, output, model, *extra) -> list[str]:
    return [
        "extract",
        str(corpus),
        "-o",
        str(output),
        "--model",
        str(model),
        "--store-dtype",
        "float32",
        "--commit-rows",
        "4",
        "-q",
        *extra,
    ]


def subprocess_env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def assert_same_rows(merged: Path, single: Path, exact: bool) -> None:
    with featx.open(merged) as a, featx.open(single) as b:
        assert a.complete and a.n_rows == b.n_rows == N_ROWS
        assert a.texts == b.texts and a.ids == b.ids and list(a.split) == list(b.split)
        assert a.label_columns == b.label_columns
        for column in b.label_columns:
            assert a.label_names(column) == b.label_names(column)
            np.testing.assert_array_equal(a.labels(column), b.labels(column))
        for name in ("n_tokens", "n_kept", "truncated"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert a.attrs["fingerprint"] == b.attrs["fingerprint"]  # same options: the same file, for featx
        assert a.layers == b.layers and a.poolings == b.poolings
        for pooling in b.poolings:
            for layer in b.layers:
                if exact:
                    np.testing.assert_array_equal(a.features(pooling, layer), b.features(pooling, layer))
                else:
                    np.testing.assert_allclose(a.features(pooling, layer), b.features(pooling, layer), atol=1e-5)


def extract_shard_in_child(corpus, output, model, count, index):
    extract(ExtractConfig(corpus=corpus, output=output, shards=count, shard_index=index, **options(model)))


@pytest.mark.slow
def test_shards_in_separate_processes_equal_single_process(tiny_model, corpus, tmp_path):
    # Five processes at once (2 + 3 shards). They fork from a server that imported featx and
    # transformers once: separate processes, as on separate GPUs, without paying the imports five
    # times on a small CI machine. The real `python -m featx` entry point runs in the torchrun test.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["featx.extraction.run.orchestrate", "transformers"])
    processes = []
    for count in (2, 3):
        for index in range(count):
            process = context.Process(
                target=extract_shard_in_child, args=(corpus, tmp_path / f"out{count}.h5", tiny_model, count, index)
            )
            process.start()
            processes.append(process)
    single = run(corpus, tmp_path / "single.h5", tiny_model).output
    for process in processes:
        process.join(timeout=300)
        assert process.exitcode == 0
    for count in (2, 3):
        output = tmp_path / f"out{count}.h5"
        shard_rows = []
        for index in range(count):
            with h5py.File(ShardSpec(index, count).path(output), "r") as shard:
                shard_rows.append(shard[ROW_INDEX][()])
        assert sorted(np.concatenate(shard_rows).tolist()) == list(range(N_ROWS))
        summary = merge(output)
        assert summary.status == "merged" and summary.shards == count and summary.rows == N_ROWS
        assert_same_rows(output, single, exact=False)  # other batch neighbours: see the module docstring
        assert not ShardSpec(0, count).path(output).exists() and not manifest_path(output).exists()


@pytest.mark.slow
def test_same_batches_give_identical_features(tiny_model, corpus, tmp_path):
    single = run(corpus, tmp_path / "single.h5", tiny_model, batch_size=1).output
    output = tmp_path / "out.h5"
    run_shards(corpus, output, tiny_model, 3, batch_size=1)
    merge(output)
    assert_same_rows(output, single, exact=True)


def test_token_level_states_are_merged_in_corpus_order(tiny_model, corpus, tmp_path):
    single = run(corpus, tmp_path / "single.h5", tiny_model, tokens=True, poolings="mean").output
    output = tmp_path / "out.h5"
    run_shards(corpus, output, tiny_model, 3, tokens=True, poolings="mean")
    merge(output, keep_shards=True)
    assert ShardSpec(2, 3).path(output).exists() and manifest_path(output).exists()
    assert_same_rows(output, single, exact=False)
    with featx.open(output) as a, featx.open(single) as b:
        np.testing.assert_array_equal(a.token_offsets, b.token_offsets)
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
        np.testing.assert_array_equal(a.word_ids, b.word_ids)
        for layer in b.layers:
            np.testing.assert_allclose(a.token_states(layer), b.token_states(layer), atol=1e-5)
    with h5py.File(output, "r") as merged, h5py.File(single, "r") as plain:
        names, plain_names = [], []
        merged.visit(names.append)
        plain.visit(plain_names.append)
        assert names == plain_names  # the same layout as a single-process file, no shard leftovers
        assert merged["pooled/mean"].chunks == plain["pooled/mean"].chunks
        assert json.loads(merged.attrs["merged_from"])[0]["file"] == "out.shard-00-of-03.h5"


def torchrun_command() -> list[str]:
    script = Path(sys.executable).with_name("torchrun")
    return [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]


@pytest.mark.slow
@pytest.mark.xdist_group("ports")  # picks a free port then binds it: never two at once
def test_torchrun_two_processes_write_the_merged_file(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    env = {**subprocess_env(), "FEATX_DIST_TIMEOUT": "240"}
    process = subprocess.run(
        [
            *torchrun_command(),
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "featx",
            *cli_args(corpus, output, tiny_model),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    assert "merged 2 shards into" in process.stdout and "Traceback" not in process.stderr
    assert not ShardSpec(1, 2).path(output).exists() and not manifest_path(output).exists()
    single = run(corpus, tmp_path / "single.h5", tiny_model).output
    assert_same_rows(output, single, exact=False)


def extract_as_rank(corpus, output, model, rank, world_size, port, report):
    """What one torchrun worker does, with the variables torchrun would set."""
    os.environ.update(
        {
            "RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world_size),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "FEATX_DIST_TIMEOUT": "240",
        }
    )
    import featx.extraction.run.orchestrate as orchestrate

    extractions, original = [], orchestrate._run

    def counted_run(*args, **kwargs):  # a shard that is skipped never reaches the model
        extractions.append(1)
        return original(*args, **kwargs)

    orchestrate._run = counted_run
    try:
        summary = extract(ExtractConfig(corpus=corpus, output=output, **options(model)))
        result = {"status": summary.status, "output": str(summary.output), "extractions": len(extractions)}
    except FeatxError as error:
        result = {"error": error.message}
    Path(report).write_text(json.dumps(result))


def run_as_ranks(corpus, output, model, tmp_path, world_size=2) -> list[dict]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["featx.extraction.run.orchestrate", "transformers"])
    reports = [tmp_path / f"rank{rank}.json" for rank in range(world_size)]
    processes = [
        context.Process(target=extract_as_rank, args=(corpus, output, model, rank, world_size, port, reports[rank]))
        for rank in range(world_size)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=300)
        assert process.exitcode == 0
    return [json.loads(report.read_text()) for report in reports]


@pytest.mark.slow
@pytest.mark.xdist_group("ports")  # picks a free port then binds it: never two at once
def test_failed_rank_blocks_the_merge_and_a_relaunch_redoes_only_that_shard(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    with OutputLock(ShardSpec(1, 2).path(output)):  # shard 1 cannot start: "another featx is writing it"
        rank0, rank1 = run_as_ranks(corpus, output, tiny_model, tmp_path)
    assert "1 shard(s) failed, nothing merged (rank 1: another featx extract" in rank0["error"]
    assert "another featx extract" in rank1["error"]
    shard0 = ShardSpec(0, 2).path(output)
    assert shard0.exists() and not output.exists()
    rank0, rank1 = run_as_ranks(corpus, output, tiny_model, tmp_path)
    assert rank0 == {"status": "written", "output": str(output), "extractions": 0}  # shard 0: done before
    assert rank1 == {"status": "written", "output": str(ShardSpec(1, 2).path(output)), "extractions": 1}
    assert not shard0.exists()
    assert_same_rows(output, run(corpus, tmp_path / "single.h5", tiny_model).output, exact=False)


def extract_then_crash(corpus, output, model, count, index):
    """A shard extraction hard-killed (SIGKILL: no cleanup at all) right after its second commit."""
    original, commits = FeatureWriter.commit, []

    def commit(self, rows_done):
        original(self, rows_done)
        commits.append(rows_done)
        if len(commits) == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    FeatureWriter.commit = commit
    extract_shard_in_child(corpus, output, model, count, index)


@pytest.mark.slow
def test_killed_shard_resumes_without_losing_or_duplicating_rows(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["featx.extraction.run.orchestrate", "transformers"])
    process = context.Process(target=extract_then_crash, args=(corpus, output, tiny_model, 2, 1))
    process.start()
    run(corpus, output, tiny_model, shards=2, shard_index=0)
    process.join(timeout=300)
    assert process.exitcode == -signal.SIGKILL
    shard = ShardSpec(1, 2).path(output)
    assert not shard.exists() and partial_path(shard).exists()
    with pytest.raises(IncompleteError, match="shard 1 of 2 is not finished"):
        merge(output)
    resumed = run(corpus, output, tiny_model, shards=2, shard_index=1)
    assert resumed.status == "resumed" and resumed.resumed_from == 8
    merge(output)
    with featx.open(output) as merged:
        assert merged.ids == [str(row) for row in range(N_ROWS)]
    assert_same_rows(output, run(corpus, tmp_path / "single.h5", tiny_model).output, exact=False)


def test_interrupted_shard_resumes_in_process(tiny_model, corpus, tmp_path, monkeypatch):
    output = tmp_path / "out.h5"
    original_commit = FeatureWriter.commit

    def interrupted_commit(self, rows_done):
        original_commit(self, rows_done)
        raise KeyboardInterrupt

    monkeypatch.setattr(FeatureWriter, "commit", interrupted_commit)
    with pytest.raises(Interrupted, match="4 of 15 rows are saved"):
        run(corpus, output, tiny_model, shards=2, shard_index=0)
    monkeypatch.setattr(FeatureWriter, "commit", original_commit)
    assert run(corpus, output, tiny_model, shards=2, shard_index=0).resumed_from == 4
    assert run(corpus, output, tiny_model, shards=2, shard_index=1).status == "written"
    merge(output)
    assert_same_rows(output, run(corpus, tmp_path / "single.h5", tiny_model).output, exact=False)


@pytest.mark.slow
def test_relaunch_skips_finished_shards_and_a_finished_merge(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    first = run(corpus, output, tiny_model, shards=2, shard_index=0)
    again = run(corpus, output, tiny_model, shards=2, shard_index=0)
    assert again.status == "up-to-date" and again.output == first.output
    run(corpus, output, tiny_model, shards=2, shard_index=1)
    merge(output)
    after_merge = run(corpus, output, tiny_model, shards=2, shard_index=1)
    assert after_merge.status == "up-to-date" and after_merge.output == output
    assert not ShardSpec(1, 2).path(output).exists()  # nothing recomputed
    assert run(corpus, output, tiny_model).status == "up-to-date"  # a plain run sees the same file
    with pytest.raises(StoreError, match="different corpus, model or options"):
        run(corpus, output, tiny_model, shards=2, shard_index=0, poolings="mean")


def test_interrupted_merge_resumes(tiny_model, corpus, tmp_path, monkeypatch):
    output = tmp_path / "out.h5"
    run_shards(corpus, output, tiny_model, 2)
    reference = tmp_path / "reference.h5"
    merge(output, keep_shards=True)
    output.rename(reference)
    monkeypatch.setattr("featx.store.shards.BLOCK_BYTES", 4 * 3 * 32 * 4 * 5)  # blocks of 4 rows
    original_commit, commits = FeatureWriter.commit, []

    def interrupted_commit(self, rows_done):
        original_commit(self, rows_done)
        commits.append(rows_done)
        if len(commits) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(FeatureWriter, "commit", interrupted_commit)
    with pytest.raises(Interrupted, match="merge interrupted: 8 of 30 rows"):
        merge(output)
    assert partial_path(output).exists() and ShardSpec(0, 2).path(output).exists()
    monkeypatch.setattr(FeatureWriter, "commit", original_commit)
    assert merge(output).status == "merged"
    with h5py.File(output, "r") as merged, h5py.File(reference, "r") as whole:
        assert merged.attrs["complete"] and int(merged["progress/rows_done"][0]) == N_ROWS
        for name in whole["pooled"]:
            np.testing.assert_array_equal(merged["pooled"][name][()], whole["pooled"][name][()])


def test_merge_refuses_a_different_model(tiny_model, corpus, tmp_path):
    other_model = build_tiny_bert(tmp_path / "other-bert", seed=1)
    output = tmp_path / "out.h5"
    run(corpus, output, tiny_model, shards=2, shard_index=0)
    with pytest.raises(StoreError, match="describes a sharded extraction .* different corpus, model or options"):
        run(corpus, output, other_model, shards=2, shard_index=1)
    run(corpus, output, other_model, shards=2, shard_index=1, overwrite=True)
    with pytest.raises(StoreError, match=r"shard 0 \(out.shard-00-of-02.h5\) was made from a different model"):
        merge(output)
    assert not output.exists()


def test_merge_refuses_different_options(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    run(corpus, output, tiny_model, shards=2, shard_index=0)
    run(corpus, output, tiny_model, shards=2, shard_index=1, poolings="mean", overwrite=True)
    with pytest.raises(StoreError, match="shard 0 .* different extraction options"):
        merge(output)


def test_merge_refuses_a_different_corpus(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    run(corpus, output, tiny_model, shards=2, shard_index=0)
    corpus.write_text(corpus.read_text().replace("the cat loved", "the dog loved"))
    run(corpus, output, tiny_model, shards=2, shard_index=1, overwrite=True)
    with pytest.raises(StoreError, match="shard 0 .* different corpus file"):
        merge(output)


def test_merge_refuses_duplicated_and_missing_rows(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    run_shards(corpus, output, tiny_model, 2)
    first, second = ShardSpec(0, 2).path(output), ShardSpec(1, 2).path(output)
    with h5py.File(first, "r") as file:
        rows_of_first = file[ROW_INDEX][()]
    with h5py.File(second, "r+") as file:  # as if shard 1 came from another sharded run
        original = file[ROW_INDEX][()]
        file[ROW_INDEX][...] = rows_of_first
    with pytest.raises(
        StoreError,
        match=f"in more than one shard, e.g. row {rows_of_first[0]} in out.shard-00-of-02.h5 and out.shard-01-of-02.h5",
    ):
        merge(output)
    with h5py.File(second, "r+") as file:
        file[ROW_INDEX][...] = original
    # A corpus one row longer than the shards cover:
    manifest = json.loads(manifest_path(output).read_text())
    manifest_path(output).write_text(json.dumps({**manifest, "corpus_n_rows": N_ROWS + 1}))
    for path in (first, second):
        with h5py.File(path, "r+") as file:
            file.attrs["corpus_n_rows"] = N_ROWS + 1
    with pytest.raises(StoreError, match=f"1 corpus row\\(s\\) are in no shard: {N_ROWS}"):
        merge(output)
    assert not output.exists() and not partial_path(output).exists()


def test_a_shard_damaged_past_its_check_at_open_is_named_not_a_traceback(tiny_model, corpus, tmp_path):
    """A chunk's address in a pooled dataset's chunk index pointed past the end: the shard opens and passes its
    checks, and only the merge's read of that chunk fails, as featx's error naming the shard."""
    output = tmp_path / "out.h5"
    run_shards(corpus, output, tiny_model, 2)
    second = ShardSpec(1, 2).path(output)
    with h5py.File(second, "r") as file:
        name = next(f"pooled/{key}" for key in file["pooled"])
        chunk = file[name].id.get_chunk_info(0).byte_offset
    data = bytearray(second.read_bytes())
    data[data.index(int(chunk).to_bytes(8, "little")) + 7] = 0x7F
    second.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=f"{re.escape(str(second))} cannot be read; it looks damaged") as caught:
        merge(output)
    assert caught.value.hint == "re-run that shard with featx.extract(..., overwrite=True), then merge again"
    assert not output.exists()
    result = CliRunner().invoke(main, ["merge", str(output)])
    assert result.exit_code == 2 and "looks damaged" in result.output and "Traceback" not in result.output
    assert "hint: re-run that shard with featx extract --overwrite, then merge again" in result.output


def test_merge_refuses_a_missing_shard_or_manifest(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    with pytest.raises(StoreError, match="no shards to merge") as caught:
        merge(output)
    assert caught.value.hint == "run featx.extract(..., shards=N, shard_index=I) (or under torchrun) first"  # Python's
    run(corpus, output, tiny_model, shards=3, shard_index=1)
    with pytest.raises(StoreError, match="shard 0 of 3 is missing: .*out.shard-00-of-03.h5 does not exist") as caught:
        merge(output)
    assert caught.value.hint.startswith("run featx.extract(..., shards=3, shard_index=0), or copy it here")
    ShardSpec(1, 3).path(output).rename(ShardSpec(0, 3).path(output))
    with pytest.raises(StoreError, match="is not shard 0 of 3"):
        merge(output)


def test_merge_cli_reports_errors_without_traceback(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    result = CliRunner().invoke(main, ["merge", str(output)])
    assert result.exit_code == 2 and result.output.startswith("featx: error: no shards to merge")
    assert "hint: run featx extract with --shards N --shard-index I (or under torchrun) first" in result.output
    result = CliRunner().invoke(main, cli_args(corpus, output, tiny_model, "--shards", "2"))
    assert result.exit_code == 2 and "--shards and --shard-index go together" in result.output
    for index in range(2):
        result = CliRunner().invoke(
            main, cli_args(corpus, output, tiny_model, "--shards", "2", "--shard-index", str(index))
        )
        assert result.exit_code == 0 and "when all are done: featx merge" in result.output
    result = CliRunner().invoke(main, ["merge", str(output), "-q"])
    assert result.exit_code == 0 and "merged 2 shards into" in result.output
    result = CliRunner().invoke(main, ["merge", str(output)])
    assert result.exit_code == 2 and "exists already (merged before?)" in result.output


@pytest.mark.slow
@pytest.mark.xdist_group("ports")  # picks a free port then binds it: never two at once
def test_torchrun_two_nodes_one_process_each(tiny_model, corpus, tmp_path):
    """Multi-node as torchrun sets it up (static rendezvous, --node-rank), both nodes on this host:
    every worker has LOCAL_RANK 0, ranks come from the node rank, rank 0 merges on the shared disk."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    output = tmp_path / "out.h5"
    env = {**subprocess_env(), "FEATX_DIST_TIMEOUT": "240"}
    nodes = [
        subprocess.Popen(
            [
                *torchrun_command(),
                "--nnodes",
                "2",
                "--nproc-per-node",
                "1",
                "--node-rank",
                str(rank),
                "--master-addr",
                "127.0.0.1",
                "--master-port",
                str(port),
                "-m",
                "featx",
                *cli_args(corpus, output, tiny_model),
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=300) for node in nodes]
    for node, (stdout, stderr) in zip(nodes, outputs, strict=False):
        assert node.returncode == 0, stdout + stderr
        assert "Traceback" not in featx_stderr(stderr)
    assert "merged 2 shards into" in outputs[0][0]
    assert not ShardSpec(1, 2).path(output).exists() and not manifest_path(output).exists()
    single = run(corpus, tmp_path / "single.h5", tiny_model).output
    assert_same_rows(output, single, exact=False)


def test_featx_stderr_drops_only_the_launchers_log_lines():
    launcher = (
        "E1129 12:29:56.478000 14410 .venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/"
        "api.py:1008] Traceback (most recent call last):"
    )
    worker = 'Traceback (most recent call last):\n  File "featx/cli/main.py", line 1, in <module>'
    assert featx_stderr(launcher) == ""
    assert featx_stderr(f"{launcher}\n{worker}") == worker
    assert "Traceback" in featx_stderr("W1129 12:00:00.000000 1 featx/cli/main.py:3] Traceback")

"""Row assignment, shard naming, the manifest and launcher detection (no model needed)."""

from pathlib import Path

import numpy as np
import pytest
from support.tiny import SENTENCES, write_csv

from featx.errors import InputError, StoreError
from featx.extraction.inputs.corpus import read_corpus
from featx.extraction.shards.distributed import LaunchEnv
from featx.extraction.shards.sharding import (
    ShardSpec,
    assign_rows,
    make_manifest,
    manifest_path,
    read_manifest,
    select_rows,
    write_manifest,
)

TEXTS = ["x" * length for length in (5, 40, 12, 7, 33, 18, 2, 25, 40, 9, 14, 30, 1)]


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_every_row_in_exactly_one_shard_in_corpus_order(count):
    shards = [assign_rows(TEXTS, count, index) for index in range(count)]
    for rows in shards:
        assert (np.diff(rows) > 0).all()
    assert sorted(np.concatenate(shards).tolist()) == list(range(len(TEXTS)))


def test_rows_are_dealt_round_robin_longest_first():
    # Lengths sorted descending (ties in corpus order): rows 1, 8, 4, 11, 7, 5, 10, 2, 9, 3, 0, 6, 12.
    assert assign_rows(TEXTS, 3, 0).tolist() == sorted([1, 11, 10, 3, 12])
    assert assign_rows(TEXTS, 3, 1).tolist() == sorted([8, 7, 2, 0])
    assert assign_rows(TEXTS, 3, 2).tolist() == sorted([4, 5, 9, 6])


def test_shards_get_nearly_equal_work():
    rng = np.random.default_rng(0)
    texts = ["w" * int(n) for n in rng.integers(1, 500, size=1000)]
    loads = [sum(len(texts[row]) for row in assign_rows(texts, 8, index)) for index in range(8)]
    assert max(loads) - min(loads) <= 500  # at most about one longest text apart


def test_shard_file_names():
    assert ShardSpec(3, 8).path(Path("runs/out.h5")) == Path("runs/out.shard-03-of-08.h5")
    assert ShardSpec(7, 100).path(Path("out.h5")).name == "out.shard-007-of-100.h5"
    assert ShardSpec(0, 2).fingerprint("base") != ShardSpec(1, 2).fingerprint("base")


@pytest.mark.parametrize(
    "shards, index, message",
    [
        (4, None, "go together"),
        (None, 0, "go together"),
        (0, 0, "at least 1"),
        (4, 4, "out of range"),
        (4, -1, "out of range"),
    ],
)
def test_bad_shard_options(shards, index, message):
    with pytest.raises(InputError, match=message):
        ShardSpec.from_options(shards, index)


def test_no_shard_options_means_no_sharding():
    assert ShardSpec.from_options(None, None) is None
    assert ShardSpec.from_options(4, 2) == ShardSpec(2, 4)


def test_selected_rows_keep_whole_corpus_label_codes(tmp_path):
    corpus = read_corpus(write_csv(tmp_path / "c.csv", SENTENCES))
    subset, rows = select_rows(corpus, ShardSpec(1, 3))
    assert len(subset) == len(rows) == 4
    assert subset.texts == [corpus.texts[row] for row in rows]
    assert subset.ids == [str(row) for row in rows]
    assert subset.split == [corpus.split[row] for row in rows]
    assert subset.sha256 == corpus.sha256
    for name, column in corpus.labels.items():
        assert subset.labels[name].names == column.names
        assert subset.labels[name].codes.tolist() == column.codes[rows].tolist()
    with pytest.raises(InputError, match="would leave shards empty"):
        select_rows(corpus, ShardSpec(0, 13))


def test_manifest_is_shared_and_guards_against_a_different_run(tmp_path):
    corpus = read_corpus(write_csv(tmp_path / "c.csv", SENTENCES))
    output = tmp_path / "out.h5"
    manifest = make_manifest(output, 2, corpus, len(corpus), "model-hash", "options-a")
    write_manifest(output, manifest, overwrite=False)
    write_manifest(output, manifest, overwrite=False)  # the other shard: same content, accepted
    assert manifest_path(output).name == "out.shards.json"
    assert read_manifest(output)["shards"] == ["out.shard-00-of-02.h5", "out.shard-01-of-02.h5"]
    other = make_manifest(output, 2, corpus, len(corpus), "model-hash", "options-b")
    with pytest.raises(StoreError, match="different corpus, model or options"):
        write_manifest(output, other, overwrite=False)
    with pytest.raises(StoreError, match="different number of shards"):
        write_manifest(output, make_manifest(output, 3, corpus, len(corpus), "model-hash", "options-a"), False)
    write_manifest(output, other, overwrite=True)
    assert read_manifest(output)["fingerprint"] == "options-b"


def test_launcher_detection():
    assert LaunchEnv.detect({}) is None
    assert LaunchEnv.detect({"RANK": "0", "WORLD_SIZE": "2"}) is None  # no rendezvous address: not launched
    env = {
        "RANK": "5",
        "WORLD_SIZE": "16",
        "LOCAL_RANK": "5",
        "LOCAL_WORLD_SIZE": "8",
        "MASTER_ADDR": "node0",
        "MASTER_PORT": "29500",
    }
    launch = LaunchEnv.detect(env)
    assert launch == LaunchEnv(rank=5, world_size=16, local_rank=5, local_world_size=8)
    assert launch.device("cuda") == "cuda:5" and launch.device("cpu") == "cpu" and launch.device("cuda:1") == "cuda:1"
    with pytest.raises(InputError, match="out of range"):
        LaunchEnv.detect({**env, "RANK": "16"})


def test_cpu_threads_are_shared_between_local_ranks(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert LaunchEnv(0, 2, 0, 2).cpu_threads({}) == 8
    assert LaunchEnv(0, 32, 0, 32).cpu_threads({}) == 1
    assert LaunchEnv(0, 2, 0, 2).cpu_threads({"FEATX_NUM_THREADS": "3"}) == 3

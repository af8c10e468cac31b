"""The weight-fingerprint cache (featx/extraction/model/fingerprints.py): hits, invalidation, bad and planted caches."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from featx.extraction.model import fingerprints
from featx.extraction.model.fingerprints import CACHE_FILE, weights_sha256


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("FEATX_CACHE_DIR", str(folder))
    monkeypatch.delenv("FEATX_FINGERPRINT_CACHE", raising=False)
    return folder / CACHE_FILE


@pytest.fixture
def weights(tmp_path):
    files = [tmp_path / "model-00001.safetensors", tmp_path / "model-00002.safetensors"]
    files[0].write_bytes(b"first shard " * 1000)
    files[1].write_bytes(b"second shard " * 1000)
    return files


@pytest.fixture
def hashes(monkeypatch):
    """Counts the real hashing calls."""
    calls = []
    real = fingerprints.hash_files

    def counting(files):
        calls.append(list(files))
        return real(files)

    monkeypatch.setattr(fingerprints, "hash_files", counting)
    return calls


def plain_sha256(files) -> str:
    return hashlib.sha256(b"".join(path.read_bytes() for path in files)).hexdigest()


def test_digest_is_the_plain_sha256_of_the_files_in_order(cache, weights):
    assert weights_sha256(weights) == plain_sha256(weights)
    assert weights_sha256(weights) == plain_sha256(weights)  # from the cache
    assert weights_sha256(weights[::-1]) == plain_sha256(weights[::-1])


def test_second_call_is_a_hit_and_reads_no_weights(cache, weights, hashes):
    first = weights_sha256(weights)
    assert len(hashes) == 1 and cache.is_file()
    assert weights_sha256(weights) == first
    assert len(hashes) == 1
    entries = json.loads(cache.read_text())["entries"]
    assert list(entries.values()) == [first]


def test_a_changed_size_is_hashed_again(cache, weights, hashes):
    weights_sha256(weights)
    weights[1].write_bytes(b"second shard, retrained " * 1000)
    assert weights_sha256(weights) == plain_sha256(weights)
    assert len(hashes) == 2


def test_a_changed_mtime_with_the_same_size_is_hashed_again(cache, weights, hashes):
    weights_sha256(weights)
    before = os.stat(weights[0])
    weights[0].write_bytes(b"FIRST SHARD " * 1000)  # same size, other bytes
    os.utime(weights[0], ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert weights_sha256(weights) == plain_sha256(weights)
    assert len(hashes) == 2


def test_a_file_replaced_by_another_inode_is_hashed_again(cache, weights, hashes, tmp_path):
    weights_sha256(weights)
    before = os.stat(weights[0])
    replacement = tmp_path / "new"
    replacement.write_bytes(b"FIRST SHARD " * 1000)
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size and mtime, new inode
    os.replace(replacement, weights[0])
    assert weights_sha256(weights) == plain_sha256(weights)
    assert len(hashes) == 2


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[1, 2]",
        b'{"version": 99, "entries": {}}',
        b"\xff\xfe binary",
        b'{"version": 1, "entries": {"k": "not-a-digest"}}',
    ],
)
def test_a_corrupt_cache_is_ignored_and_replaced(cache, weights, content):
    cache.parent.mkdir(parents=True)
    cache.write_bytes(content)
    assert weights_sha256(weights) == plain_sha256(weights)
    assert list(json.loads(cache.read_text())["entries"].values()) == [plain_sha256(weights)]


def test_a_cached_digest_is_used_only_for_its_own_key(cache, weights):
    """An entry for other files (another key) is never returned for these."""
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"version": 1, "entries": {"other": "0" * 64}}))
    assert weights_sha256(weights) == plain_sha256(weights)


def test_a_symlinked_cache_file_is_not_followed(cache, weights, tmp_path):
    planted = tmp_path / "planted.json"
    key = fingerprints.identity_key(weights)
    planted.write_text(json.dumps({"version": 1, "entries": {key: "f" * 64}}))
    cache.parent.mkdir(parents=True)
    cache.symlink_to(planted)
    assert weights_sha256(weights) == plain_sha256(weights)  # the planted digest is not read
    assert json.loads(planted.read_text())["entries"] == {key: "f" * 64}  # nor written through
    assert not cache.is_symlink() and cache.is_file()  # the link itself was replaced


def test_a_symlinked_cache_folder_gets_nothing_written(tmp_path, monkeypatch, weights):
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "cache-link"
    link.symlink_to(target, target_is_directory=True)
    monkeypatch.setenv("FEATX_CACHE_DIR", str(link))
    assert weights_sha256(weights) == plain_sha256(weights)
    assert list(target.iterdir()) == []


def test_an_unwritable_cache_folder_is_not_an_error(tmp_path, monkeypatch, weights):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FEATX_CACHE_DIR", str(blocker / "featx"))
    assert weights_sha256(weights) == plain_sha256(weights)


def test_the_cache_can_be_switched_off(cache, weights, hashes, monkeypatch):
    monkeypatch.setenv("FEATX_FINGERPRINT_CACHE", "0")
    weights_sha256(weights)
    weights_sha256(weights)
    assert len(hashes) == 2 and not cache.exists()


def test_the_background_hash_gives_the_same_digest_and_passes_errors_on(cache, weights, tmp_path):
    wait = fingerprints.weights_sha256_in_background(weights)
    assert wait() == plain_sha256(weights)
    missing = fingerprints.weights_sha256_in_background([tmp_path / "absent.safetensors"])
    with pytest.raises(OSError):
        missing()

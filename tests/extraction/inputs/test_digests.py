"""A file's sha256 (``featx.extraction.file_sha256``): read every time, except within ``remembered_digests``,
where each file is read once per identity (an edited or replaced file is read again)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import featx.extraction.inputs.digests as digests
from featx.extraction import file_sha256, remembered_digests


def test_within_a_run_a_file_is_read_once_until_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "corpus.csv"
    path.write_text("text,label\nhello,a\n")
    reads: list[str] = []
    original = digests.hash_file

    def counted(file):
        reads.append(str(file))
        return original(file)

    monkeypatch.setattr(digests, "hash_file", counted)
    assert file_sha256(path) == file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(reads) == 2  # outside: every call reads the file
    with remembered_digests():
        first = file_sha256(path)
        with remembered_digests():
            assert file_sha256(path) == first
        monkeypatch.chdir(tmp_path)
        assert file_sha256(Path("corpus.csv")) == first and len(reads) == 3  # another spelling, the same file
        path.write_text("text,label\nhello,b\n")  # the same size: its times tell it apart
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        edited = file_sha256(path)
        assert edited == hashlib.sha256(path.read_bytes()).hexdigest() != first and len(reads) == 4
        assert file_sha256(path) == edited and len(reads) == 4
    file_sha256(path)
    assert len(reads) == 5  # nothing is kept after the run

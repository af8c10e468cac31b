"""``featx labels add`` never loses data: a second writer at the same time is refused (never a lost column),
hidden copies left by a killed add are removed, a symbolic link is written through to its target, and label
files with unnamed, NUL-named or repeated header columns are refused with one line."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.faults import featx_env
from support.probe_data import N_ROWS

import featx
from featx.cli import main
from featx.store import OutputLock


def labels_file(folder, name, header="id,{name}", value="x"):
    path = folder / f"{name}.csv"
    path.write_text(header.format(name=name) + "\n" + "".join(f"{i},{value}{i % 2}\n" for i in range(N_ROWS)))
    return path


def add(features, labels):
    return CliRunner().invoke(main, ["labels", "add", str(features), str(labels)])


def columns(features):
    with featx.open(features) as opened:
        return opened.label_columns


def test_a_second_writer_is_refused_while_one_holds_the_file(features_copy, tmp_path):
    with OutputLock(features_copy, "featx labels add"):
        result = add(features_copy, labels_file(tmp_path, "mood"))
    assert result.exit_code == 2
    assert_one_clear_error(
        result.output,
        r"another featx labels add \(pid \d+\) is writing feats\.h5 right now\s+"
        r"hint: wait for it to finish, then run featx labels add again",
    )
    assert columns(features_copy) == ["label", "topic"]
    assert add(features_copy, labels_file(tmp_path, "mood")).exit_code == 0  # the lock was not left behind
    assert columns(features_copy) == ["label", "topic", "mood"]
    assert not features_copy.with_name("feats.h5.lock").exists()


SLOW_ADD = """
import pathlib, shutil, sys, time
from featx.cli import main
marker, pause = pathlib.Path(sys.argv[1]), float(sys.argv[2])
copy = shutil.copyfileobj
def slow(source, target, *args, **options):
    marker.write_text("copying")
    time.sleep(pause)
    return copy(source, target, *args, **options)
shutil.copyfileobj = slow
main(["labels", "add", *sys.argv[3:]], prog_name="featx")
"""


@pytest.mark.slow
def test_two_concurrent_adds_never_lose_a_column(features_copy, tmp_path):
    def start(name, pause):
        args = [sys.executable, "-c", SLOW_ADD, str(tmp_path / f"{name}.copying"), str(pause)]
        args += [str(features_copy), str(labels_file(tmp_path, name))]
        return subprocess.Popen(args, env=featx_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = start("one", 3.0)
    deadline = time.monotonic() + 120
    while not (tmp_path / "one.copying").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    second = start("two", 0.0)  # the first is copying the file: the second meets it mid-add
    _, second_err = second.communicate(timeout=120)
    _, first_err = first.communicate(timeout=120)
    assert first.returncode == 0, first_err
    assert second.returncode == 2, second_err
    assert "another featx labels add (pid" in second_err and "Traceback" not in second_err
    assert columns(features_copy) == ["label", "topic", "one"]
    assert add(features_copy, labels_file(tmp_path, "two")).exit_code == 0
    assert columns(features_copy) == ["label", "topic", "one", "two"]


def test_a_copy_left_by_a_killed_add_is_removed(features_copy, tmp_path):
    stale = features_copy.with_name(".feats.h5.k1ll3d_9.adding")
    stale.write_bytes(features_copy.read_bytes())  # as a kill -9 mid-add leaves it
    other = features_copy.with_name(".feats.h5.x.abcdefgh.adding")  # another file's add (feats.h5.x): kept
    other.write_bytes(b"not ours")
    assert add(features_copy, labels_file(tmp_path, "mood")).exit_code == 0
    assert not stale.exists() and other.exists()
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.endswith(".adding")) == [other.name]


def test_a_symbolic_link_is_written_through_to_its_target(features_copy, tmp_path):
    link = tmp_path / "link.h5"
    link.symlink_to(features_copy.name)
    result = add(link, labels_file(tmp_path, "mood"))
    assert result.exit_code == 0, result.output
    assert f"added to {link} (through the link to {features_copy})" in result.output
    assert link.is_symlink() and link.readlink().name == "feats.h5"
    assert columns(features_copy) == ["label", "topic", "mood"]
    assert not any(path.name.endswith((".lock", ".adding")) for path in tmp_path.iterdir())


BAD_HEADERS = [  # (header, the error)
    ("id,mood,mood", r"bad\.csv: the header repeats column\(s\) 'mood'\s+hint: give every column a unique name"),
    ("id,mood,score,mood,score", r"the header repeats column\(s\) 'mood', 'score'"),
    ("id,,mood", r"bad\.csv: column 2 of the header has no name\s+hint: give every column a name"),
    ("id,mood, ", r"bad\.csv: column 3 of the header has no name"),
    ("id,mo\0od", r"bad\.csv: the name of column 2 \('mo\\x00od'\) contains a NUL character\s+hint: remove it"),
]


@pytest.mark.parametrize(("header", "error"), BAD_HEADERS)
def test_label_files_with_bad_headers_are_refused(features_copy, tmp_path, header, error):
    path = tmp_path / "bad.csv"
    width = header.count(",")
    path.write_text(header + "\n" + "".join(f"{i}" + ",x" * width + "\n" for i in range(N_ROWS)))
    before = features_copy.read_bytes()
    result = add(features_copy, path)
    assert result.exit_code == 2
    assert_one_clear_error(result.output, error)
    assert features_copy.read_bytes() == before

"""``featx.safe_files.atomic_write``: the one way featx writes a whole file (text, the study's Parquet table,
exported directions): a fresh temporary file renamed into place, with a new file's usual mode, and nothing left
behind when the writer fails."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from support.faults import link_each_temporary

from featx.errors import StoreError
from featx.safe_files import atomic_write, atomic_write_text


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_written_file_has_a_new_files_mode_and_replaces_the_old_one(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("old")
    atomic_write_text(path, "a,b\n")
    assert path.read_text() == "a,b\n"
    assert path.stat().st_mode & 0o777 == 0o644 & ~_umask()  # not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "results.parquet"
    path.write_bytes(b"old")

    def fail(handle):
        handle.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        atomic_write(path, fail)
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["results.parquet"]


def test_a_temporary_swapped_for_a_link_is_never_written_through_nor_renamed_into_place(tmp_path, monkeypatch):
    """The file is written and chmod-ed through mkstemp's descriptor, never by its name: a link planted there
    meanwhile leaves its target as it was (it was chmod-ed 0644, then renamed into place as the output)."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    victim.chmod(0o600)
    link_each_temporary(monkeypatch, victim)
    with pytest.raises(StoreError, match=r"temporary file .*\.table\.csv\.\w+\.tmp was replaced") as raised:
        atomic_write_text(tmp_path / "table.csv", "a,b\n")
    assert "choose a folder only you can write to" in raised.value.hint
    assert victim.read_bytes() == b"precious" and victim.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim"]  # no output, no link left


def test_the_study_table_is_written_through_it(tmp_path):
    pytest.importorskip("pyarrow")
    from featx.study.results import write_parquet

    frame = pd.DataFrame({"model": ["m"], "score": [0.5]})
    path = tmp_path / "results.parquet"
    write_parquet(frame, path)
    assert path.stat().st_mode & 0o777 == 0o644 & ~_umask()
    pd.testing.assert_frame_equal(pd.read_parquet(path), frame)


def test_an_output_that_is_an_input_is_refused_however_its_path_is_spelled(tmp_path, monkeypatch):
    from featx.errors import InputError
    from featx.safe_files import refuse_inputs

    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.probe.csv").write_text("a\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "r.probe.csv")
    for spelled in ("r.probe.csv", "./r.probe.csv", "link.csv", str(tmp_path / "r.probe.csv")):
        with pytest.raises(InputError, match=r"-o would write .*, which is an input of this run"):
            refuse_inputs(["new.png", spelled], [tmp_path / "r.probe.csv", None])
    refuse_inputs(["new.png", "new.csv"], [tmp_path / "r.probe.csv", tmp_path / "absent.json"])  # none is an input


def test_a_folder_is_made_below_its_base_never_through_a_link(tmp_path):
    from featx.errors import StoreError
    from featx.safe_files import real_folder

    assert real_folder(tmp_path / "out/m/c", tmp_path).is_dir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out/n").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StoreError, match=r"out/n is a symbolic link; featx refuses to write through it"):
        real_folder(tmp_path / "out/n/c", tmp_path)
    (tmp_path / "out/f").write_text("")
    with pytest.raises(StoreError, match=r"out/f is not a folder"):
        real_folder(tmp_path / "out/f/c", tmp_path, make=False)
    real_folder(tmp_path / "out/new/c", tmp_path, make=False)  # only checked: nothing made
    assert not (tmp_path / "out/new").exists() and list((tmp_path / "elsewhere").iterdir()) == []


def test_loads_json_turns_a_recursion_error_into_a_json_error():
    import json

    from featx.safe_files import loads_json

    assert loads_json('{"a": [1, 2]}') == {"a": [1, 2]}
    assert loads_json(b"[[1]]") == [[1]]
    for text in ("[" * 200_000 + "]" * 200_000, ("{" + '"a":') * 100_000 + "1" + "}" * 100_000):
        with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
            loads_json(text)


def test_loads_json_refuses_half_of_a_surrogate_pair():
    """JSON may escape half of a surrogate pair alone; no UTF-8 file, pandas column, page or figure can hold one."""
    import json

    from featx.safe_files import is_text, loads_json

    assert loads_json('["\\ud83d\\ude00", "\\\\ud800"]') == ["\U0001f600", "\\ud800"]  # a pair; a backslash
    for text in ('{"a": "\\ud83d\\ude00 x\\ud800"}', '{"\\uDC80": 1}', b'[["\\udfff"]]', '["a\udcff"]'):
        with pytest.raises(json.JSONDecodeError, match=r"holds \\u(d800|DC80|dfff|dcff), half of a surrogate pair"):
            loads_json(text)
    assert is_text("é\U0001f600") and not is_text("a\udcff") and not is_text(b"a")


@pytest.mark.parametrize(
    ("python", "hint"),
    [
        (True, "free disk space or choose a writable output path, then make the same call again"),
        (False, "free disk space or choose a writable place with -o, then run the same command again"),
    ],
)
def test_a_failed_write_names_the_output_as_its_caller_does(tiny_features, tmp_path, monkeypatch, python, hint):
    """A full disk where the results go, found before any probe runs (``check_writable``): its hint names ``-o`` on
    the command line and a writable output path from Python, never the other's spelling."""
    import errno

    from click.testing import CliRunner
    from support.write_faults import refuse_writes_in

    import featx
    from featx.cli import main

    out = tmp_path / "out"
    out.mkdir()
    refuse_writes_in(monkeypatch, out, errno.ENOSPC)
    if python:
        with pytest.raises(featx.FeatxError) as raised:
            featx.probe(tiny_features, label="label", layers="0", output=out / "run")
        assert raised.value.message.endswith("the disk is full") and raised.value.hint == hint
    else:
        result = CliRunner().invoke(main, ["probe", str(tiny_features), "--layer", "0", "-o", str(out / "run")])
        assert result.exit_code == 2 and result.output.rstrip().endswith(f"hint: {hint}"), result.output
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    ("python", "hint"), [(False, "name a new file or folder with -o"), (True, "name a new file or folder as output")]
)
@pytest.mark.parametrize("path", ["", "/"])
def test_an_output_no_command_may_write_is_named_as_its_caller_does(python, hint, path):
    """An empty output, or a filesystem root: ``-o`` on the command line, the ``output`` keyword from Python."""
    from featx.errors import InputError
    from featx.options import Options, command_line, keywords_of
    from featx.safe_files import refuse_unsafe_target

    with pytest.raises(InputError) as raised, keywords_of(Options) if python else command_line():
        refuse_unsafe_target(path)
    assert raised.value.hint == hint


# Each hint written for the command line that a Python caller reads reworded (featx.safe_files.output_hint).
CLI_HINTS = [
    "choose another output with -o (--overwrite replaces only a features file featx wrote, never a folder, a link "
    "or another file)",  # featx extract's existing output (featx.extraction.run.orchestrate)
    "pass --overwrite to replace it, or choose another output with -o",
    "pass --overwrite to replace it, or choose another -o path",  # a bundle (featx.deploy)
    "choose another -o path",
    "pass --overwrite to replace it, or choose another path with -o",  # exported directions
    "create it first, or choose another -o",
    "wait for it to finish, or choose another output with -o",  # the output's lock (featx.store.lock)
    "remove the link (someone may have planted it), or choose another output with -o",
    "choose a writable output location with -o",
    "free disk space, then run the same command again",
]


@pytest.mark.parametrize("hint", CLI_HINTS)
def test_an_output_hint_names_no_flag_from_python(hint):
    import re

    from featx.options import Options, command_line, keywords_of
    from featx.safe_files import output_hint

    with command_line():
        assert output_hint(hint) == hint
    with keywords_of(Options):
        spoken = output_hint(hint)
    assert not re.search(r"(?<![\w-])-o\b|--overwrite|same command", spoken), spoken
    assert "output" in spoken or "same call" in spoken, spoken

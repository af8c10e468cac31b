"""A read-only output folder, a full disk, no permission, an exhausted quota: every command that writes ends with
one line naming the path and what to do, exit 2, and leaves no half-written file. Where the folder can be tried
first (fit, predict, erase), it is, before any work."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from support.deploy_data import make_split_features
from support.errors import assert_one_clear_error
from support.faults import featx_env
from support.write_faults import REASONS, fail_nth_write, refuse_writes_in

import featx
from featx.cli import main


@pytest.fixture(scope="module")
def world(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("write-failures")
    features = make_split_features(folder, tiny_model, poolings="mean")
    bundle = featx.fit(features, label="label", layer="1", output=folder / "m.featx", folds=2).path
    labels = folder / "mood.csv"
    labels.write_text("id,mood\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(90)))
    return {"features": features, "bundle": bundle, "corpus": folder / "corpus.csv", "labels": labels}


# (case, the command with {features} {bundle} {corpus} {labels} {out}, what the output folder must hold after)
COMMANDS = [
    ("fit", "fit {features} --label label --layer 1 --folds 2 -o {out}/m.featx"),
    ("predict", "predict {bundle} {corpus} -o {out}/p.csv"),
    ("erase", "erase {features} --label label --layer 1 --pooling mean -o {out}/e.h5"),
]


def _args(command: str, world: dict, out) -> list[str]:
    return command.format(out=out, **{key: str(value) for key, value in world.items()}).split()


@pytest.mark.slow
@pytest.mark.parametrize("code", sorted(REASONS), ids=[errno.errorcode[code] for code in sorted(REASONS)])
@pytest.mark.parametrize(("case", "command"), COMMANDS, ids=[row[0] for row in COMMANDS])
def test_an_unwritable_output_folder_is_refused_before_any_work(world, tmp_path, monkeypatch, case, command, code):
    out = tmp_path / "out"
    out.mkdir()
    args = _args(command, world, out)
    refuse_writes_in(monkeypatch, out, code)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    # the first line of the output: nothing was computed (no candidate scored, no row predicted) before it
    assert_one_clear_error(result.output, rf"cannot write {out}/\S+: {REASONS[code]}\s+hint: free disk space")
    assert list(out.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a 0o555 folder: the monkeypatched case covers it")
@pytest.mark.parametrize(("case", "command"), COMMANDS, ids=[row[0] for row in COMMANDS])
def test_a_chmod_read_only_folder_is_refused(world, tmp_path, case, command):
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    try:
        result = CliRunner().invoke(main, _args(command, world, out))
    finally:
        out.chmod(0o755)
    assert result.exit_code == 2
    assert_one_clear_error(result.output, rf"cannot write {out}/\S+: permission denied")


def _full_at_bundle(monkeypatch):
    from featx.deploy import bundle

    def full(folder, name, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(bundle, "_write_new", full)


def _full_at_writing(monkeypatch):
    from featx.store import derived

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(derived, "_write_pooled", full)


def _full_at_copy(monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(shutil, "copyfileobj", full)


# (case, command, the fault once the work is done, the path named, the files the folder may hold after)
DISK_FILLS = [
    ("fit: the bundle", "fit {features} --label label --layer 1 --folds 2 -o {out}/m.featx", _full_at_bundle,
     r"{out}/m\.featx", set()),
    ("predict: the .partial file", "predict {bundle} {corpus} -o {out}/p.csv --commit-rows 30",
     lambda m: fail_nth_write(m, ".partial", 2), r"{out}/p\.csv\.partial", {"p.csv.partial"}),
    ("erase: the .writing file", "erase {features} --label label --layer 1 --pooling mean -o {out}/e.h5",
     _full_at_writing, r"{out}/e\.h5", set()),
    ("extract: the lock file's flush", "extract {corpus} --model {model} -o {out}/x.h5 -q",
     lambda m: fail_nth_write(m, ".lock", 1), r"{out}/x\.h5\.lock", set()),
    ("labels add: the copy", "labels add {out}/f.h5 {labels}", _full_at_copy, r"{out}/f\.h5", {"f.h5"}),
]  # fmt: skip


@pytest.mark.parametrize(("case", "command", "fault", "path", "left"), DISK_FILLS, ids=[r[0] for r in DISK_FILLS])
def test_a_disk_that_fills_during_the_write_is_one_clear_error(
    world, tiny_model, tmp_path, monkeypatch, case, command, fault, path, left
):
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(world["features"], out / "f.h5")
    before = (out / "f.h5").read_bytes()
    args = _args(command.replace("{model}", str(tiny_model)), world, out)
    fault(monkeypatch)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    error = result.output[result.output.index("featx: error:") :]  # after fit's lines of the candidates scored
    assert_one_clear_error(error, rf"cannot write {path.format(out=out)}: the disk is full")
    assert {entry.name for entry in out.iterdir()} == left | {"f.h5"}  # no temporary or half-written file
    assert (out / "f.h5").read_bytes() == before


def test_a_partial_cut_by_a_full_disk_holds_whole_lines_and_resumes(world, tmp_path, monkeypatch):
    output = tmp_path / "p.csv"
    args = ["predict", str(world["bundle"]), str(world["corpus"]), "-o", str(output), "--commit-rows", "30"]
    with monkeypatch.context() as patch:
        fail_nth_write(patch, ".partial", 2)
        assert CliRunner().invoke(main, args).exit_code == 2
    lines = (tmp_path / "p.csv.partial").read_text().split("\n")
    assert lines[-1] == "" and len(lines) == 1 + 30 + 1  # the key, the first chunk, nothing half-written
    assert all(json.loads(line) is not None for line in lines[:-1])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "30 of 90 rows were already predicted" in result.output


# -- predict's own outputs ---------------------------------------------------------------------------------
# (case, the -o given, the expected error)
PREDICT_OUTPUTS = [
    ("a folder, with --overwrite", "{tmp}/folder", r"-o \S+/folder is a folder\s+hint: -o names the predictions file"),
    ("the bundle, with --overwrite", "{bundle}", r"-o \S+m\.featx is a folder"),
    ("its own corpus, with --overwrite", "{tmp}/c.csv", r"-o \S+/c\.csv is an input of this run \(its corpus\)"),
]


@pytest.mark.parametrize(("case", "output", "pattern"), PREDICT_OUTPUTS, ids=[row[0] for row in PREDICT_OUTPUTS])
def test_predict_refuses_an_output_it_must_not_replace(world, tmp_path, case, output, pattern):
    (tmp_path / "folder").mkdir()
    corpus = shutil.copy(world["corpus"], tmp_path / "c.csv")
    before = corpus.read_bytes()
    target = output.format(tmp=tmp_path, bundle=world["bundle"])
    result = CliRunner().invoke(main, ["predict", str(world["bundle"]), str(corpus), "-o", target, "--overwrite"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)
    assert corpus.read_bytes() == before and (tmp_path / "folder").is_dir()


@pytest.mark.slow
def test_predict_to_a_full_standard_output_ends_cleanly(world):
    args = [sys.executable, "-m", "featx", "predict", str(world["bundle"]), str(world["corpus"]), "-o", "-"]
    with open("/dev/full", "w") as full:
        done = subprocess.run(args, stdout=full, stderr=subprocess.PIPE, text=True, env=featx_env(), timeout=300)
    assert done.returncode == 2, done.stderr
    error = done.stderr[done.stderr.index("featx: error:") :]
    assert_one_clear_error(error, r"cannot write standard output: the disk is full")
    assert "Exception ignored" not in done.stderr

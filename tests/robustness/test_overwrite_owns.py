"""``--overwrite`` replaces only what featx itself wrote (issue 46): ``featx fit ... -o mydata --overwrite``
used to delete a user's folder (``mydata/thesis.txt``) and put a bundle in its place, and ``-o ''`` or
``-o /`` reached the same rename-aside-and-remove path. One rule now for every command that writes with
``--overwrite`` (``featx.safe_files.check_overwrite``): an empty path, a filesystem root, the current folder or
one above it are refused, and an existing target must be what the command writes (a bundle folder holding
exactly a featx manifest and weights, a features file, a predictions file).

One row of ``CASES`` per hostile target: the case id, a function that makes it in the test's folder and
returns the command's arguments, and the expected message. Every user file made is checked to survive."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.deploy_data import make_split_features
from support.errors import assert_one_clear_error

import featx
from featx.cli import main

NOT_OURS = r"exists and is a {} that is not a {} featx wrote: not replaced"


def _not_ours(kind: str, what: str) -> str:
    return NOT_OURS.format(kind, what)


@pytest.fixture(scope="module")
def made(tiny_model, tmp_path_factory):
    """A features file, its corpus, and a bundle fitted on it."""
    folder = tmp_path_factory.mktemp("overwrite")
    features = make_split_features(folder, tiny_model)
    featx.fit(features, label="label", layer="1", pooling="mean", folds=3, output=folder / "m.featx")
    return folder, features, tiny_model


def _user_folder(root: Path) -> Path:
    (root / "mydata" / "sub").mkdir(parents=True)
    (root / "mydata" / "thesis.txt").write_text("thesis")
    return root / "mydata"


def _user_file(root: Path, name: str) -> Path:
    (root / name).write_text("my own notes, not featx's\n")
    return root / name


def _fit(target):
    def args(root: Path, made) -> list[str]:
        output = target(root) if callable(target) else target
        return ["fit", str(made[1]), "--label", "label", "--layer", "1", "--pooling", "mean", "--folds", "3",
                "-o", output, "--overwrite"]  # fmt: skip

    return args


def _bundle_and_more(root: Path) -> str:
    bundle = root / "b.featx"
    shutil.copytree(root.parent / "made" / "m.featx", bundle)
    (bundle / "notes.txt").write_text("mine")
    return str(bundle)


def _predict(target):
    return lambda root, made: ["predict", str(made[0] / "m.featx"), str(made[0] / "corpus.csv"), "-q",
                               "-o", str(target(root)), "--overwrite"]  # fmt: skip


def _extract(target):
    return lambda root, made: ["extract", str(made[0] / "corpus.csv"), "--model", str(made[2]), "-q",
                               "-o", str(target(root)), "--overwrite"]  # fmt: skip


def _erase(target):
    return lambda root, made: ["erase", str(made[1]), "--label", "label", "--layer", "1", "--pooling", "mean",
                               "-o", str(target(root)), "--overwrite"]  # fmt: skip


FEATURES = "features file"


def _merge(target):
    return lambda root, made: ["merge", str(target(root)), "--overwrite"]


CASES = [
    ("fit_user_folder", _fit(lambda root: str(_user_folder(root))), _not_ours("folder", "probe bundle")),
    ("fit_bundle_plus_a_file", _fit(_bundle_and_more), _not_ours("folder", "probe bundle")),
    ("fit_user_file", _fit(lambda root: str(_user_file(root, "f.txt"))), _not_ours("file", "probe bundle")),
    ("fit_empty_path", _fit(""), "-o/--output is empty: give a path, or leave it out"),
    ("fit_filesystem_root", _fit("/"), "is a filesystem root"),
    ("fit_current_folder", _fit("."), "the output path is empty \\(or the current folder\\)"),
    ("fit_parent_folder", _fit(".."), "is the current folder or a folder above it"),
    ("predict_user_file", _predict(lambda root: _user_file(root, "notes.csv")), _not_ours("file", "predictions file")),
    ("predict_folder", _predict(_user_folder), "is a folder"),  # predict says first that -o names a file
    ("extract_user_file", _extract(lambda root: _user_file(root, "o.h5")), _not_ours("file", "features file")),
    ("extract_folder", _extract(lambda root: _user_folder(root).rename(root / "d.h5")), _not_ours("folder", FEATURES)),
    ("erase_user_file", _erase(lambda root: _user_file(root, "e.h5")), _not_ours("file", "features file")),
    ("merge_user_file", _merge(lambda root: _user_file(root, "m.h5")), _not_ours("file", "features file")),
]  # fmt: skip


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("args, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_overwrite_refuses_what_featx_did_not_write(made, tmp_path, monkeypatch, args, expected):
    work = tmp_path / "made"
    shutil.copytree(made[0] / "m.featx", work / "m.featx")
    root = tmp_path / "user"
    root.mkdir()
    (root / "inner").mkdir()
    monkeypatch.chdir(root / "inner")
    command = args(root, made)
    before = _snapshot(root)
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, expected)
    assert _snapshot(root) == before and sorted(os.listdir(root)) == sorted(Path(p).name for p in os.listdir(root))


def test_overwrite_still_replaces_a_bundle(made, tmp_path):
    bundle = tmp_path / "m.featx"
    shutil.copytree(made[0] / "m.featx", bundle)
    result = CliRunner().invoke(main, _fit(str(bundle))(tmp_path, made) + ["-q"])
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(bundle)) == ["manifest.json", "weights.safetensors"]

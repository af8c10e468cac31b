"""Symbolic links planted at featx's lock/temporary/state names, corpora read through pipes, and every
non-positive numeric option: refused with one clear message (exit 2), nothing written through a link."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import h5py
import pytest
from click.testing import CliRunner
from support.faults import featx_env, many_rows_csv
from support.helpers import interrupt_after_commits

import featx
from featx.cli import main
from featx.safe_files import atomic_write_text
from featx.state import remember
from featx.store import creating_path, partial_path

VICTIM = b"precious data owned by someone else\n"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


def extract_cli(corpus, model, output, *extra):
    return ["extract", str(corpus), "--model", str(model), "-o", str(output), "-q", "--batch-size", "8", *extra]


# -- symbolic links --------------------------------------------------------------------------------


def test_symlinked_lock_is_refused_and_its_target_untouched(tiny_model, tmp_path, victim):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 12)
    output = tmp_path / "out.h5"
    output.with_name("out.h5.lock").symlink_to(victim)
    result = CliRunner().invoke(main, extract_cli(corpus, tiny_model, output))
    assert result.exit_code == 2, result.output
    assert "lock file" in result.output and "symbolic link" in result.output and "Traceback" not in result.output
    assert victim.read_bytes() == VICTIM and not output.exists()


def test_links_planted_at_partial_and_creating_names_are_never_written_through(tiny_model, tmp_path, victim):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 12)
    output = tmp_path / "out.h5"
    creating_path(output).symlink_to(tmp_path / "created-through-link.h5")  # dangling: would be created
    partial_path(output).symlink_to(victim)
    result = CliRunner().invoke(main, extract_cli(corpus, tiny_model, output))
    assert result.exit_code == 0, result.output
    assert victim.read_bytes() == VICTIM and not (tmp_path / "created-through-link.h5").exists()
    with featx.open(output) as features:
        assert features.n_rows == 12


def test_temporary_files_never_follow_planted_links(tmp_path, victim, monkeypatch):
    results = tmp_path / "x.probe.csv"
    for name in ("x.probe.csv.tmp", ".x.probe.csv.tmp"):
        (tmp_path / name).symlink_to(victim)
    atomic_write_text(results, "a,b\n1,2\n")
    assert results.read_text() == "a,b\n1,2\n" and not results.is_symlink()
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".featx").mkdir()
    (tmp_path / ".featx" / "last.tmp").symlink_to(victim)
    remember("features", tmp_path / "feats.h5")
    assert json.loads((tmp_path / ".featx" / "last.json").read_text()) == {"features": str(tmp_path / "feats.h5")}
    assert victim.read_bytes() == VICTIM


@pytest.mark.parametrize(
    "state, why",
    [
        ("link to /dev/zero", "symbolic link"),
        ("fifo", "not a regular file"),
        ("not json", "not valid JSON"),
        ("huge", "larger than"),
        ("a list", "does not hold a JSON object"),
    ],
)
def test_unusable_last_json_falls_back_with_a_message(tmp_path, monkeypatch, state, why):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ".featx" / "last.json"
    path.parent.mkdir()
    if state == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif state == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(
            {"not json": "{oops", "huge": json.dumps({"features": "x" * (1 << 20)}), "a list": "[1, 2]"}[state]
        )
    result = CliRunner().invoke(main, ["probe", "--layer", "all"])
    assert result.exit_code == 2, result.output
    assert "no features file given" in result.output and why in result.output and "Traceback" not in result.output


# -- corpora through pipes ---------------------------------------------------------------------------


@pytest.mark.slow
def test_piped_corpus_is_fingerprinted_by_the_bytes_parsed(tiny_model, tmp_path):
    data = many_rows_csv(tmp_path / "corpus.csv", 16).read_bytes()
    for source, output in (("-", tmp_path / "stdin.h5"), ("/dev/stdin", tmp_path / "devstdin.h5")):
        args = [sys.executable, "-m", "featx", *extract_cli(source, tiny_model, output)]
        done = subprocess.run(args, input=data, cwd=tmp_path, env=featx_env(), capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr
        with featx.open(output) as features:
            assert features.attrs["corpus_sha256"] == hashlib.sha256(data).hexdigest()
            assert features.n_rows == 16
        with h5py.File(output, "r") as file:
            assert file.attrs["corpus_path"] in ("<stdin>", "/dev/stdin")


def test_resume_from_a_different_piped_corpus_is_refused(tiny_model, tmp_path, monkeypatch):
    first = many_rows_csv(tmp_path / "a.csv", 40).read_bytes()
    second = first.replace(b" 3,", b" 4,")
    output = tmp_path / "out.h5"
    args = extract_cli("-", tiny_model, output, "--commit-rows", "8")
    interrupt_after_commits(monkeypatch, 1)
    stopped = CliRunner().invoke(main, args, input=first)
    assert stopped.exit_code == 130, stopped.output
    monkeypatch.undo()
    refused = CliRunner().invoke(main, args, input=second)
    assert refused.exit_code == 2 and "different corpus" in refused.output, refused.output
    resumed = CliRunner().invoke(main, args, input=first)
    assert resumed.exit_code == 0 and "resumed at row 8" in resumed.output, resumed.output
    assert "cannot be read again" in resumed.output and "sha256 of the bytes it read" in resumed.output
    same = CliRunner().invoke(main, args, input=first)
    assert same.exit_code == 0 and "up to date" in same.output and "cannot be read again" in same.output
    again = CliRunner().invoke(main, args, input=second)
    assert again.exit_code == 2 and "different corpus" in again.output, again.output


def test_stdin_needs_an_output_and_a_pipe(tmp_path):
    result = CliRunner().invoke(main, ["extract", "-"])
    assert result.exit_code == 2 and "needs an output path" in result.output


@pytest.mark.parametrize(
    ("data", "words"),
    [("", "<stdin> is empty"), ("text,label\n", "<stdin> has a header but no rows"), ("text\n\u200b\n", "<stdin>: ")],
)
def test_an_empty_standard_input_is_named_stdin(tmp_path, data, words):
    result = CliRunner().invoke(main, ["extract", "-", "-o", str(tmp_path / "out.h5")], input=data)
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {words}"), result.output
    assert not (tmp_path / "out.h5").exists()


# -- every non-positive numeric option --------------------------------------------------------------

NUMERIC = [
    ["extract", "c.csv", "--batch-size", "0"],
    ["extract", "c.csv", "--batch-size", "-3"],
    ["extract", "c.csv", "--commit-rows", "-1"],
    ["extract", "c.csv", "--commit-rows", "0"],
    ["extract", "c.csv", "--max-tokens", "0"],
    ["extract", "c.csv", "--max-length", "0"],
    ["extract", "c.csv", "--commit-seconds", "0"],
    ["extract", "c.csv", "--commit-seconds", "-1"],
    ["extract", "c.csv", "--commit-seconds", "nan"],
    ["extract", "c.csv", "--shards", "0", "--shard-index", "0"],
    ["extract", "c.csv", "--shards", "2", "--shard-index", "-1"],
    ["probe", "f.h5", "--folds", "0"],
    ["probe", "f.h5", "--folds", "-2"],
    ["probe", "f.h5", "--jobs", "0"],
    ["probe", "f.h5", "--seed", "-1"],
    ["probe", "f.h5", "--train-sizes", "0"],
    ["explain", "r.csv", "--limit", "0"],
    ["explain", "r.csv", "--buckets", "0"],
    ["plot", "r.csv", "--dpi", "0"],
]


@pytest.mark.parametrize("args", NUMERIC, ids=[" ".join(args[2:]) + f" ({args[0]})" for args in NUMERIC])
def test_non_positive_numeric_options_are_refused(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("featx: error: ") and "Traceback" not in result.output
    flag = args[2]
    assert flag.lstrip("-").split("-")[0] in result.output, result.output


# -- terminal escape sequences ------------------------------------------------------------------------


def test_control_characters_are_escaped_in_everything_echoed(tiny_model, tmp_path):
    corpus = many_rows_csv(tmp_path / "corpus.csv", 12)
    hostile = "te\x1b]0;pwned\x07xt\x1b[2J"
    result = CliRunner().invoke(main, extract_cli(corpus, tiny_model, tmp_path / "o.h5", "--text-col", hostile))
    assert result.exit_code == 2
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "te\\x1b]0;pwned\\x07xt\\x1b[2J" in result.output

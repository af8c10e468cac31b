"""The command line: exit codes, messages without tracebacks, the remembered last extraction."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from featx.cli import main
from featx.state import last


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_extract_prints_summary_and_remembers_file(tiny_model, corpus_csv, in_tmp):
    result = CliRunner().invoke(main, ["extract", str(corpus_csv), "--model", str(tiny_model), "-q"])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "12 rows" in result.output and "tokens/s" in result.output
    assert last("features") == (corpus_csv.parent / "corpus.features.h5").resolve()


@pytest.mark.slow
def test_a_slow_precision_is_one_warning_line_and_the_run_goes_on(tiny_model, corpus_csv, in_tmp, monkeypatch):
    from featx.extraction.fast import onednn

    monkeypatch.setattr(onednn, "half_instructions", lambda _: False)
    args = ["extract", str(corpus_csv), "--model", str(tiny_model), "-q", "--dtype", "bfloat16"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("featx: warning: --dtype bfloat16: this CPU (")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert "wrote" in result.stdout


@pytest.mark.parametrize(
    "content, args, message",
    [
        (None, [], "does not exist"),
        ("text,label\n", [], "header but no rows"),
        ("sentence,label\nhi,1\n", [], "columns found: sentence, label"),
        ("text,label\nhi,1\n ,0\n", [], "--skip-empty"),
        ("text,label\nhi,1\n", ["--pooling", "median"], "pooling 'median'"),
        ("text,label\nhi,1\n", ["--layer", "9"], "out of range"),
        ("text,label\nhi,1\n", ["--device", "cuda:7"], "cuda"),
        ("text,label\nhi,1\n", ["-o", "nowhere/x.h5"], "does not exist"),
    ],
)
def test_errors_exit_2_with_one_clear_message(tiny_model, in_tmp, content, args, message):
    corpus = in_tmp / "c.csv"
    if content is not None:
        corpus.write_text(content)
    result = CliRunner().invoke(main, ["extract", str(corpus), "--model", str(tiny_model), "-q", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith("featx: error:") and message in result.output


@pytest.mark.slow
def test_real_process_has_no_traceback(tiny_model, in_tmp):
    (in_tmp / "c.csv").write_bytes(b"text\ncaf\xe9\n")
    process = subprocess.run(
        [sys.executable, "-m", "featx", "extract", "c.csv", "--model", str(tiny_model)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert process.returncode == 2
    assert "line 2, column 4 is not valid utf-8" in process.stderr and "Traceback" not in process.stderr


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and "featx" in result.output


def test_the_remembered_file_fallback_is_one_function(tmp_path, monkeypatch):
    """``given_or_last`` is the only fallback: a given path wins, else the remembered one with a note, else a
    clear error; probe, plot and explain all go through it."""
    import pytest

    from featx.errors import InputError
    from featx.state import given_or_last, remember

    monkeypatch.chdir(tmp_path)
    assert given_or_last("x.h5", "features") == (Path("x.h5"), None)
    with pytest.raises(InputError, match="no features file given, and no extraction is remembered"):
        given_or_last(None, "features")
    (tmp_path / "f.h5").write_bytes(b"")
    remember("features", tmp_path / "f.h5")
    path, note = given_or_last(None, "features")
    assert path == (tmp_path / "f.h5").resolve() and note == f"using the last extraction in this directory: {path}"
    package = Path(__file__).parents[2] / "featx"
    callers = [path for path in package.rglob("*.py") if 'last("' in path.read_text()]
    assert callers == []


def test_a_probe_warning_is_a_featx_warning_line_on_stderr(tiny_model, corpus_csv, in_tmp):
    extracted = CliRunner().invoke(main, ["extract", str(corpus_csv), "--model", str(tiny_model), "-q", "-o", "c.h5"])
    assert extracted.exit_code == 0, extracted.output
    args = ["probe", "c.h5", "--label", "sentiment", "--layer", "1", "--pooling", "mean", "--no-control"]
    result = CliRunner().invoke(main, [*args, "--no-lexical", "--jobs", "1"])  # a few test rows: a warning
    assert result.exit_code == 0, result.output
    assert "featx: warning: only " in result.stderr and "test rows" in result.stderr
    assert "too coarse" not in result.stdout


def test_an_extract_warning_goes_to_stderr_not_to_the_summary(tiny_model, in_tmp):
    sentence = "# sent_id = twin\n1\tThe\t_\tDET\t_\t_\t0\tdep\t_\t_\n2\tcat\t_\tNOUN\t_\t_\t0\tdep\t_\t_\n\n"
    (in_tmp / "a.conllu").write_text(sentence)
    result = CliRunner().invoke(main, ["extract", "a.conllu", "--model", str(tiny_model), "-q", "-o", "a.h5"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("featx: warning: 1 sentence(s) have several roots (head 0), first twin")
    assert result.stdout.startswith("wrote") and "several roots" not in result.stdout


@pytest.mark.parametrize(
    "args, message, where",
    [
        (["prob", "f.h5"], "No such command 'prob'. Did you mean 'probe'?", "featx"),
        (["probe", "f.h5", "--layr", "3"], "No such option '--layr'. (Did you mean one of: ", "featx probe"),
        (["probe", "--task", "clasification"], "'clasification' is not one of 'auto', 'classification'", "featx probe"),
        (["labels", "ad", "f.h5", "l.csv"], "No such command 'ad'. Did you mean 'add'?", "featx labels"),
        (["study", "run"], "Missing argument 'STUDY'.", "featx study run"),
        (["--bogus"], "No such option '--bogus'.", "featx"),
    ],
)
def test_a_command_line_click_cannot_parse_is_a_featx_error(args, message, where):
    result = CliRunner().invoke(main, args, prog_name="featx")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("featx: error: ") and result.stderr.count("\n") == 2
    assert message in result.stderr and result.stderr.endswith(f"  hint: see '{where} --help'\n")
    assert result.stdout == "" and "Usage:" not in result.output


def test_a_bare_group_still_shows_its_help():
    result = CliRunner().invoke(main, ["study"], prog_name="featx")
    assert result.exit_code == 2 and "Usage: featx study [OPTIONS] COMMAND" in result.output
    assert "featx: error" not in result.output


def _path_arguments(group=main, path=()):
    """Each command's path arguments: (the command line up to it, with a path for each argument before it, the
    argument)."""
    import click

    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _path_arguments(command, (*path, name))
            continue
        arguments = [param for param in command.params if isinstance(param, click.Argument)]
        for index, argument in enumerate(arguments):
            yield pytest.param(
                [*path, name, *["given.h5"] * index], argument, id=" ".join((*path, name, argument.name))
            )


PATH_ARGUMENTS = list(_path_arguments())
MORE = [  # featx labels FEATURES (featx labels list FEATURES), and featx extract's second corpus
    pytest.param(["labels"], main.commands["labels"].commands["list"].params[0], id="labels FEATURES"),
    pytest.param(["extract", "given.csv"], main.commands["extract"].params[0], id="extract CORPUS CORPUS"),
]


@pytest.mark.parametrize("args, argument", [*PATH_ARGUMENTS, *MORE])
def test_an_empty_path_argument_is_refused_by_its_name(args, argument):
    """``featx fit ""``, ``featx predict BUNDLE ""``...: an empty argument, which click would read as '.', the
    current folder, is refused as it is read, naming the argument and what it should be (every command's path
    arguments are ``featx.cli.generate.ArgumentPath``, with the words of ``featx.options.ARGUMENTS``)."""
    from featx.options import ARGUMENTS

    metavar = argument.human_readable_name
    name = next(word for word in (argument.name, metavar.lower()) if word in ARGUMENTS)
    result = CliRunner().invoke(main, [*args, ""], prog_name="featx")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"featx: error: {metavar} is empty: give {ARGUMENTS[name]}\n"
        "  hint: an empty path would read as '.', the current folder\n"
    )


def test_every_command_is_walked_for_its_path_arguments():
    commands = {case.id.rsplit(" ", 1)[0] for case in PATH_ARGUMENTS}  # "predict bundle": "predict"
    assert {"fit", "predict", "merge", "probe", "extract", "study run", "labels add", "directions"} <= commands

"""The cheat sheet at the end of ``featx --help``: one screen, and every line a command that parses."""

from __future__ import annotations

import ast
import inspect
import shlex

import click
import pytest
from click.testing import CliRunner

import featx
from featx.cli import main
from featx.cli.app import CHEAT_SHEET

SCREEN_LINES, SCREEN_WIDTH = 24, 80


def _help() -> str:
    result = CliRunner().invoke(main, ["--help"], terminal_width=SCREEN_WIDTH)
    assert result.exit_code == 0, result.output
    return result.output


def _command_lines() -> list[str]:
    return [line for line in CHEAT_SHEET.splitlines() if line.startswith("featx ")]


def _resolve(words: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """The (sub)command the words name, its name path and the arguments left for it, as click resolves them
    (``featx labels FEATURES`` is ``featx labels list FEATURES``)."""
    command: click.Command = main
    path = ["featx"]
    words = list(words[1:])
    while isinstance(command, click.Group) and words:
        try:
            name, sub, words = command.resolve_command(click.Context(command), words)
        except click.UsageError as error:
            raise AssertionError(f"featx {' '.join(path[1:])}: {error.message}") from None
        assert name is not None and sub is not None
        command, path = sub, [*path, name]
    return command, path, words


def test_help_ends_with_the_cheat_sheet_on_one_screen():
    output = _help()
    sheet = [line.strip() for line in CHEAT_SHEET.splitlines() if line != "\b"]
    printed = output.rstrip("\n").splitlines()[-len(sheet) :]
    assert [line.strip() for line in printed] == sheet  # at the very end, not rewrapped by click
    assert len(sheet) <= SCREEN_LINES
    assert max(len(line) for line in printed) <= SCREEN_WIDTH


def test_it_covers_the_common_commands():
    named = {_resolve(shlex.split(line, comments=True))[1][1] for line in _command_lines()}
    common = {"extract", "probe", "plot", "report", "compare", "fit", "predict", "erase", "neurons", "labels"}
    assert common <= named
    assert any("--dry-run" in line for line in _command_lines())


@pytest.mark.parametrize("line", _command_lines())
def test_every_line_parses_as_that_command(line):
    """Click parses the line's arguments as the command would (unknown flags, missing or extra arguments and
    bad values fail here), without running the command."""
    command, path, arguments = _resolve(shlex.split(line, comments=True))
    flags = {flag for word in arguments if word.startswith("-") for flag in [word.split("=")[0]]}
    known = {name for parameter in command.params for name in [*parameter.opts, *parameter.secondary_opts]}
    assert flags <= known, f"{' '.join(path)} has no {sorted(flags - known)}"
    with command.make_context(" ".join(path), arguments) as context:
        assert context.params  # the arguments landed in the command's parameters


def test_the_python_line_calls_embed_as_it_is_declared():
    (line,) = [line for line in CHEAT_SHEET.splitlines() if "featx.embed(" in line]
    call = ast.parse(line[line.index("featx.embed(") : line.index("#")].strip(), mode="eval").body
    assert isinstance(call, ast.Call)
    keywords = {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords}
    inspect.signature(featx.embed).bind(["a text"] * len(call.args), **keywords)

"""Every ``featx COMMAND --flag`` the documentation shows (README.md and docs/, in code blocks and inline code)
names a command and options that exist, so a renamed or removed option cannot linger in the pages."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from featx.cli import main

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^\s*`{3,}")
IN_BLOCK = re.compile(r"(?:^|[\s;|&(])featx\s+(.*)")
INLINE = re.compile(r"`featx\s+([^`]+)`")
OPTION = re.compile(r"--?[A-Za-z][\w-]*")


def command_lines(text: str) -> list[tuple[int, str]]:
    """``(line, what follows featx)`` of every featx command: in fenced blocks (backslash continuations
    joined), and in inline code spans of the prose."""
    found: list[tuple[int, str]] = []
    lines = text.splitlines()
    in_block, index = False, 0
    while index < len(lines):
        line, start = lines[index], index + 1
        if FENCE.match(line):
            in_block = not in_block
        elif in_block:
            while line.rstrip().endswith("\\") and index + 1 < len(lines):
                index += 1
                line = line.rstrip()[:-1].rstrip() + " " + lines[index].strip()
            found += [(start, match.group(1)) for match in IN_BLOCK.finditer(line)]
        else:
            found += [(start, match.group(1)) for match in INLINE.finditer(line)]
        index += 1
    return found


def check(rest: str) -> list[str]:
    """What is wrong with one command (empty when nothing): an option its command lacks. Prose that only
    follows the word featx (no command name) is not a command."""
    rest = re.split(r"\s#|[|;]|&&", rest)[0]
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    command: click.Command = main
    path = []
    while isinstance(command, click.Group) and words and words[0] in command.commands:
        path.append(words[0])
        command = command.commands[words.pop(0)]
    if not path:
        return []
    known = {"-h", "--help"} | {name for param in command.params for name in [*param.opts, *param.secondary_opts]}
    options = [word.split("=")[0] for word in words if OPTION.fullmatch(word.split("=")[0])]
    return [f"featx {' '.join(path)} has no option {option}" for option in options if option not in known]


def test_the_scanner_reads_blocks_continuations_and_inline_code():
    text = "Run `featx probe x.h5 --labl y` now.\n\n```bash\nfeatx extract a.csv \\\n    --layer 3  # --nope\n```\n"
    assert command_lines(text) == [(1, "probe x.h5 --labl y"), (4, "extract a.csv --layer 3  # --nope")]
    assert check("probe x.h5 --labl y") == ["featx probe has no option --labl"]
    assert check("extract a.csv --layer=3  # --nope") == []
    assert check("labels add f.h5 more.csv --join row") == []
    assert check("with its embedded model") == []


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(REPO)) for page in PAGES])
def test_every_documented_featx_option_exists(page):
    wrong = [
        f"{page.relative_to(REPO)}:{line}: {problem}"
        for line, rest in command_lines(page.read_text(encoding="utf-8"))
        for problem in check(rest)
    ]
    assert wrong == []

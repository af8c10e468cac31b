"""Run the command blocks of the documentation's tutorials, so the pages cannot drift from the CLI.

The convention, in the Markdown of ``docs/tutorials/*.md``:

- Every fenced ``bash`` block runs as a script; in a ``console`` block the lines after a ``$ `` prompt (and
  their ``\\`` continuations) run, the other lines are output. Other languages (``text``, ``python``) are
  shown, not run; Python runs through a ``bash`` block (``python - <<'EOF'``).
- Blocks run in page order, each in a fresh ``bash -euo pipefail``, all in one temporary folder per page that
  holds a copy of the repository's ``data/``; ``featx`` and ``python`` are this checkout's; the Hugging Face
  hub is offline. Every block must exit 0. ``tests/docs/test_tutorials.py`` runs ``featx``, and ``python -``
  (a script on standard input), through the test run's fork server (``run_server``, ``support.zygote``): the
  same CLI and interpreter, without importing torch again per command; ``python`` with other arguments starts
  afresh.
- ``<!-- docs-test: skip REASON -->`` directly above a block leaves it out; the reason is required.
- ``<!-- docs-test: expect "TEXT" -->`` directly below a block: its output (stdout and stderr) holds TEXT.
- ``<!-- docs-test: env NAME=VALUE -->`` anywhere on a page: NAME=VALUE is exported to every block of the
  page, and a block line assigning NAME (``NAME=...``, ``export NAME=...``) assigns VALUE instead, so the
  commands that use ``$NAME`` run verbatim. ``tiny:FAMILY`` as VALUE is the path of a tiny random model of
  that family from the test zoo (``support.families``; decoders get a chat template).
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ZYGOTE = Path(__file__).resolve().parent  # zygote.py and zygote_client.py
RUN_LANGUAGES = ("bash", "console")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<verb>\S+)\s*(?P<rest>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,})\s*(?P<language>[\w+-]*)")
ENV = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S.*)$")
EXPECT = re.compile(r'^"(?P<text>.+)"$')


class DocsTestError(ValueError):
    """A docs-test marker that cannot be honoured (no reason for a skip, a misplaced marker, ...)."""


@dataclass(frozen=True)
class Block:
    """One fenced code block to run (or skipped with its reason)."""

    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skip: str | None = None
    expect: tuple[str, ...] = ()

    def script(self, env: dict[str, str]) -> str:
        """The shell script of the block: a console block's commands, with the page's assignments replaced."""
        lines = console_commands(self.code) if self.language == "console" else self.code.splitlines()
        return "\n".join(substitute(line, env) for line in lines) + "\n"


@dataclass(frozen=True)
class Page:
    """The blocks of one Markdown page and its ``env`` substitutions."""

    path: Path
    blocks: tuple[Block, ...]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def runnable(self) -> list[Block]:
        return [block for block in self.blocks if block.skip is None]


def console_commands(code: str) -> list[str]:
    """The command lines of a console transcript: ``$ `` lines and their backslash continuations."""
    commands: list[str] = []
    continued = False
    for line in code.splitlines():
        if continued or line.startswith("$ "):
            commands.append(line if continued else line[2:])
            continued = line.rstrip().endswith("\\")
    return commands


def substitute(line: str, env: dict[str, str]) -> str:
    """``NAME=...`` (or ``export NAME=...``) for a NAME the page substitutes assigns the substitute."""
    for name, value in env.items():
        match = re.match(rf"^(\s*(?:export\s+)?){name}=", line)
        if match:
            return f"{match.group(1)}{name}={shlex.quote(value)}"
    return line


def parse_page(text: str, path: Path = Path("page.md")) -> Page:
    """Every fenced block of ``text`` in a run language, with the markers around it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    env: dict[str, str] = {}
    pending_skip: tuple[int, str] | None = None
    last_block_end = -2
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = MARKER.match(line)
        fence = FENCE.match(line)
        where = f"{path}:{index + 1}"
        if marker:
            verb, rest = marker.group("verb"), marker.group("rest")
            if verb == "skip":
                if not rest:
                    raise DocsTestError(f"{where}: a docs-test skip needs its reason: <!-- docs-test: skip WHY -->")
                pending_skip = (index, rest)
            elif verb == "expect":
                add_expect(blocks, rest, where, adjacent=last_block_end == previous_content(lines, index))
            elif verb == "env":
                name, value = parse_env(rest, where)
                env[name] = value
            else:
                raise DocsTestError(f"{where}: unknown docs-test marker {verb!r} (skip, expect or env)")
            index += 1
            continue
        if fence:
            end = closing_fence(lines, index, fence.group("fence"), where)
            language = fence.group("language")
            skip = None
            if pending_skip is not None and previous_content(lines, index) == pending_skip[0]:
                skip = pending_skip[1]
                pending_skip = None
            if language in RUN_LANGUAGES:
                code = "\n".join(strip_indent(row, fence.group("indent")) for row in lines[index + 1 : end])
                blocks.append(Block(index + 1, language, code, skip))
                last_block_end = end
            elif skip is not None:
                raise DocsTestError(f"{where}: a docs-test skip above a {language or 'plain'} block, which never runs")
            index = end + 1
            continue
        if pending_skip is not None and line.strip():
            raise DocsTestError(f"{path}:{pending_skip[0] + 1}: a docs-test skip must be directly above a block")
        index += 1
    if pending_skip is not None:
        raise DocsTestError(f"{path}:{pending_skip[0] + 1}: a docs-test skip must be directly above a block")
    return Page(path, tuple(blocks), env)


def previous_content(lines: list[str], index: int) -> int:
    """The index of the last non-blank line before ``index`` (-1 if none)."""
    for before in range(index - 1, -1, -1):
        if lines[before].strip():
            return before
    return -1


def closing_fence(lines: list[str], start: int, fence: str, where: str) -> int:
    """The index of the line closing the block opened at ``start``."""
    for index in range(start + 1, len(lines)):
        if lines[index].strip() == fence:
            return index
    raise DocsTestError(f"{where}: a code block that is never closed")


def strip_indent(line: str, indent: str) -> str:
    return line[len(indent) :] if line.startswith(indent) else line


def add_expect(blocks: list[Block], rest: str, where: str, adjacent: bool) -> None:
    """Attach an ``expect "TEXT"`` marker to the block just above it."""
    match = EXPECT.match(rest)
    if not match:
        raise DocsTestError(f'{where}: write a docs-test expect as <!-- docs-test: expect "TEXT" -->')
    if not blocks or not adjacent:
        raise DocsTestError(f"{where}: a docs-test expect must be directly below a bash or console block")
    last = blocks[-1]
    blocks[-1] = Block(last.line, last.language, last.code, last.skip, (*last.expect, match.group("text")))


def parse_env(rest: str, where: str) -> tuple[str, str]:
    match = ENV.match(rest)
    if not match:
        raise DocsTestError(f"{where}: write a docs-test env as <!-- docs-test: env NAME=VALUE -->")
    return match.group("name"), match.group("value")


def resolve(value: str, models: Path) -> str:
    """``tiny:FAMILY`` is a tiny random model of that family (built once into ``models``); other values stay."""
    if not value.startswith("tiny:"):
        return value
    from support.families import BY_NAME, build_family
    from support.prompt_models import add_chat_template

    name = value.removeprefix("tiny:")
    folder = models / f"tiny-{name}"
    if not folder.exists():
        family = BY_NAME[name]
        build_family(family, folder)
        if family.causal:
            add_chat_template(folder)
    return str(folder)


def command_env(repo: Path) -> dict[str, str]:
    """The environment the blocks (and the ``featx`` fork server) run in: this checkout's featx, offline."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH", "")]))
    return env


def prepare(workdir: Path, repo: Path, served: dict[str, str] | None = None) -> dict[str, str]:
    """The page's folder (a copy of ``data/``) and the environment its blocks run in. ``served``: the commands
    of a fork server (``run_server``), which the ``featx`` shim and a ``python -`` run instead of a fresh process
    (default: a fresh ``python -m featx`` and ``python``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(repo / "data", workdir / "data", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    shims = workdir.parent / f"{workdir.name}-bin"
    shims.mkdir(exist_ok=True)
    python = f'"{sys.executable}"'
    featx = served["featx"] if served else f"{python} -m featx"
    stdin_script = f'if [ "$#" -eq 1 ] && [ "$1" = - ]; then exec {served["python"]} -; fi\n' if served else ""
    for name, body in (("featx", f'exec {featx} "$@"\n'), ("python", f'{stdin_script}exec {python} "$@"\n')):
        shim = shims / name
        shim.write_text(f"#!/bin/sh\n{body}")
        shim.chmod(0o755)
    env = command_env(repo)
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    return env


def start_server(
    repo: Path, folder: Path, watch: int | None = None, bare: bool = False, timeout: float = 120
) -> tuple[subprocess.Popen, dict[str, str]]:
    """The fork server of ``support.zygote`` for this checkout, started in ``folder`` (its socket and its log
    there; with ``watch``, it ends when process ``watch`` does; ``bare``: nothing preloaded): the process, and
    the shell commands that run ``featx ARGS`` and ``python -`` (``-c CODE``, ``-m MODULE``, ``SCRIPT``) through
    it, as ``{"featx": ..., "python": ...}`` (the same CLI and interpreter, without importing torch and the rest
    again per command)."""
    socket_path = folder / "featx.sock"
    options = [*([str(watch)] if watch else []), *(["--bare"] if bare else [])]
    with open(folder / "featx-server.log", "w") as log:  # the server keeps its own descriptor
        server = subprocess.Popen(
            [sys.executable, str(ZYGOTE / "zygote.py"), "serve", str(socket_path), *options],
            env=command_env(repo),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + timeout
        while not socket_path.exists():
            assert server.poll() is None, f"the featx fork server exited: {(folder / 'featx-server.log').read_text()}"
            assert time.monotonic() < deadline, "the featx fork server did not start"
            time.sleep(0.05)
    except BaseException:
        server.kill()
        server.wait()
        raise
    return server, served_commands(socket_path)


def served_commands(socket_path: Path) -> dict[str, str]:
    """The shell commands of the server listening at ``socket_path`` (see ``start_server``)."""
    client = shlex.quote(str(ZYGOTE / "zygote_client.py"))
    client_command = f'"{sys.executable}" -I -S {client} {shlex.quote(str(socket_path))}'
    return {program: f"{client_command} {program}" for program in ("featx", "python")}


RUN_SERVERS: list[subprocess.Popen] = []  # the shared servers this process started (they end with the run)


def run_server(repo: Path, folder: Path, watch: int, bare: bool = False) -> dict[str, str]:
    """The commands of the one fork server of a test run, which ``folder`` (a folder every process of the run
    sees) holds: the first process to ask starts it, under a lock, and the others use it; it ends itself when
    process ``watch`` (the run's pytest, the pytest-xdist workers' parent) does. ``bare``: see ``start_server``."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (folder / "featx.sock").exists():
            return served_commands(folder / "featx.sock")
        server, commands = start_server(repo, folder, watch, bare)
        RUN_SERVERS.append(server)
        return commands


def run_page(
    page: Page, repo: Path, workdir: Path, models: Path, timeout: float = 600, served: dict[str, str] | None = None
) -> list[str]:
    """Run the page's blocks in order; an AssertionError names the first block that fails. Returns the outputs.
    ``served``: the fork server's commands behind the ``featx`` and ``python -`` shims (see ``prepare``)."""
    env = prepare(workdir, repo, served)
    substitutes = {name: resolve(value, models) for name, value in page.env.items()}
    env.update(substitutes)
    outputs = []
    for block in page.runnable:
        script = "set -euo pipefail\n" + block.script(substitutes)
        done = subprocess.run(
            ["bash", "-c", script], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
        )
        output = done.stdout + done.stderr
        where = f"{page.path}:{block.line}"
        assert done.returncode == 0, f"{where}: exit {done.returncode}\n{block.code}\n--- output ---\n{output[-4000:]}"
        for text in block.expect:
            assert text in output, f"{where}: the output lacks {text!r}\n--- output ---\n{output[-4000:]}"
        outputs.append(output)
    return outputs

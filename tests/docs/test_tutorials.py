"""Every command block of the tutorials runs against this checkout's CLI (see ``support.tutorials``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.tutorials import RUN_SERVERS, DocsTestError, parse_page, run_page, run_server

import featx

REPO = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((REPO / "docs" / "tutorials").glob("*.md"))

MADE_UP = """# A page

Some prose.

<!-- docs-test: env MODEL=tiny:gpt2 -->

```bash
MODEL=Qwen/Qwen2.5-0.5B-Instruct
featx extract data/demo.csv --model "$MODEL"
```
<!-- docs-test: expect "wrote" -->

```text
wrote out.h5
```

<!-- docs-test: skip needs a GPU -->
```bash
featx extract data/demo.csv --device cuda
```

```console
$ featx probe out.h5 \\
    --layer all
label 'sentiment': 3000 rows
$ featx plot
```

```python
print("shown, not run")
```
"""


def test_the_parser_finds_the_blocks_and_their_markers():
    page = parse_page(MADE_UP)
    assert [(block.line, block.language) for block in page.blocks] == [(7, "bash"), (18, "bash"), (22, "console")]
    first, skipped, console = page.blocks
    assert first.expect == ("wrote",)
    assert skipped.skip == "needs a GPU"
    assert [block.line for block in page.runnable] == [7, 22]
    assert page.env == {"MODEL": "tiny:gpt2"}
    assert first.script({"MODEL": "/tmp/tiny gpt2"}).splitlines() == [
        "MODEL='/tmp/tiny gpt2'",
        'featx extract data/demo.csv --model "$MODEL"',
    ]
    assert console.script({}).splitlines() == ["featx probe out.h5 \\", "    --layer all", "featx plot"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- docs-test: skip -->\n```bash\ntrue\n```\n", "a docs-test skip needs its reason"),
        ("<!-- docs-test: skip slow -->\n\nprose\n\n```bash\ntrue\n```\n", "must be directly above a block"),
        ("<!-- docs-test: skip why -->\n```text\nout\n```\n", "never runs"),
        ('```bash\ntrue\n```\n\nprose\n<!-- docs-test: expect "x" -->\n', "directly below a bash or console"),
        ("```bash\ntrue\n```\n<!-- docs-test: expect x -->\n", 'expect "TEXT"'),
        ("<!-- docs-test: env MODEL -->\n", "env NAME=VALUE"),
        ("<!-- docs-test: run -->\n", "unknown docs-test marker 'run'"),
        ("```bash\ntrue\n", "never closed"),
    ],
)
def test_a_marker_that_cannot_be_honoured_is_an_error(text, message):
    with pytest.raises(DocsTestError, match=message):
        parse_page(text)


def test_every_tutorial_page_has_a_block_that_runs():
    assert [page.name for page in TUTORIALS] == [
        "deploy.md",
        "first-probe.md",
        "llm-probing.md",
        "sentence-pairs.md",
        "word-level.md",
    ]
    for path in TUTORIALS:
        page = parse_page(path.read_text(encoding="utf-8"), path.relative_to(REPO))
        assert page.runnable, f"{path.name} has no bash or console block that runs"


@pytest.mark.slow
def test_the_runner_names_the_failing_block_and_checks_expectations(tmp_path):
    page = parse_page('```bash\necho hello\n```\n<!-- docs-test: expect "hello" -->\n\n```bash\nfalse\n```\n')
    with pytest.raises(AssertionError, match=r"page.md:6: exit 1"):
        run_page(page, REPO, tmp_path / "page", tmp_path / "models")
    missing = parse_page('```bash\necho hello\n```\n<!-- docs-test: expect "goodbye" -->\n')
    with pytest.raises(AssertionError, match="the output lacks 'goodbye'"):
        run_page(missing, REPO, tmp_path / "missing", tmp_path / "models")


def _served_and_fresh(script: str, served: str, fresh: str, folder: Path) -> tuple[list[str], list[str]]:
    """``script`` run by bash with ``served`` for COMMAND, then with ``fresh``: [stdout, stderr] of each."""
    runs = []
    for command in (served, fresh):
        done = subprocess.run(
            ["bash", "-c", script.replace("COMMAND", command)],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        runs.append([done.stdout, done.stderr])
    return runs[0], runs[1]


STDIN_SCRIPT = """COMMAND - <<'END'
import sys
import featx
print(sys.argv, __name__, repr(sys.path[0]), featx.__version__)
print("to stderr", file=sys.stderr)
sys.exit(3)
END
echo status $?
"""


@pytest.mark.slow
def test_the_fork_server_runs_the_cli_as_a_fresh_process_would(served_commands, tmp_path):
    script = "COMMAND --version && COMMAND probe missing.h5 --label x; echo status $?"
    served, fresh = _served_and_fresh(script, served_commands["featx"], f"{sys.executable} -m featx", tmp_path)
    assert "status 2" in fresh[0] or "status 1" in fresh[0]
    assert served == fresh


@pytest.mark.slow
def test_the_fork_server_runs_a_stdin_script_as_a_fresh_python_would(served_commands, tmp_path):
    served, fresh = _served_and_fresh(STDIN_SCRIPT, served_commands["python"], sys.executable, tmp_path)
    assert fresh == [f"['-'] __main__ '' {featx.__version__}\nstatus 3\n", "to stderr\n"]
    assert served == fresh
    failing = "COMMAND - <<'END'\nprint('before')\n1 / 0\nEND\necho status $?\n"
    served, fresh = _served_and_fresh(failing, served_commands["python"], sys.executable, tmp_path)
    assert served[0] == fresh[0] == "before\nstatus 1\n"
    for stderr in (served[1], fresh[1]):
        assert 'File "<stdin>", line 2' in stderr and stderr.endswith("ZeroDivisionError: division by zero\n")


ARGV_SCRIPT = """COMMAND -c 'import sys; print(sys.argv, __name__, repr(sys.path[0])); sys.exit(4)' a b; echo status $?
COMMAND -m argv_module x; echo status $?
COMMAND argv_module.py y; echo status $?
echo '{"b": 1, "a": [2]}' | COMMAND -m json.tool --sort-keys; echo status $?
"""


@pytest.mark.slow
def test_the_fork_server_runs_python_c_m_and_a_script_as_a_fresh_python_would(served_commands, tmp_path):
    (tmp_path / "argv_module.py").write_text("import sys\nprint(sys.argv, __name__, sys.path[0])")
    served, fresh = _served_and_fresh(ARGV_SCRIPT, served_commands["python"], sys.executable, tmp_path)
    assert fresh[0] == (
        f"['-c', 'a', 'b'] __main__ ''\nstatus 4\n['{tmp_path}/argv_module.py', 'x'] __main__ {tmp_path}\nstatus 0\n"
        f"['argv_module.py', 'y'] __main__ {tmp_path}\nstatus 0\n"
        '{\n    "a": [\n        2\n    ],\n    "b": 1\n}\nstatus 0\n'
    )
    assert served == fresh
    failing = "COMMAND -c 'print(1)\nraise ValueError(2)'; echo status $?"
    served, fresh = _served_and_fresh(failing, served_commands["python"], sys.executable, tmp_path)
    assert served[0] == fresh[0] == "1\nstatus 1\n"
    for stderr in (served[1], fresh[1]):
        assert 'File "<string>", line 2' in stderr and stderr.endswith("ValueError: 2\n")


@pytest.mark.slow
def test_a_run_shares_one_fork_server_that_ends_with_the_run(tmp_path):
    run = subprocess.Popen(["sleep", "600"])  # in the place of the run's pytest, which the server watches
    started = len(RUN_SERVERS)
    try:
        commands = run_server(REPO, tmp_path / "server", watch=run.pid, bare=True)
        assert run_server(REPO, tmp_path / "server", watch=run.pid, bare=True) == commands  # the second asker's
        assert len(RUN_SERVERS) == started + 1
        done = subprocess.run(
            f"{commands['python']} -c 'print(6 * 7)'", shell=True, capture_output=True, text=True, timeout=120
        )
        assert done.stdout == "42\n"
    finally:
        run.kill()
        run.wait()
    assert RUN_SERVERS[-1].wait(timeout=120) == 0  # it ended when the process it watches did


def test_without_process_descriptors_the_server_looks_at_the_watched_process_every_second(monkeypatch):
    from support import zygote

    ended = subprocess.Popen(["true"])
    ended.wait()  # reaped: its pid names no process now
    assert zygote.watching(None) == ([], None)  # nothing watched
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    assert zygote.watching(os.getpid()) == ([], 1.0)
    assert zygote.alive(os.getpid()) and not zygote.alive(ended.pid)


@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=[path.stem for path in TUTORIALS])
def test_tutorial_commands_run(path, tmp_path_factory, served_commands):
    page = parse_page(path.read_text(encoding="utf-8"), path.relative_to(REPO))
    models = tmp_path_factory.getbasetemp() / "tutorial-models"
    models.mkdir(exist_ok=True)
    run_page(page, REPO, tmp_path_factory.mktemp(path.stem), models, served=served_commands)

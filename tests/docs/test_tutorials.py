"""Every command block of the tutorials runs against this checkout's CLI (see ``support.tutorials``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.tutorials import DocsTestError, featx_server, parse_page, run_page

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


@pytest.fixture(scope="module")
def featx_command(tmp_path_factory):
    """The pages' ``featx``: this checkout's CLI through one fork server (``support.zygote``) per worker, so the
    thirty-odd commands do not each import torch, transformers and scikit-learn again."""
    with featx_server(REPO, tmp_path_factory.mktemp("featx-server")) as command:
        yield command


@pytest.mark.slow
def test_the_fork_server_runs_the_cli_as_a_fresh_process_would(featx_command, tmp_path):
    script = f"{featx_command} --version && {featx_command} probe missing.h5 --label x; echo status $?"
    served = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    fresh = subprocess.run(
        ["bash", "-c", script.replace(featx_command, f"{sys.executable} -m featx")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert "status 2" in fresh.stdout or "status 1" in fresh.stdout
    assert (served.stdout, served.stderr) == (fresh.stdout, fresh.stderr)


@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=[path.stem for path in TUTORIALS])
def test_tutorial_commands_run(path, tmp_path_factory, featx_command):
    page = parse_page(path.read_text(encoding="utf-8"), path.relative_to(REPO))
    models = tmp_path_factory.getbasetemp() / "tutorial-models"
    models.mkdir(exist_ok=True)
    run_page(page, REPO, tmp_path_factory.mktemp(path.stem), models, featx=featx_command)

"""The package's shape: no import circle anywhere in featx, no old import path, and the torch-free entry
points stay torch-free."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "featx"
# The old top-level paths of 0.1's development tree; never released, so nothing re-exports them.
REMOVED = (
    "featx.batching",
    "featx.corpus",
    "featx.estimation",
    "featx.extract_config",
    "featx.extractor",
    "featx.freshness",
    "featx.merge",
    "featx.model_files",
    "featx.modeling",
    "featx.onednn",
    "featx.plots",
    "featx.pooling",
    "featx.sharding",
    "featx.sites",
    "featx.tokenize",
    "featx._moved",
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """featx module -> featx modules it imports anywhere in its code (function-level imports included);
    ``from package import submodule`` counts as the submodule."""
    files = {_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
                submodules = {f"{target}.{alias.name}" for alias in node.names} & set(files)
                edges |= submodules
                if len(submodules) < len(node.names):
                    edges.add(target)
            elif isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names}
        graph[name] = {edge for edge in edges if edge in files and edge != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_circle_in_featx():
    graph = import_graph()
    assert len(graph) > 30  # the walk found the package
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("old", REMOVED)
def test_old_import_paths_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


@pytest.mark.slow
def test_config_and_quick_check_do_not_import_torch():
    code = (
        "import sys, featx, featx.extraction; featx.extraction.ExtractConfig(corpus='c.csv'); "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_hdf5_paths_are_named_only_in_the_store():
    """Only featx/store names datasets and groups of the features file."""
    import re

    path_literal = re.compile(r"""["'](rows|labels|pooled|tokens|sites|progress)/[A-Za-z_{]""")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if "store" not in path.relative_to(PACKAGE).parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if path_literal.search(line)
    ]
    assert offenders == []


def test_featx_native_bert_never_imports_transformers():
    """featx's own encoders (``extraction/fast/``) exist so that an extraction need not import transformers:
    none of its modules may."""
    files = sorted((PACKAGE / "extraction" / "fast").glob("*.py"))
    assert len(files) >= 4
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(name.split(".")[0] == "transformers" for name in names), path.name

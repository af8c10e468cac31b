"""The code's shape, kept by tests: modules and functions of a readable size, public names across module
boundaries, an ``__all__`` in every package, and h5py inside the store only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "featx"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path: Path) -> str:
    name = _name(path)
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    if not node.level:
        return node.module or ""
    base = _package(path).split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(path: Path, text: str | None = None) -> list[str]:
    """``from featx.x import _name`` and ``module._name`` on an imported featx module, in one file (``text``: the
    source of a module at ``path`` that is not written there)."""
    modules = {_name(p) for p in _modules()}
    tree = ast.parse(path.read_text() if text is None else text)
    found, module_aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node, path)
            if not target.startswith("featx"):
                continue
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    module_aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
                elif _private(alias.name):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {target}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("featx") and alias.asname:
                    module_aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module_aliases
            and _private(node.attr)
        ):
            found.append(
                f"{path.relative_to(PACKAGE.parent)}:{node.lineno} uses {module_aliases[node.value.id]}.{node.attr}"
            )
    return found


def test_no_module_over_the_size_limit():
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in _modules()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_over_the_size_limit():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if node.end_lineno - start + 1 > MAX_FUNCTION_LINES:
                    long.append(
                        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} "
                        f"({node.end_lineno - start + 1} lines)"
                    )
    assert long == []


def test_modules_import_each_others_public_names_only():
    found = [line for path in _modules() for line in private_imports(path)]
    assert found == []


def test_the_private_import_finder_finds_them():
    """On a module's source placed (not written: another worker globs the package meanwhile) in featx.probing."""
    source = "from .config import _hidden\nfrom . import config as cfg\nx = cfg._secret\n"
    found = private_imports(PACKAGE / "probing" / "_shape_probe_tmp.py", source)
    assert len(found) == 2, found


@pytest.mark.parametrize("init", sorted(PACKAGE.rglob("__init__.py")), ids=lambda p: _name(p))
def test_every_package_lists_its_api(init):
    tree = ast.parse(init.read_text())
    names = [
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    ]
    assert "__all__" in names, f"{_name(init)} has no __all__"


def test_h5py_is_imported_only_in_the_store():
    offenders = []
    for path in _modules():
        if "store" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(name.split(".")[0] == "h5py" for name in names):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert offenders == []

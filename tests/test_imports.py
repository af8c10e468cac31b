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


def test_help_and_labels_do_not_import_torch():
    """``featx --help`` and ``featx labels`` (its help) answer without torch: a second of imports saved."""
    code = (
        "import sys\nfrom featx.cli import main\n"
        "for args in (['--help'], ['labels']):\n"
        "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Common commands" in result.stdout  # the group's help ran
    assert result.stdout.strip().splitlines()[-1] == "False"


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


# -- packages talk through their public face only ---------------------------------------------------------------
def _sources() -> dict[str, tuple[str, bool]]:
    """featx module -> (its source, whether it is a package's ``__init__``)."""
    return {_name(path): (path.read_text(), path.name == "__init__.py") for path in PACKAGE.rglob("*.py")}


def _packages(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """The top-level packages: ``featx.Q`` with an ``__init__`` (root modules such as ``featx.errors`` are none)."""
    return sorted(name for name, (_, is_package) in sources.items() if is_package and name.count(".") == 1)


def _unit(module: str, packages) -> str:
    """The top-level package a module belongs to, or the module itself for a root module."""
    top = ".".join(module.split(".")[:2])
    return top if top in packages else module


def _imports(module: str, source: str, is_package: bool):
    """``(target module, imported name or None, line)`` of every import in ``source``, function-level included;
    relative imports resolved. ``from featx.Q import x`` gives ``("featx.Q", "x")``, ``import featx.Q.x``
    gives ``("featx.Q.x", None)``."""
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                yield target, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno


def reach_ins(sources: dict[str, tuple[str, bool]], faces: dict[str, list[str]]) -> list[str]:
    """Every import of one top-level package's inner module from outside it (``featx.Q.inner``, absolute or
    relative, at any depth of the code), and every ``from featx.Q import X`` with X not in ``faces[Q]``
    (``Q.__all__``). ``from featx import Q`` and ``import featx.Q`` are the face itself."""
    packages = set(faces)
    found = []
    for module, (source, is_package) in sorted(sources.items()):
        home = _unit(module, packages)
        for target, name, line in _imports(module, source, is_package):
            if target == "featx" and name is not None and f"featx.{name}" in packages:
                continue  # from featx import Q
            unit = _unit(target, packages)
            if unit not in packages or unit == home:
                continue
            where = f"{module}:{line}"
            if target != unit:
                found.append(f"{where} reaches into {target}")
            elif name is not None and name not in faces[unit]:
                found.append(f"{where} imports {name!r}, which is not in {unit}.__all__")
    return found


def _faces(packages) -> dict[str, list[str]]:
    return {package: list(importlib.import_module(package).__all__) for package in packages}


def test_packages_import_each_other_only_through_their_face():
    sources = _sources()
    packages = _packages(sources)
    assert {"featx.extraction", "featx.probing", "featx.report", "featx.store"} <= set(packages)
    assert reach_ins(sources, _faces(packages)) == []


def test_the_reach_in_finder_finds_them():
    faces = {"featx.p": ["public"], "featx.q": ["face"]}
    sources = {
        "featx.p": ("from ._inner import public\n", True),
        "featx.p._inner": ("public = 1\n", False),
        "featx.q": ("from .mod import face\n", True),
        "featx.q.mod": (
            "from ..p import public\n"  # the face: fine
            "from featx import p\n"  # the package itself: fine
            "from . import face\n"  # its own package: fine
            "from ..p._inner import public\n"  # a relative reach-in
            "def f():\n"
            "    from featx.p._inner import public\n"  # an absolute one, inside a function
            "    import featx.p._inner\n"  # import of an inner module
            "    from featx.p import hidden\n",  # a name the face does not list
            False,
        ),
        "featx.errors": ("from .p._inner import public\n", False),  # a root module reaching in
    }
    assert reach_ins(sources, faces) == [
        "featx.errors:1 reaches into featx.p._inner",
        "featx.q.mod:4 reaches into featx.p._inner",
        "featx.q.mod:6 reaches into featx.p._inner",
        "featx.q.mod:7 reaches into featx.p._inner",
        "featx.q.mod:8 imports 'hidden', which is not in featx.p.__all__",
    ]


# -- no circle between top-level packages -----------------------------------------------------------------------
def package_graph(modules: dict[str, set[str]], packages) -> dict[str, set[str]]:
    """The module graph folded onto top-level packages (root modules stay themselves)."""
    graph: dict[str, set[str]] = {}
    for module, targets in modules.items():
        unit = _unit(module, packages)
        graph.setdefault(unit, set()).update(_unit(target, packages) for target in targets)
    return {unit: targets - {unit} for unit, targets in graph.items()}


def test_no_circle_between_packages():
    graph = package_graph(import_graph(), set(_packages(_sources())))
    assert "featx.probing" in graph and "featx.report" in graph
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_package_circle_finder_finds_one():
    """probing -> report and report -> probing through different modules: no module circle, a package circle."""
    modules = {
        "featx.probing.results": {"featx.report.text"},
        "featx.report.text": set(),
        "featx.report.load": {"featx.probing.meta"},
        "featx.probing.meta": set(),
    }
    assert find_cycle(modules) is None
    graph = package_graph(modules, {"featx.probing", "featx.report"})
    assert find_cycle(graph) == ["featx.probing", "featx.report", "featx.probing"]


# -- every face resolves ----------------------------------------------------------------------------------------
def _all_packages() -> list[str]:
    return sorted(_name(path) for path in PACKAGE.rglob("__init__.py"))


@pytest.mark.parametrize("package", _all_packages())
def test_every_name_of_a_face_resolves(package):
    module = importlib.import_module(package)
    assert module.__all__, package
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert missing == [], f"{package}.__all__ lists names it does not have: {missing}"
    assert set(module.__all__) <= set(dir(module))

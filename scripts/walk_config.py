"""Follow one ``ExtractConfig`` through ``featx.extract`` and count how the code is walked.

    python scripts/walk_config.py [--sites hidden,ffn] [--tokens]

Traces every Python call made inside the ``featx`` package during one extraction of a tiny corpus with
a tiny random BERT (built on the fly), and reports:
  * modules entered: distinct featx modules in which a function ran;
  * calls up the import graph: calls from module A into module B where B imports A (directly or via its
    own imports) while A does not import B, i.e. control flowing against the layering;
  * returns to the orchestrator: how often control re-enters the module that owns ``extract`` from
    another featx module (calls into it plus returns from callees back into it).
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def import_graph(top_level_only: bool = False) -> dict[str, set[str]]:
    """featx module -> featx modules it imports (``from pkg import submodule`` counts as the submodule only)."""
    graph: dict[str, set[str]] = {}
    modules = {module_name(path) for path in (ROOT / "featx").rglob("*.py")}
    for path in (ROOT / "featx").rglob("*.py"):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges = graph.setdefault(name, set())
        tree = ast.parse(path.read_text())
        nodes = tree.body if top_level_only else ast.walk(tree)
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.startswith("featx"):
                    submodules = {f"{target}.{alias.name}" for alias in node.names} & modules
                    edges.update(submodules)
                    if len(submodules) < len(node.names):
                        edges.add(target)
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name.startswith("featx"))
    return {name: {edge for edge in edges if edge in graph and edge != name} for name, edges in graph.items()}


def reachable(graph, start) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        for nxt in graph.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", default="hidden")
    parser.add_argument("--tokens", action="store_true")
    parser.add_argument("--orchestrator", default=None, help="module owning extract (default: found by name)")
    args = parser.parse_args()
    from support.tiny import SENTENCES, build_tiny_bert, write_csv

    import featx

    work = Path(tempfile.mkdtemp())
    model = build_tiny_bert(work / "tiny")
    corpus = write_csv(work / "c.csv", SENTENCES)
    graph = import_graph()
    layering = import_graph(top_level_only=True)
    closure = {name: reachable(layering, name) for name in graph}
    featx_root = str(ROOT / "featx")
    events: list[tuple[str, str]] = []  # ("call"|"return", module)

    def profile(frame, event, arg):
        if event not in ("call", "return"):
            return
        filename = frame.f_code.co_filename
        if filename.startswith(featx_root) and frame.f_code.co_name != "<module>":
            events.append((event, module_name(Path(filename))))

    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(featx.__path__, "featx."):  # import first: class bodies are not the walk
        if not info.name.split(".")[-1].startswith("_"):
            importlib.import_module(info.name)
    sys.setprofile(profile)
    try:
        featx.extract(
            corpus, model=str(model), output=work / "out.h5", sites=args.sites, tokens=args.tokens, progress=False
        )
    finally:
        sys.setprofile(None)
    threading_note = "(the writer and collate threads are not traced)"
    stack: list[str] = []
    transitions = []  # (from, to, kind)
    for event, module in events:
        if event == "call":
            if stack and stack[-1] != module:
                transitions.append((stack[-1], module, "call"))
            stack.append(module)
        elif stack:
            stack.pop()
            if stack and stack[-1] != module:
                transitions.append((module, stack[-1], "return"))
    modules = sorted({module for _, module in events})
    # Up: a call into a module that (at module level) imports the caller, or that the caller reaches only
    # through a function-level import (an import deferred to dodge a cycle).
    up = [
        (a, b)
        for a, b, kind in transitions
        if kind == "call" and (a in closure.get(b, set()) or b not in closure.get(a, set()))
    ]
    orchestrator = args.orchestrator or "featx.extraction.run.orchestrate"
    returns = sum(1 for a, b, _ in transitions if b == orchestrator and a != orchestrator)
    full_closure = {name: reachable(graph, name) for name in graph}
    cycles = [(a, b) for a in graph for b in graph[a] if a in full_closure.get(b, set())]
    print(f"modules entered: {len(modules)} {threading_note}")
    for module in modules:
        print(f"  {module}")
    print(f"calls up the import graph: {len(up)}")
    for (a, b), count in sorted({pair: up.count(pair) for pair in up}.items()):
        print(f"  {a} -> {b} x{count}")
    print(f"returns to the orchestrator ({orchestrator}): {returns}")
    print(f"import edges inside a cycle: {len(cycles)}")
    for a, b in sorted(cycles):
        print(f"  {a} -> {b}")


if __name__ == "__main__":
    main()

"""One way for a package to expose names that load on first use: ``lazy_exports``.

A package's ``__init__`` lists each public name with the module that defines it (relative to the package)
and gets the module-level ``__getattr__`` and ``__dir__`` that import that module when the name is first
read (PEP 562), so that importing a package never pays for torch or matplotlib until they are needed::

    __getattr__, __dir__ = lazy_exports(__name__, {"ExtractionPlan": "plan", "extract": "run"})

A home may also name a submodule itself (``{"schema": "schema"}`` with the key equal to the module's
name): the attribute is then that module. ``"module:name"`` gives the face its own name for a name of the
module (``{"format_probe": "text.probe:format_table"}``), where two inner modules use the same name for
different things.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str], eager: Mapping[str, Any] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``homes`` maps each lazy name to its home module,
    relative to ``package``; ``eager`` holds the names already defined in the package (for ``__dir__``)."""
    known = dict(homes)

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook of PEP 562
        home = known.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        home, _, inner = home.partition(":")
        module = import_module(f"{package}.{home}")
        if inner:
            return getattr(module, inner)
        return module if home.rsplit(".", 1)[-1] == name else getattr(module, name)

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*known, *(eager or {})})

    return __getattr__, __dir__


__all__ = ["lazy_exports"]

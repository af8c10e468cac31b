"""The test paths of a pytest command line, ordered folder by folder (``tests/conftest.py``'s ``pytest_configure``).

pytest 9.1.0 and 9.1.1 bind a conftest's fixtures to the first ``Dir`` node collected for its folder. Arguments
that leave a folder and come back to it (``tests/report/text tests/test_options.py tests/report/test_x.py``)
make pytest collect a second ``Dir`` node of that folder (``tests/report``), and the tests under the second one
miss the folder's conftest fixtures: ``fixture 'real_runs' not found``, while each path passes alone (pytest issues
#14964, #14971, #14997, #15071; 9.0 and before bound fixtures by node id). Keeping every folder's paths together
collects each folder once.
"""

from __future__ import annotations

from pathlib import Path


def by_folder(args: list[str], root: Path) -> list[str]:
    """``args`` (paths relative to ``root`` or absolute, each perhaps with ``::`` node ids) with every folder's paths
    together; otherwise as given: folders in the order of their first path, and the paths of one file (or one folder)
    in their order (a stable sort)."""
    parts = [Path(root, arg.split("::", 1)[0]).resolve().parts for arg in args]
    first: dict[tuple[str, ...], int] = {}
    for index, path in enumerate(parts):
        for depth in range(1, len(path) + 1):
            first.setdefault(path[:depth], index)
    order = sorted(range(len(args)), key=lambda i: [first[parts[i][:depth]] for depth in range(1, len(parts[i]) + 1)])
    return [args[i] for i in order]


__all__ = ["by_folder"]

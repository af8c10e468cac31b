"""Print the options that make ``uv pip install`` read the same package sources as this machine's pip.

    python scripts/uv_options.py          # uv pip install $(python scripts/uv_options.py) ...
    python scripts/uv_options.py --env    # the same as UV_* variables, a NAME=VALUE a line (as sh quotes)

The Makefile installs through uv (a pip-compatible installer from PyPI): it resolves the same versions as pip
in a tenth of the CPU time, and it does not byte-compile every installed file (torch alone has thousands).
uv does not read pip's configuration, so this reads it (``pip config list``: the config files and the
``PIP_*`` variables) and prints the matching uv options: ``--find-links`` and ``--extra-index-url`` for each
value, ``--index-url`` for the one pip uses, ``--constraint`` for each constraints file, and
``--index-strategy unsafe-best-match``, which is pip's way of picking the best version over all the sources
(uv's default takes a package from the first index that has it).

``--env`` prints them as the environment variables uv reads instead, for the uv that ``python -m build
--installer uv`` runs inside its isolated build environments, where no option can be passed (``make dist`` and
tests/test_dist.py): without them, that uv would take setuptools from its default index only.
"""

from __future__ import annotations

import ast
import shlex
import subprocess
import sys

MANY = {"find-links": "--find-links", "extra-index-url": "--extra-index-url", "constraint": "--constraint"}
STRATEGY = ("--index-strategy", "unsafe-best-match")


def uv_options(config: str) -> list[str]:
    """The uv options for the lines ``NAME='VALUE'`` of ``pip config list`` (NAME as ``global.find-links``,
    ``:env:.find-links``, ``install.constraint``); a later index-url wins, as in pip."""
    options: list[tuple[str, str]] = []
    index_url = None
    for line in config.splitlines():
        key, equals, value = line.partition("=")
        if not equals:
            continue
        name = key.rsplit(".", 1)[-1]
        values = str(ast.literal_eval(value)).split()
        if name == "index-url" and values:
            index_url = values[-1]
        for item in values if name in MANY else ():
            if (MANY[name], item) not in options:
                options.append((MANY[name], item))
    if index_url is not None:
        options.insert(0, ("--index-url", index_url))
    return [word for pair in (*options, STRATEGY) for word in pair]


# uv's variable for each option, and how it splits a variable holding several values (its --help: "[env: ...]")
ENVIRONMENT = {
    "--index-url": ("UV_INDEX_URL", " "),
    "--find-links": ("UV_FIND_LINKS", ","),
    "--extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
    "--constraint": ("UV_CONSTRAINT", " "),
    "--index-strategy": ("UV_INDEX_STRATEGY", " "),
}


def uv_environment(options: list[str]) -> dict[str, str]:
    """``uv_options``' pairs as uv's environment variables, the values of a repeated option joined."""
    values: dict[str, list[str]] = {}
    for option, value in zip(options[::2], options[1::2], strict=True):
        values.setdefault(option, []).append(value)
    return {ENVIRONMENT[option][0]: ENVIRONMENT[option][1].join(given) for option, given in values.items()}


def main(argv: list[str]) -> int:
    config = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    options = uv_options(config.stdout)
    if argv == ["--env"]:
        print("\n".join(f"{name}={shlex.quote(value)}" for name, value in uv_environment(options).items()))
    else:
        print(shlex.join(options))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

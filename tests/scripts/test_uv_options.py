"""scripts/uv_options.py: uv gets the package sources pip is configured with, and picks versions as pip does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "uv_options.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("uv_options", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def uv_options(script):
    return script.uv_options


PIP_CONFIG = """:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
global.index-url='https://mirror.example/simple'
user.index-url='https://other.example/simple'
"""


def test_pips_sources_become_uv_options(uv_options):
    assert uv_options(PIP_CONFIG) == [
        "--index-url",
        "https://other.example/simple",
        "--find-links",
        "/opt/wheels",
        "--constraint",
        "/etc/xdg/pip/constraints.txt",
        "--extra-index-url",
        "file:///opt/pypi/simple",
        "--extra-index-url",
        "file:///opt/pypi-more/simple",
        "--index-strategy",
        "unsafe-best-match",
    ]


def test_without_configuration_uv_keeps_its_default_index_and_picks_like_pip(uv_options):
    assert uv_options("") == ["--index-strategy", "unsafe-best-match"]


def test_the_options_as_uv_environment_variables(script):
    assert script.uv_environment(script.uv_options(PIP_CONFIG + "user.find-links='/more/wheels'\n")) == {
        "UV_INDEX_URL": "https://other.example/simple",
        "UV_FIND_LINKS": "/opt/wheels,/more/wheels",  # uv splits this one at commas, the others at spaces
        "UV_CONSTRAINT": "/etc/xdg/pip/constraints.txt",
        "UV_EXTRA_INDEX_URL": "file:///opt/pypi/simple file:///opt/pypi-more/simple",
        "UV_INDEX_STRATEGY": "unsafe-best-match",
    }

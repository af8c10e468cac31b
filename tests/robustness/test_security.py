"""Security: safetensors only, no remote code unless asked, nothing unpickled, no executable content in
features files, and values from the CSV never become file paths."""

from __future__ import annotations

import ast
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest
from click.testing import CliRunner
from support.custom_code import CUSTOM_CODE

import featx
from featx.cli import main
from featx.errors import ModelError
from featx.extraction import ExtractConfig, extract

REPO = Path(featx.__file__).resolve().parent.parent
PACKAGE = Path(featx.__file__).resolve().parent


class _Payload:
    """Unpickling this writes a marker file: proof that something was unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('unpickled')",))


def test_pickle_next_to_safetensors_is_never_loaded(tiny_model, corpus_csv, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model, folder)
    marker = tmp_path / "UNPICKLED"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(marker)))
    summary = extract(ExtractConfig(corpus=corpus_csv, output=tmp_path / "out.h5", model=str(folder), progress=False))
    assert summary.rows == 12 and not marker.exists()


def test_pickle_only_model_is_refused_through_the_cli(tiny_model, corpus_csv, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model, folder)
    marker = tmp_path / "UNPICKLED"
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(marker)))
    result = CliRunner().invoke(
        main, ["extract", str(corpus_csv), "--model", str(folder), "-o", str(tmp_path / "o.h5")]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "only pickle-based weights (pytorch_model.bin)" in result.output
    assert "unpickling can run arbitrary code" in result.output and "safe_serialization=True" in result.output
    assert not marker.exists()


def _model_with_custom_code(tiny_model: Path, folder: Path, marker: Path, model_type: str) -> Path:
    shutil.copytree(tiny_model, folder)
    (folder / "custom_model.py").write_text(CUSTOM_CODE.format(marker=str(marker)))
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = model_type
    config["auto_map"] = {"AutoConfig": "custom_model.CustomConfig", "AutoModel": "custom_model.CustomModel"}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("model_type", ["featx-custom-bert", "bert"])
def test_custom_code_is_refused_without_trust_remote_code(tiny_model, corpus_csv, tmp_path, model_type):
    """Refused either way: an unknown type needs the code; a known one would silently run the wrong class."""
    marker = tmp_path / "CUSTOM_CODE_RAN"
    folder = _model_with_custom_code(tiny_model, tmp_path / "model", marker, model_type)
    result = CliRunner().invoke(
        main, ["extract", str(corpus_csv), "--model", str(folder), "-o", str(tmp_path / "o.h5")]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "ships its own Python code (custom_model.py" in result.output
    assert "pass --trust-remote-code only if you trust it" in result.output
    assert not marker.exists()
    with pytest.raises(ModelError, match="ships its own Python code"):
        featx.extract(ExtractConfig(corpus=corpus_csv, output=tmp_path / "o.h5", model=str(folder), progress=False))
    assert not marker.exists()


@pytest.mark.slow
def test_trust_remote_code_does_run_it(tiny_model, corpus_csv, tmp_path):
    """The positive control: the same folder's code runs once the user passes --trust-remote-code."""
    marker = tmp_path / "CUSTOM_CODE_RAN"
    folder = _model_with_custom_code(tiny_model, tmp_path / "model", marker, "featx-custom-bert")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_MODULES_CACHE": str(tmp_path / "modules"), "HF_HUB_OFFLINE": "1"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "featx",
            "extract",
            str(corpus_csv),
            "--model",
            str(folder),
            "-q",
            "-o",
            str(tmp_path / "o.h5"),
            "--trust-remote-code",
        ],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert marker.read_text() == "custom code ran"


# -- nothing is unpickled or evaluated ---------------------------------------------------------------

UNSAFE_MODULES = {"pickle", "cPickle", "dill", "cloudpickle", "shelve", "marshal", "_pickle"}
# joblib is allowed for Parallel (it pickles featx's own objects between its own workers within one run),
# never for joblib.load of a file.
UNSAFE_FROM_IMPORTS = {("joblib", "load")}
UNSAFE_CALLS = {
    ("torch", "load"),
    ("pickle", "load"),
    ("pickle", "loads"),
    ("joblib", "load"),
    ("pd", "read_pickle"),
    ("pandas", "read_pickle"),
    ("np", "load"),
    ("numpy", "load"),
}


def _unsafe_uses(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in UNSAFE_MODULES:
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and any(
            (node.module, alias.name) in UNSAFE_FROM_IMPORTS for alias in node.names
        ):
            found.append(f"{node.module}.load")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("eval", "exec", "read_pickle"):
                found.append(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                call = (func.value.id, func.attr)
                if call in UNSAFE_CALLS:
                    pickles = (
                        call[1] != "load"
                        or call[0] not in ("np", "numpy")
                        or any(keyword.arg == "allow_pickle" for keyword in node.keywords)
                    )
                    if pickles:
                        found.append(".".join(call))
    return found


def test_the_scanner_finds_unpickling():
    unsafe = "import pickle\nx = torch.load(p)\ny = np.load(p, allow_pickle=True)\neval('1')"
    assert sorted(_unsafe_uses(unsafe)) == ["eval", "np.load", "pickle", "torch.load"]
    assert _unsafe_uses("np.load(p)\nmodel.eval()\njson.loads(s)") == []
    assert _unsafe_uses("import joblib\nfrom joblib import Parallel\njoblib.cpu_count()") == []
    assert _unsafe_uses("from joblib import load\njoblib.load(p)") == ["joblib.load", "joblib.load"]


@pytest.mark.slow
def test_featx_never_unpickles_or_evaluates_anything():
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) >= 10
    offenders = {
        str(path.relative_to(PACKAGE)): uses
        for path in sources
        if (uses := _unsafe_uses(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


# -- features files: data only; CSV values never become paths -------------------------------------------


def test_features_file_is_plain_data_and_csv_values_never_become_paths(tiny_model, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    outside = tmp_path / "escaped.h5"
    evil = [str(outside), "../escaped.txt", "/etc/passwd", "..", "~/x.h5", "C:\\\\evil.h5"]
    corpus = work / "c.csv"
    import csv

    with open(corpus, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "id", "../../label", "/abs/label", "split"])
        for number, value in enumerate(evil):
            writer.writerow([f"the file {value}", value, value, value, "train" if number % 2 else value])
    before = set(tmp_path.rglob("*"))
    summary = extract(
        ExtractConfig(corpus=corpus, output=work / "out.h5", model=str(tiny_model), id_col="id", progress=False)
    )
    created = set(tmp_path.rglob("*")) - before
    assert {path.relative_to(work).as_posix() for path in created} == {"out.h5", ".featx", ".featx/last.json"}
    assert not outside.exists() and not (tmp_path / "escaped.txt").exists()
    with featx.open(summary.output) as features:
        assert features.ids == evil  # stored verbatim, as data
        assert features.label_columns == ["../../label", "/abs/label"]
        assert features.label_names("../../label") == sorted(evil)

    with h5py.File(summary.output, "r") as file:
        assert file.userblock_size == 0
        items = []
        file.visititems(lambda name, obj: items.append((name, obj)))
        for name, obj in items:
            link = file.get(name, getlink=True)
            assert isinstance(link, h5py.HardLink), f"{name} is a {type(link).__name__}"
            if isinstance(obj, h5py.Dataset):
                assert obj.dtype.kind in "iufb" or h5py.check_string_dtype(obj.dtype), (name, obj.dtype)
                assert obj.external is None and not obj.is_virtual, name
            for key, value in obj.attrs.items():
                assert isinstance(value, (str, bytes, int, float, bool)) or getattr(value, "dtype", None) is not None
                assert getattr(value, "dtype", None) is None or value.dtype.kind in "iufbSU", (name, key)
        for key, value in file.attrs.items():
            assert isinstance(value, (str, int, float, bool)) or value.dtype.kind in "iufbSU", key

"""The quick up-to-date check: the same request on the same inputs is answered without loading torch or
the model; anything else goes through the full check."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import featx
import featx.extraction.run.orchestrate
from featx.extraction.config import ExtractConfig
from featx.extraction.run.freshness import quick_up_to_date

REPO = Path(featx.__file__).resolve().parent.parent


@pytest.fixture
def model_copy(tiny_model, tmp_path):
    return Path(shutil.copytree(tiny_model, tmp_path / "model"))


@pytest.fixture
def written(model_copy, corpus_csv, tmp_path):
    config = ExtractConfig(
        corpus=corpus_csv, output=tmp_path / "out.h5", model=str(model_copy), progress=False, poolings="mean,cls"
    )
    assert featx.extract(config).status == "written"
    return config


def full_check_counter(monkeypatch) -> list:
    calls = []
    original = featx.extraction.run.orchestrate.extract

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(featx.extraction.run.orchestrate, "extract", counting)
    return calls


def test_the_same_request_is_answered_without_the_model(written, monkeypatch):
    calls = full_check_counter(monkeypatch)
    summary = featx.extract(written)
    assert summary.status == "up-to-date" and calls == []
    assert summary.rows == 12 and summary.poolings == ["mean", "cls"]
    assert "up to date" in summary.line()


@pytest.mark.parametrize("change", ["option", "corpus", "model file", "overwrite"])
def test_anything_else_goes_through_the_full_check(written, model_copy, corpus_csv, monkeypatch, change):
    if change == "option":
        written = ExtractConfig(**{**written.__dict__, "batch_size": 7})
    elif change == "corpus":
        corpus_csv.write_text(corpus_csv.read_text() + "one more row,pos,past,train\n")
    elif change == "model file":
        weights = next(model_copy.glob("*.safetensors"))
        stat = weights.stat()
        os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    else:
        written = ExtractConfig(**{**written.__dict__, "overwrite": True})
    assert quick_up_to_date(written) is None
    if change == "model file":  # same weights, so the full check finds the file current after loading
        calls = full_check_counter(monkeypatch)
        assert featx.extract(written).status == "up-to-date" and calls == [1]


def test_an_unfinished_or_foreign_file_is_not_current(written, tmp_path):
    import h5py

    with h5py.File(written.output, "r+") as file:
        del file.attrs["request_key"]  # a file from before the quick check
    assert quick_up_to_date(written) is None
    (tmp_path / "other.h5").write_bytes(b"not hdf5")
    assert quick_up_to_date(ExtractConfig(**{**written.__dict__, "output": tmp_path / "other.h5"})) is None


@pytest.mark.slow
def test_the_cli_answers_before_importing_torch(written):
    args = [
        "extract",
        str(written.corpus),
        "-o",
        str(written.output),
        "--model",
        written.model,
        "--pooling",
        "mean,cls",
        "-q",
    ]
    code = (
        "import sys; from featx.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "print('torch imported:', 'torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=written.output.parent,
    )
    assert "up to date" in result.stdout, result.stderr
    assert "torch imported: False" in result.stdout

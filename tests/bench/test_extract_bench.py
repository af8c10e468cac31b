"""bench/extract.py without the bench extra: a run that needs sentence-transformers, ONNX Runtime or OpenVINO
stops before any model loads, with one line naming what to install, instead of an ImportError's traceback."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import extract  # noqa: E402


def test_the_packages_each_method_needs(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert extract.missing_packages(["featx", "loop"], ["torch"]) == []
    assert extract.missing_packages(["st"], []) == ["sentence_transformers"]
    assert extract.missing_packages(["peers"], ["torch"]) == ["sentence_transformers"]
    assert extract.missing_packages(["peers"], ["onnx-fp32"]) == ["sentence_transformers", "onnx", "onnxruntime"]
    assert extract.missing_packages(["peers"], ["openvino-f32"]) == [
        "sentence_transformers",
        "onnx",
        "onnxruntime",
        "openvino",
    ]


def test_a_missing_package_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # none of the bench extra installed
    with pytest.raises(SystemExit) as stop:
        extract.main(["--methods", "featx,peers", "--peers", "openvino-f32"])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "needs sentence_transformers, onnx, onnxruntime, openvino, not installed here" in error
    assert "pip install -e '.[bench]'" in error

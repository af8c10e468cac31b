"""The native path's file checks (tests/extraction/fast/test_native*.py): one extraction with ``FEATX_NATIVE=1`` and one
with ``0``, whether the two files hold the same features, and what a fresh process imports to extract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

import featx
from support.tiny import SENTENCES, write_csv

ROOT = Path(__file__).resolve().parents[2]


def _datasets(path: Path) -> dict[str, np.ndarray]:
    found = {}
    with h5py.File(path, "r") as handle:
        handle.visititems(
            lambda name, item: found.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None
        )
    return found


def _attributes(path: Path) -> dict:
    """Root attributes but the time, the implementation and (in the options) the output's name."""
    with h5py.File(path, "r") as handle:
        attributes = {key: value for key, value in handle.attrs.items() if key not in ("created", "implementation")}
    attributes["options"] = {**json.loads(attributes["options"]), "output": None}
    return attributes


def same_file_contents(native: Path, plain: Path, bound: float) -> None:
    """Every dataset within ``bound`` (floats) or equal, and the same root attributes but time and implementation."""
    got, want = _datasets(native), _datasets(plain)
    assert sorted(got) == sorted(want) and len(got) > 5
    for name, value in want.items():
        if value.dtype.kind == "f":
            assert float(np.abs(got[name].astype(np.float64) - value).max(initial=0.0)) <= bound, name
        else:
            assert np.array_equal(got[name], value), name
    assert _attributes(native) == _attributes(plain)  # fingerprint, tokenizer, options ... all the same


def extract_both(corpus: Path, tmp_path: Path, monkeypatch, **options) -> tuple[Path, Path]:
    """``featx.extract`` with the native path on, then off (float32 store): the two files."""
    outputs = []
    for native in ("1", "0"):
        monkeypatch.setenv("FEATX_NATIVE", native)
        out = tmp_path / f"native-{native}.h5"
        featx.extract(corpus, output=out, progress=False, store_dtype="float32", **options)
        with featx.open(out) as features:
            assert features.attrs["implementation"] == ("native" if native == "1" else "transformers")
        outputs.append(out)
    return outputs[0], outputs[1]


def same_file_native_on_and_off(model: Path, tmp_path: Path, monkeypatch, pairs: bool = False) -> Path:
    """The tiny sentences (with token states), or pairs of them, extracted from ``model`` with the native path on
    and off: the same file (``same_file_contents``, 1e-5). Returns the native one."""
    if pairs:
        rows = [(a, b, "x") for (a, *_), (b, *_) in zip(SENTENCES, SENTENCES[3:] + SENTENCES[:3], strict=False)]
        corpus = write_csv(tmp_path / "pairs.csv", rows, header=("first", "second", "label"))
        options: dict = dict(text_col="first", text_pair_col="second")
    else:
        corpus, options = write_csv(tmp_path / "c.csv", SENTENCES), dict(tokens=True)
    native, plain = extract_both(corpus, tmp_path, monkeypatch, model=str(model), batch_size=4, **options)
    same_file_contents(native, plain, 1e-5)
    return native


# What a plain `featx extract` never needs: transformers (featx's own encoders and tokenizer), torch's compiler
# stack (sympy, torch._dynamo: about 1 s), and what other commands use (the study's and report's plotly and
# pandas, the probes' scikit-learn and scipy, the figures' matplotlib), each an import paid on every start.
NOT_FOR_EXTRACT = ("transformers", "sympy", "plotly", "pandas", "sklearn", "scipy", "matplotlib")


def imports_of_an_extraction(
    tmp_path: Path, model: Path | None = None, options: tuple[str, ...] = ()
) -> tuple[list[str], str]:
    """``featx extract`` of three rows through the command's own entry (``featx.cli.main``), in a fresh process
    (``FEATX_NATIVE`` unset; the default model unless ``model``; more ``options``): the modules of
    ``NOT_FOR_EXTRACT`` and torch._dynamo it imported, and the recorded implementation."""
    corpus, out = write_csv(tmp_path / "imports.csv", SENTENCES[:3]), tmp_path / "imports.h5"
    chosen = ([] if model is None else ["--model", str(model)]) + list(options)
    script = (
        "import sys\n"
        "from featx.cli import main\n"
        f"main(['extract', {str(corpus)!r}, '-o', {str(out)!r}, '-q', *{chosen!r}], standalone_mode=False)\n"
        f"print(sorted(name for name in sys.modules if name.split('.')[0] in {NOT_FOR_EXTRACT!r}\n"
        "             or name.startswith('torch._dynamo')))\n"
        f"import featx; print(featx.open({str(out)!r}).attrs['implementation'])\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "FEATX_NATIVE"}
    env["PYTHONPATH"] = os.pathsep.join(part for part in (str(ROOT), os.environ.get("PYTHONPATH")) if part)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    modules, implementation = result.stdout.strip().split("\n")[-2:]  # after the command's own "wrote ..." line
    return json.loads(modules.replace("'", '"')), implementation


def loaded_both_ways(folder: Path):
    """``load_model`` of ``folder`` natively and through transformers (float32, CPU), with every field featx
    reads of a loaded model the same: ``(native, plain)``."""
    from featx.extraction.model.loading import load_model

    native = load_model(str(folder), "cpu", "float32", native=True)
    plain = load_model(str(folder), "cpu", "float32", native=False)
    assert native.implementation == "native" and plain.implementation == "transformers"
    for field in ("weights_sha256", "n_layers", "hidden_size", "max_length", "part", "causal", "has_pooler"):
        assert getattr(native, field) == getattr(plain, field), field
    return native, plain

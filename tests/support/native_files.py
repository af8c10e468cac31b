"""The native path's file checks (tests/extraction/test_native.py, test_native_mpnet.py): one extraction with
``FEATX_NATIVE=1`` and one with ``0``, and whether the two files hold the same features."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

import featx


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

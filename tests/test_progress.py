"""featx's progress bars in a Jupyter kernel without ipywidgets: tqdm's text bar, and no "IProgress not found"
warning (``tqdm.auto`` warns so when it is imported there), whichever featx command draws them."""

from __future__ import annotations

import re
import sys
import types
import warnings
from pathlib import Path

import pytest

import featx

PACKAGE = Path(featx.__file__).resolve().parent


@pytest.fixture
def kernel_without_widgets(monkeypatch):
    """As in a Jupyter kernel (what ``tqdm.autonotebook`` looks for) without ipywidgets, with ``tqdm.auto`` not yet
    imported (it warns on its import)."""
    pytest.importorskip("IPython")
    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # ``import ipywidgets`` fails, as where it is missing
    for name in ("tqdm.auto", "tqdm.autonotebook", "tqdm.notebook"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_bar_in_a_kernel_without_ipywidgets_is_the_text_bar_and_says_nothing(kernel_without_widgets, tiny_model):
    """``featx.embed`` (the loop of extract, predict and ``Probe.predict``) draws its bar without the warning."""
    from tqdm.std import tqdm

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        featx.embed(["a b c"], model=str(tiny_model), progress=True)
    assert [str(w.message) for w in caught if "IProgress" in str(w.message)] == []
    from featx.progress import progress_bar

    assert type(progress_bar(total=1, disable=True)) is tqdm


def test_only_featx_progress_imports_tqdm_auto():
    """Every other module draws its bars through ``featx.progress`` (a text search: parsing every module is slower)."""
    imports = re.compile(r"^\s*(from|import) tqdm\.(auto|autonotebook|notebook)\b|^\s*from tqdm import .*\bauto", re.M)
    offenders = [
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if path != PACKAGE / "progress.py" and imports.search(path.read_text())
    ]
    assert offenders == []

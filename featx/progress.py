"""featx's progress bars: tqdm's widget bar in a Jupyter kernel that has ipywidgets, else its text bar.

``tqdm.auto`` is imported only where it would choose the widget: in a kernel without ipywidgets its import warns
"IProgress not found. Please update jupyter and ipywidgets" (and then draws the text bar anyway), a warning about a
package featx does not need, printed in every notebook that extracts, predicts or erases."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any


def _widgets() -> bool:
    """Whether ipywidgets can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("ipywidgets") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or one without a spec
        return False


def bar_class() -> Any:
    """``tqdm.auto.tqdm`` in a Jupyter kernel with ipywidgets (the widget bar), else ``tqdm.std.tqdm``."""
    if "ipykernel.zmqshell" in sys.modules and _widgets():
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


def progress_bar(**options: Any) -> Any:
    """A tqdm bar of ``options`` (``total``, ``unit``, ``disable``, ``desc``...), of ``bar_class``."""
    return bar_class()(**options)


__all__ = ["bar_class", "progress_bar"]

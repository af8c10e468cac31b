"""The terminal tables of every command: probe (classification, regression, words), compare, erase, neurons,
sweep, and ``run`` (the printout of a probing run), all written with the one set of formatters in ``format``."""

from ...lazy import lazy_exports

__all__ = ["compare", "erase", "format", "neurons", "probe", "regression", "run", "sweep", "words"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

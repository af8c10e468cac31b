"""The terminal tables of every command: probe (classification, regression, words), compare, erase, neurons,
sweep, all written with the one set of formatters in ``format``."""

__all__ = ["compare", "erase", "format", "neurons", "probe", "regression", "sweep", "words"]

"""Analyses beyond one probe per layer: concept erasure, neuron rankings, Pareto sweeps, per-example
explanations, MDL, learning curves and layer summaries (scalar mix)."""

# The modules are the API (``erase``, ``neurons``, ``sweep`` are commands; the rest serve ``featx.probe``);
# each is imported where it is needed, so importing the package costs nothing.
from ...lazy import lazy_exports

__all__ = [
    "curve_baselines",
    "curves",
    "erase",
    "erase_config",
    "erase_paths",
    "erasure",
    "explain",
    "explain_baseline",
    "explain_regression",
    "mdl",
    "neuron_selection",
    "neurons",
    "scalar_mix",
    "sweep",
    "target",
    "word_curves",
]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

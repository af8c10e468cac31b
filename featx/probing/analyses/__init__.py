"""Analyses beyond one probe per layer: concept erasure, neuron rankings, Pareto sweeps, per-example
explanations, MDL, learning curves and layer summaries (scalar mix)."""

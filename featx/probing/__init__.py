"""Probing classifiers on stored features: ``probe(...)`` -> ``ProbeResult`` (see ``api``)."""

from .api import ProbeResult, probe
from .config import CLASSIFIERS, ProbeConfig
from .results import load_results, results_paths

__all__ = ["CLASSIFIERS", "ProbeConfig", "ProbeResult", "load_results", "probe", "results_paths"]

"""The solvers behind every probe: featx's softmax regression (numpy, and its torch twin for GPUs), ridge,
the scikit-learn and torch classifiers, and where logistic probes are solved (``devices``)."""

# The modules are the API: each is imported where it is needed (``softmax_torch`` and the torch heads of
# ``classifiers`` pull in torch, which a CPU run of logreg probes never pays for).
from ...lazy import lazy_exports

__all__ = ["classifiers", "devices", "ridge", "softmax", "softmax_problem", "softmax_torch"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

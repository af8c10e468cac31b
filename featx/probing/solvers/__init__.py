"""The solvers behind every probe: featx's softmax regression (numpy, and its torch twin for GPUs), ridge,
the scikit-learn and torch classifiers, and where logistic probes are solved (``devices``)."""

# The modules are the API: each is imported where it is needed (``softmax_torch`` and the torch heads of
# ``classifiers`` pull in torch, which a CPU run of logreg probes never pays for).
__all__ = ["classifiers", "devices", "ridge", "softmax", "softmax_problem", "softmax_torch"]

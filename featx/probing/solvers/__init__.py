"""The solvers behind every probe: featx's softmax regression (numpy, and its torch twin for GPUs), ridge,
the scikit-learn and torch classifiers, and where logistic probes are solved (``devices``)."""

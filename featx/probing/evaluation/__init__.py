"""How probes are evaluated: outer splits and the inner C search (``core``), classification and regression
metrics with their intervals, and the paired tests between layers (``significance``)."""

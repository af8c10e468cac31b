"""``featx extract --dry-run``: what an extraction will cost, before it runs.

``estimation``      the estimate from a short calibration on the real model
``from_config``     the estimate of a model too large to load, from ``config.json`` alone
``model_budget``    the model's side of that estimate: weights, one batch's activations
``summary``         ``Estimate`` and the sizes both estimates share
``windows``         ``--long window``: the windows and passes the run plans, and their timed cost
"""

from ...lazy import lazy_exports

__all__ = ["estimation", "from_config", "model_budget", "summary", "windows"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

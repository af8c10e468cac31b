"""The model: loading it safely, checking a folder before trusting it, and what it costs.

``loading``         an encoder and its tokenizer, safetensors only, no remote code unless asked
``checks``          checks of a model folder (untrusted input) before and while a network is built
``files``           where a model's files are, without importing torch
``size``            parameters, weight bytes and FLOPs per token from ``config.json`` alone
``fingerprints``    the sha256 of weight and tokenizer files, remembered by the files' identity
``devices``         ``--device`` and ``--dtype`` resolved for torch
"""

from ...lazy import lazy_exports

__all__ = ["checks", "devices", "files", "fingerprints", "loading", "size"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

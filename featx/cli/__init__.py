"""The ``featx`` command line: thin wrappers over the library API, one module per stage.

``app`` holds the group (``main``), the entry point ``featx.cli:run`` (``main``, then the process ends
at once: ``featx.exiting``), safe printing and the error handling; ``extract`` (extract, merge), ``probe``
(probe, labels add, explain), ``analyses`` (erase, neurons), ``deploy`` (fit, predict), ``directions``,
``intervene``, ``lens`` (lens), ``report`` (plot, compare, similarity, report) and ``study`` (study run,
status, report) add their commands to it when imported.
Each command parses its flags, builds the library's config, calls it and echoes what it returns.
"""

from . import analyses, deploy, directions, extract, intervene, lens, probe, report, study
from .app import echo, main, printable, run

__all__ = [
    "analyses", "deploy", "directions", "echo", "extract", "intervene", "lens", "main", "printable", "probe",
    "report", "run", "study",
]  # fmt: skip

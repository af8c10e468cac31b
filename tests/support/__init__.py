"""Plain helpers and constants of the test suite (no fixtures: those live in the ``conftest.py`` files).

- ``tiny``: the tiny vocabulary, sentences, CSV writer and random BERT every test builds on;
- ``families``: a tiny random model per supported family; ``parity``: their comparison with transformers;
- ``helpers``: reference features from plain transformers, an interrupted writer, array differences;
- ``probe_data``, ``planted``, ``planted_columns``, ``planted_words``, ``blobs``: features with planted signal;
- ``results``: synthetic probe results; ``browser``: headless Chromium for the report;
- ``faults``, ``shards``, ``store_files``: real extraction processes, sharded runs and small store files.
"""

__all__ = [
    "blobs",
    "browser",
    "faults",
    "families",
    "helpers",
    "parity",
    "planted",
    "planted_columns",
    "planted_words",
    "probe_data",
    "results",
    "shards",
    "store_files",
    "tiny",
]

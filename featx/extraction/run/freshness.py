"""Is a features file already what ``featx extract`` would write? A quick answer, without torch.

An up-to-date run used to import torch, load the model and hash its weights (5-6 s) only to find
that the file stands. A finished file now also records a *request key*: the featx version, the
corpus file's sha256, every extraction option as given, and the model folder's files by name, size
and modification time. The same key means the same request on the same inputs, so the file stands
and nothing else is loaded. Anything else (another option, a touched model file, a hub id, a machine
where ``--device auto`` could pick a GPU) falls through to the full check in ``orchestrate.py``, which
loads the model and compares the content fingerprint.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..._version import __version__
from ...options import recorded
from ...safe_files import loads_json
from ..checks import output_path
from ..config import ExtractConfig
from ..model.files import local_model_folder
from ..summary import ExtractSummary, summary_of

POOLER_KEY = "pooler"  # the fingerprint's key of a pooler run with its activation apart (ALBERT's), since 30 Nov 2026
NOT_PART_OF_THE_REQUEST = ("output", "overwrite", "progress", "commit_seconds")
NEW_OPTION_DEFAULTS = {
    "long": "truncate",
    "stride": None,
    "device_map": None,
    "sep": None,
    "missing_labels": "empty",
    "word_format": None,
    "columns": None,
    "word_pooling": "first,last,mean",
    "more_corpora": (),
    "text_pair_col": None,
    "pair_mode": None,
    "template": None,
    "chat_template": False,
    "system": None,
    "pool_at": None,
    "skip_missing_marker": False,
    "contrast": None,
    "intervene": None,
    "intervene_seed": 0,
}


def _auto_may_find_an_accelerator(config: ExtractConfig) -> bool:
    if str(config.device or "auto").lower() != "auto":
        return False
    return sys.platform == "darwin" or any(Path("/dev").glob("nvidia[0-9]*"))


def model_folder_files(folder: Path) -> list[tuple[str, int, int]]:
    """A local model folder's files as a request is keyed on them: ``(relative name, size, mtime_ns)``, sorted
    (a changed or replaced file changes the key without its bytes being read)."""
    return sorted(
        (str(path.relative_to(folder)), stat.st_size, stat.st_mtime_ns)
        for path in folder.rglob("*")
        if path.is_file()
        for stat in [path.stat()]
    )


def request_key(config: ExtractConfig, corpus_sha256: str) -> str | None:
    """The request key of ``config`` on a corpus with this sha256, or None where none can be made."""
    folder = local_model_folder(config.model)
    if folder is None or _auto_may_find_an_accelerator(config):
        return None
    model_files = model_folder_files(folder)
    options = {
        name: str(value) if isinstance(value, Path) else value
        for name, value in recorded(config).items()
        if name not in NOT_PART_OF_THE_REQUEST
    }
    for name, default in NEW_OPTION_DEFAULTS.items():  # so files from before these options keep their key
        if options.get(name) == default:
            options.pop(name)
    options["corpus"] = str(Path(config.corpus).resolve())
    if config.intervene:  # the edits' files by content: a refitted eraser or bundle is another request
        from ..edits.spec import parse_interventions

        options["intervene"] = [edit.record() for edit in parse_interventions(config.intervene, config.intervene_seed)]
    if config.more_corpora:
        options["more_corpora"] = [str(Path(path).resolve()) for path in config.more_corpora]
    return json.dumps(
        {
            "featx": __version__,
            "corpus_sha256": corpus_sha256,
            "model_folder": str(folder),
            "model_files": model_files,
            "options": options,
        },
        sort_keys=True,
    )


def pooler_before_its_tanh(attrs: dict[str, Any]) -> bool:
    """Whether a file's root attributes are those of an ALBERT file with the pooler pooling written before featx
    ran ALBERT's pooler with its tanh (30 Nov 2026): its fingerprint lacks the ``POOLER_KEY`` every such file has
    had since (``resolve._pooler_fingerprint``). Within 0.2.0 its request key is this very request's, so it is not
    up to date however the key reads: the full check refuses it naming the pooler (``--overwrite`` replaces it),
    and a study extracts its cell again."""
    from ...store import schema

    if attrs.get(schema.MODEL_TYPE) != "albert":  # the one family whose pooler keeps its activation apart
        return False
    try:
        recorded = loads_json(str(attrs.get(schema.FINGERPRINT, "")))
    except ValueError:  # not featx's fingerprint: the full check says so
        return False
    poolings = recorded.get("poolings") if isinstance(recorded, dict) else None
    return isinstance(poolings, list) and "pooler" in poolings and POOLER_KEY not in recorded


def quick_up_to_date(config: ExtractConfig) -> ExtractSummary | None:
    """The up-to-date summary when the existing output was made by this very request, else None."""
    started = time.perf_counter()
    if (
        config.overwrite
        or config.shards is not None
        or config.shard_index is not None
        or "WORLD_SIZE" in os.environ
        or config.corpus is None
    ):
        return None
    output = output_path(config)
    corpus = Path(config.corpus)
    from ...io import rereadable

    if not output.is_file() or not rereadable(corpus):  # a pipe is read once, by the full run only
        return None
    from ...store import finished_request

    finished = finished_request(output)
    if finished is None:
        return None
    recorded, skipped, attrs = finished
    from ..inputs.digests import file_sha256

    if recorded != request_key(config, file_sha256(corpus)) or pooler_before_its_tanh(attrs):
        return None
    from ...state import remember

    remember("features", output)
    return summary_of(output, "up-to-date", time.perf_counter() - started, skipped)

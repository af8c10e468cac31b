"""A study's unit of work, ``Task``: one plain function call, named by its dotted path, with JSON-able
arguments, so that any engine can run it anywhere featx is installed and the study's folder is seen (a worker
process, a Ray task), and the fingerprint that says whether its outputs are still those of this request.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

EXTRACT, PROBE = "extract", "probe"


@dataclass(frozen=True)
class Task:
    """One cell's work: ``function`` (``"featx.study.tasks:probe_cell"``) called with ``args`` (JSON-able), in
    study ``output``; done when its state says so with this ``fingerprint`` and every one of ``outputs`` is a
    file. ``after``: the keys of the tasks it needs done first (a probe: its extraction). ``corpus_sha256``: an
    extraction's corpus by content, as its fingerprint took it, kept in its state (``records.record_state``), so
    that a failed cell whose corpus file is gone since is still that cell (``plan.gone_corpus``)."""

    key: str  # "extract/minilm/sst2", "probe/minilm/sst2/label"
    kind: str  # EXTRACT or PROBE
    function: str
    args: dict[str, Any] = field(hash=False)
    output: str = ""  # the study's folder, where the states live
    outputs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    fingerprint: str = ""
    corpus_sha256: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The task as JSON-able data (what an engine ships to a worker)."""
        return {
            "key": self.key,
            "kind": self.kind,
            "function": self.function,
            "args": self.args,
            "output": self.output,
            "outputs": list(self.outputs),
            "after": list(self.after),
            "fingerprint": self.fingerprint,
            "corpus_sha256": self.corpus_sha256,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        return cls(**{**data, "outputs": tuple(data["outputs"]), "after": tuple(data["after"])})


def fingerprint(function: str, args: dict[str, Any], *depends: str) -> str:
    """What makes a cell's outputs what they are: its function, arguments and the fingerprints it builds on."""
    text = json.dumps([function, args, list(depends)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()

"""Splitting one extraction into shards: row assignment, shard files, the manifest.

A sharded extraction of ``OUT.h5`` writes one ordinary features file per shard
beside it, ``OUT.shard-03-of-08.h5`` (resumable on its own, like any extraction),
plus a manifest ``OUT.shards.json`` naming every shard and what they must share
(model, options and corpus). ``featx merge OUT.h5`` (``featx.extraction.shards.merge``) checks the
shards against the manifest and copies them into ``OUT.h5`` in corpus order.

Under ``torchrun`` every process extracts one shard (``distributed.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ... import store
from ...errors import InputError, StoreError
from ...io import LabelColumn
from ...json_fields import shown
from ...options import on_command_line
from ...safe_files import atomic_write_text, loads_json, read_small_text
from ..inputs.corpus import Corpus

# Bump when the assignment changes: shards made by different rules must never be merged.
ASSIGNMENT = "round-robin-by-char-length-v1"
MANIFEST_FORMAT = "featx-shards"


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` of ``count`` (0-based)."""

    index: int
    count: int

    @classmethod
    def from_options(cls, shards: int | None, shard_index: int | None) -> ShardSpec | None:
        """The shard chosen by ``--shards``/``--shard-index``; None when the run is not sharded."""
        if shards is None and shard_index is None:
            return None
        if shards is None or shard_index is None:
            raise InputError(
                "--shards and --shard-index go together",
                "give both, e.g. --shards 4 --shard-index 0, or neither under torchrun",
            )
        if shards < 1:
            raise InputError(f"--shards {shards} must be at least 1")
        if not 0 <= shard_index < shards:
            raise InputError(
                f"--shard-index {shard_index} is out of range for --shards {shards}",
                f"shard indices run from 0 to {shards - 1}",
            )
        return cls(int(shard_index), int(shards))

    @property
    def label(self) -> str:
        width = max(2, len(str(self.count)))
        return f"shard-{self.index:0{width}d}-of-{self.count:0{width}d}"

    def path(self, output: Path) -> Path:
        """``OUT.h5`` -> ``OUT.shard-00-of-04.h5`` beside it."""
        return output.with_name(f"{output.stem}.{self.label}{output.suffix}")

    def fingerprint(self, base_fingerprint: str) -> str:
        """The shard file's fingerprint: the run's, plus which rows this shard holds."""
        return json.dumps(
            {"run": base_fingerprint, "shard_index": self.index, "shard_count": self.count, "assignment": ASSIGNMENT},
            sort_keys=True,
        )


def assign_rows(texts: list[str], count: int, index: int) -> np.ndarray:
    """Corpus rows of shard ``index`` of ``count``, ascending.

    Rows are sorted by text length (characters, longest first; ties keep corpus order)
    and dealt round-robin, so every shard gets the same mix of long and short texts
    and the shards take about equal time. Character length stands in for token count:
    it needs no tokenizer, so the assignment is decided before tokenisation and is
    the same whatever the model.
    """
    lengths = np.fromiter((len(text) for text in texts), dtype=np.int64, count=len(texts))
    order = np.argsort(-lengths, kind="stable")
    return np.sort(order[index::count])


def select_rows(corpus: Corpus, shard: ShardSpec) -> tuple[Corpus, np.ndarray]:
    """The part of ``corpus`` that ``shard`` extracts, and its corpus row indices.

    Label codes and names stay those of the whole corpus, so shards agree on them;
    ``sha256`` stays the whole file's, which is what shards are checked against.
    """
    if shard.count > len(corpus):
        raise InputError(
            f"{shard.count} shards for a corpus of {len(corpus)} rows would leave shards empty",
            f"use at most {len(corpus)} shards (processes)",
        )
    rows = assign_rows(corpus.texts, shard.count, shard.index)

    def pick(values):
        return [values[row] for row in rows]

    labels = {
        name: LabelColumn(name=name, codes=column.codes[rows], names=list(column.names))
        for name, column in corpus.labels.items()
    }
    subset = replace(
        corpus,
        texts=pick(corpus.texts),
        ids=pick(corpus.ids),
        labels=labels,
        split=pick(corpus.split) if corpus.split is not None else None,
        columns={name: pick(values) for name, values in corpus.columns.items()},  # a --template's other columns
    )
    return subset, rows


def shard_attributes(shard: ShardSpec, base_fingerprint: str, corpus_rows: int) -> dict:
    """The root attributes that mark a file as shard ``shard`` of a run (checked by ``featx merge``)."""
    return {
        store.schema.SHARD_INDEX: shard.index,
        store.schema.SHARD_COUNT: shard.count,
        store.schema.SHARD_ASSIGNMENT: ASSIGNMENT,
        store.schema.CORPUS_N_ROWS: int(corpus_rows),
        store.schema.BASE_FINGERPRINT: base_fingerprint,
    }


# -- the manifest ----------------------------------------------------------------------------------


def manifest_path(output: Path) -> Path:
    return output.with_name(f"{output.stem}.shards.json")


def make_manifest(
    output: Path, count: int, corpus: Corpus, corpus_rows: int, model_sha256: str, base_fingerprint: str
) -> dict:
    return {
        "format": MANIFEST_FORMAT,
        "version": 1,
        "output": output.name,
        "shard_count": count,
        "shards": [ShardSpec(index, count).path(output).name for index in range(count)],
        "assignment": ASSIGNMENT,
        "corpus_sha256": corpus.sha256,
        "corpus_n_rows": int(corpus_rows),
        "model_sha256": model_sha256,
        "fingerprint": base_fingerprint,
    }


def read_manifest(output: Path) -> dict | None:
    path = manifest_path(output)
    try:
        manifest = loads_json(read_small_text(path, MAX_MANIFEST_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise StoreError(
            f"the shard manifest {path} cannot be read ({err})",
            f"re-run the sharded {_EXTRACT_AGAIN[on_command_line()]} to rewrite it",
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise StoreError(f"{path} is not a featx shard manifest")
    _check_manifest(path, manifest)
    return manifest


MAX_MANIFEST_BYTES = 1 << 20
_EXTRACT_AGAIN = {True: "featx extract with --overwrite", False: "featx.extract with overwrite=True"}  # CLI, Python
MAX_SHARDS = 100_000


def _check_manifest(path: Path, manifest: dict) -> None:
    """Every field a merge uses has the type and range featx writes; the output is a plain file name."""

    def bad(what: str) -> StoreError:
        return StoreError(
            f"the shard manifest {path} is not valid: {what}",
            f"re-run the sharded {_EXTRACT_AGAIN[on_command_line()]} to rewrite it",
        )

    name = manifest.get("output")
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise bad(f"'output' must be the merged file's name beside the manifest, not {shown(name)}")
    for key, limit in (("shard_count", MAX_SHARDS), ("corpus_n_rows", 1 << 40)):
        value = manifest.get(key)
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not (key == "corpus_n_rows" or value >= 1)
            or not 0 <= value <= limit
        ):
            raise bad(f"'{key}' is {shown(value)}")
    for key in ("model_sha256", "corpus_sha256", "fingerprint"):
        if not isinstance(manifest.get(key), str):
            raise bad(f"'{key}' is missing or not a string")


def write_manifest(output: Path, manifest: dict, overwrite: bool) -> None:
    """Write the manifest, or check that the one there describes the same sharded run.

    Every shard writes the same bytes, so concurrent shards may race harmlessly.
    """
    path = manifest_path(output)
    existing = read_manifest(output) if path.exists() else None
    if existing == manifest:
        return
    if existing is not None and not overwrite:
        what = (
            "a different number of shards"
            if existing.get("shard_count") != manifest["shard_count"]
            else "a different corpus, model or options"
        )
        raise StoreError(
            f"{path} describes a sharded extraction of {output.name} with {what}",
            "run the shards with the original options, or pass --overwrite to start a new sharded run",
        )
    atomic_write_text(path, json.dumps(manifest, indent=2) + "\n")

"""``featx merge``: check the shards of a sharded extraction against their manifest and copy them into
one features file in corpus order.

The merged file is a plain schema-1 features file with the same layout as a single-process run,
written through ``FeatureWriter``: it is built as ``OUT.h5.partial``, committed block by block (an
interrupted merge resumes), and renamed into place when every row is in. The HDF5 side of the copy is
the store's (``featx.store.shards``); this module decides what may be merged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ... import store
from ...checks import path_like
from ...errors import IncompleteError, InputError, Interrupted, StoreError, signal_of
from ...options import Check, Options, Placeholder, joined, keywords_of, on_command_line, option, spoken_value
from ...safe_files import check_overwrite, is_hdf5_file
from ...state import remember
from ...store import (
    FeatureFile,
    FeatureWriter,
    OutputLock,
    ShardFile,
    copy_shards,
    create_merged,
    extract_again,
    open_shard,
    partial_path,
    shard_attrs,
    shard_row_index,
)
from ..tokens.batching import plan_blocks
from .sharding import ShardSpec, manifest_path, read_manifest


@dataclass(frozen=True)
class MergeConfig(Options):
    """Every option of ``featx merge`` (and ``featx.extraction.merge``), declared once: the command line's
    flags are made from these fields."""

    output: str | Path
    keep_shards: bool = option(False, flag="--keep-shards", help="Keep the shard files and manifest after merging.")
    overwrite: bool = option(False, flag="--overwrite", help="Replace an existing OUTPUT made from other shards.")
    progress: bool = option(False, flag=("--quiet", "-q"), negate=True, help="No progress bar.")

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like(
            "output", what="featx merge takes the sharded run's output path", hint="give it as a path, e.g. OUT.h5"
        ),
    )


@dataclass
class MergeSummary:
    output: Path
    status: str  # "merged" or "up-to-date"
    shards: int
    rows: int
    seconds: float
    file_bytes: int
    removed: list[Path] = field(default_factory=list)

    def line(self) -> str:
        if self.status == "up-to-date":
            return f"up to date: {self.output} already holds the merged {self.shards} shards ({self.rows} rows)"
        removed = "; removed the shard files" if self.removed else ""
        return (
            f"merged {self.shards} shards into {self.output}: {self.rows} rows, "
            f"{self.file_bytes / 1e6:.1f} MB, {self.seconds:.1f} s{removed}"
        )


def _open_shards(output: Path, manifest: dict) -> list[ShardFile]:
    """Open every shard named in the manifest and check it belongs to this run."""
    count = int(manifest["shard_count"])
    files: list[ShardFile] = []
    try:
        for index in range(count):
            path = ShardSpec(index, count).path(output)
            try:
                file = open_shard(path)  # raises a clear error for a missing, partial or foreign file
            except IncompleteError as error:
                raise IncompleteError(
                    f"shard {index} of {count} is not finished: {error.message}",
                    "run (or relaunch) that shard's featx extract to finish it, then merge again",
                ) from None
            except StoreError:
                if not path.exists():
                    raise StoreError(
                        f"shard {index} of {count} is missing: {path} does not exist",
                        f"run {_sharded(count, index)}, or copy it here if it was written on another machine, "
                        "then merge again",
                    ) from None
                raise
            files.append(file)
            _check_shard(path, shard_attrs(file), manifest, index)
    except BaseException:
        for file in files:
            file.close()
        raise
    return files


def _sharded(count: object, index: object, lead: str = " ...") -> str:
    """The extraction of one shard as its caller runs it: ``featx extract ... --shards 4 --shard-index 1`` on the
    command line (``lead``: between the command and its flags), ``featx.extract(..., shards=4, shard_index=1)``
    from Python."""
    given = joined(
        spoken_value(None, "shards", count, "--shards"), spoken_value(None, "shard_index", index, "--shard-index")
    )
    return f"featx extract{lead} {given}" if on_command_line() else f"featx.extract(..., {given})"


def _check_shard(path: Path, attrs, manifest: dict, index: int) -> None:
    attr = attrs.get
    if attr(store.schema.SHARD_INDEX) != index or attr(store.schema.SHARD_COUNT) != manifest["shard_count"]:
        raise StoreError(
            f"{path} is not shard {index} of {manifest['shard_count']} "
            f"(its attributes say shard {attr(store.schema.SHARD_INDEX)} of {attr(store.schema.SHARD_COUNT)})",
            f"do not rename shard files; re-run that shard with {extract_again()}",
        )
    manifest_name = manifest_path(path.with_name(manifest["output"])).name
    checks = (  # shard attribute, manifest key, what differs
        (store.schema.MODEL_SHA256, "model_sha256", "a different model (weights)"),
        (store.schema.CORPUS_SHA256, "corpus_sha256", "a different corpus file"),
        (store.schema.BASE_FINGERPRINT, "fingerprint", "different extraction options"),
        (store.schema.SHARD_ASSIGNMENT, "assignment", "a different row assignment (another featx version)"),
        (store.schema.CORPUS_N_ROWS, "corpus_n_rows", "a different number of corpus rows"),
    )
    for attr_name, key, what in checks:
        if attr(attr_name) != manifest[key]:
            raise StoreError(
                f"shard {index} ({path.name}) was made from {what} than the sharded run in {manifest_name}",
                "re-run that shard with the same corpus, model and options as the rest "
                f"({extract_again(elided=True)}), then merge again",
            )


def _check_rows(files: list[ShardFile], n_rows: int) -> list[np.ndarray]:
    """Every corpus row in exactly one shard; each shard's rows ascending."""
    indices = []
    for file in files:
        index = shard_row_index(file)
        if index is None:
            raise StoreError(
                f"{file.filename} does not say which corpus rows it holds",
                f"re-run that shard with {extract_again()}",
            )
        if len(index) and (index.min() < 0 or index.max() >= n_rows):
            raise StoreError(f"{file.filename} holds row {int(index.max())}, but the corpus has {n_rows} rows")
        if len(index) > 1 and not (np.diff(index) > 0).all():
            raise StoreError(
                f"{file.filename} lists its corpus rows out of order or twice",
                f"re-run that shard with {extract_again()}",
            )
        indices.append(index)
    counts = np.bincount(np.concatenate(indices), minlength=n_rows) if n_rows else np.zeros(0, np.int64)
    duplicated = np.flatnonzero(counts > 1)
    if len(duplicated):
        row = int(duplicated[0])
        holders = [Path(files[k].filename).name for k, index in enumerate(indices) if row in set(index.tolist())]
        raise StoreError(
            f"{len(duplicated)} corpus row(s) are in more than one shard, e.g. row {row} in {' and '.join(holders)}",
            f"the shards come from different sharded runs; re-run the odd ones with {extract_again()}",
        )
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        shown = ", ".join(str(int(row)) for row in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise StoreError(
            f"{len(missing)} corpus row(s) are in no shard: {shown}",
            f"the shards come from different sharded runs; re-run them with {extract_again()}",
        )
    return indices


def _manifest(output: Path, overwrite: bool) -> dict | None:
    """The shards' manifest, once ``--overwrite`` is known to replace only a features file."""
    if overwrite:
        check_overwrite(output, "features file", is_hdf5_file)
    return read_manifest(output)


@keywords_of(MergeConfig)  # from Python, a message names the keyword given (output=''), the CLI the flag
def merge(config: MergeConfig | str | Path, **options: Any) -> MergeSummary:
    """Check the shards of ``output`` against their manifest and write ``output`` in corpus order
    (``merge("OUT.h5", keep_shards=True)``, or a ``MergeConfig``)."""
    started = time.perf_counter()
    config = MergeConfig.build(config, **options)
    output, keep_shards, overwrite, progress = config.output, config.keep_shards, config.overwrite, config.progress
    output = Path(output)
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise InputError(f"{output} should end in .h5", "give the output of the sharded extraction, e.g. OUT.h5")
    manifest = _manifest(output, overwrite)
    if manifest is None:
        hint = f"{output} exists already (merged before?)" if output.exists() else None
        hint = hint or f"run {_sharded(Placeholder('N'), Placeholder('I'), ' with')} (or under torchrun) first"
        raise StoreError(f"no shards to merge: {manifest_path(output)} does not exist", hint)
    count = int(manifest["shard_count"])
    with OutputLock(output):
        if output.exists() and not overwrite:
            with FeatureFile(output, allow_partial=True) as existing:
                same = existing.complete and existing.fingerprint == manifest["fingerprint"]
                rows = existing.n_rows
            if same:
                return MergeSummary(
                    output, "up-to-date", count, rows, time.perf_counter() - started, output.stat().st_size
                )
            raise StoreError(
                f"{output} already exists and was made from a different corpus, model or options",
                "pass --overwrite to replace it with the merged shards",
            )
        files = _open_shards(output, manifest)
        try:
            n_rows = int(manifest["corpus_n_rows"])
            indices = _check_rows(files, n_rows)
            writer = _open_writer(output, files, indices, n_rows, manifest, overwrite)
            try:
                copy_shards(writer, files, indices, plan_blocks, progress)
                final = writer.finish()
            except KeyboardInterrupt as interrupt:
                raise Interrupted(
                    f"merge interrupted: {writer.rows_done} of {n_rows} rows are in {partial_path(output)}",
                    "run featx merge again to resume it",
                    signal_of(interrupt)[0],
                ) from None
            finally:
                writer.close()
        finally:
            for file in files:
                file.close()
        _verify_merged(final, n_rows, manifest["fingerprint"])  # nothing is deleted unless the result is whole
        removed = []
        if not keep_shards:
            for index in range(count):
                path = ShardSpec(index, count).path(output)
                path.unlink()
                removed.append(path)
            manifest_path(output).unlink()
    remember("features", final)
    return MergeSummary(final, "merged", count, n_rows, time.perf_counter() - started, final.stat().st_size, removed)


def _verify_merged(final: Path, n_rows: int, fingerprint: str) -> None:
    """The merged file reopens as a valid, complete file of every row with the run's fingerprint."""
    with FeatureFile(final) as merged:
        whole = merged.complete and merged.n_rows == n_rows and merged.fingerprint == fingerprint
    if not whole:
        raise StoreError(
            f"the merged file {final} did not verify (rows or fingerprint differ); the shards are kept",
            "run featx merge --overwrite again",
        )


def _open_writer(output: Path, files, indices, n_rows: int, manifest: dict, overwrite: bool) -> FeatureWriter:
    """Resume an interrupted merge of the same shards, or start the merged file."""
    partial = partial_path(output)
    if partial.exists():
        writer = FeatureWriter.resume(output)
        if writer.matches(manifest["fingerprint"], merge=True):
            return writer
        writer.close()
        if not overwrite:
            raise StoreError(
                f"{partial} holds an unfinished extraction that is not this merge",
                "finish or delete it, or pass --overwrite to replace it",
            )
    return create_merged(output, files, indices, n_rows, manifest["fingerprint"])

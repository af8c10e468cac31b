"""``featx merge``: check the shards of a sharded extraction and copy them into one features file.

The merged file is a plain schema-1 features file with the same layout (datasets,
chunking, attributes) as a single-process run, written through ``FeatureWriter``:
it is built as ``OUT.h5.partial``, committed block by block (an interrupted merge
resumes), and renamed into place when every row is in.

Why a copy and not an HDF5 virtual dataset: shards hold rows dealt round-robin
in length order, so the rows of one shard are scattered over the corpus and a
virtual dataset would need about one mapping per row (slow to open and read);
and a virtual dataset whose source file is missing silently reads fill values.
A copy is self-contained and can be moved alone. It costs one sequential pass
over the shards; by default the shards are deleted afterwards (``keep_shards``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from .batching import plan_windows
from .corpus import Corpus, LabelColumn
from .errors import IncompleteError, InputError, Interrupted, StoreError
from .sharding import ROW_INDEX, SHARD_ATTRS, ShardSpec, manifest_path, read_manifest
from .state import remember
from .store import FeatureFile, FeatureWriter, partial_path, read_strings, site_pooled_path, site_tokens_path
from .tokenize import TokenizedCorpus

BLOCK_BYTES = 256 << 20  # host memory for one block of merged rows


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
        return (f"merged {self.shards} shards into {self.output}: {self.rows} rows, "
                f"{self.file_bytes / 1e6:.1f} MB, {self.seconds:.1f} s{removed}")


def _open_shards(output: Path, manifest: dict) -> list[h5py.File]:
    """Open every shard named in the manifest and check it belongs to this run."""
    count = int(manifest["shard_count"])
    files: list[h5py.File] = []
    try:
        for index in range(count):
            path = ShardSpec(index, count).path(output)
            try:
                with FeatureFile(path):  # raises a clear error for a missing, partial or foreign file
                    pass
            except IncompleteError as error:
                raise IncompleteError(
                    f"shard {index} of {count} is not finished: {error.message}",
                    "run (or relaunch) that shard's featx extract to finish it, then merge again",
                ) from None
            except StoreError:
                if not path.exists():
                    raise StoreError(
                        f"shard {index} of {count} is missing: {path} does not exist",
                        f"run featx extract ... --shards {count} --shard-index {index}, or copy it here if it was "
                        "written on another machine, then merge again",
                    ) from None
                raise
            file = h5py.File(path, "r", locking=False)
            files.append(file)
            _check_shard(path, file.attrs, manifest, index)
    except BaseException:
        for file in files:
            file.close()
        raise
    return files


def _check_shard(path: Path, attrs, manifest: dict, index: int) -> None:
    def attr(name):
        value = attrs.get(name)
        return value.decode() if isinstance(value, bytes) else value

    if attr("shard_index") != index or attr("shard_count") != manifest["shard_count"]:
        raise StoreError(f"{path} is not shard {index} of {manifest['shard_count']} "
                         f"(its attributes say shard {attr('shard_index')} of {attr('shard_count')})",
                         "do not rename shard files; re-run that shard with featx extract --overwrite")
    manifest_name = manifest_path(path.with_name(manifest["output"])).name
    checks = (  # shard attribute, manifest key, what differs
        ("model_sha256", "model_sha256", "a different model (weights)"),
        ("corpus_sha256", "corpus_sha256", "a different corpus file"),
        ("base_fingerprint", "fingerprint", "different extraction options"),
        ("shard_assignment", "assignment", "a different row assignment (another featx version)"),
        ("corpus_n_rows", "corpus_n_rows", "a different number of corpus rows"),
    )
    for attr_name, key, what in checks:
        if attr(attr_name) != manifest[key]:
            raise StoreError(
                f"shard {index} ({path.name}) was made from {what} than the sharded run in {manifest_name}",
                "re-run that shard with the same corpus, model and options as the rest "
                "(featx extract ... --overwrite), then merge again",
            )


def _check_rows(files: list[h5py.File], n_rows: int) -> list[np.ndarray]:
    """Every corpus row in exactly one shard; each shard's rows ascending."""
    indices = []
    for position, file in enumerate(files):
        index = file[ROW_INDEX][()] if ROW_INDEX in file else None
        if index is None or len(index) != int(file.attrs["n_rows"]):
            raise StoreError(f"{file.filename} does not say which corpus rows it holds ({ROW_INDEX})",
                             "re-run that shard with featx extract --overwrite")
        if len(index) and (index.min() < 0 or index.max() >= n_rows):
            raise StoreError(f"{file.filename} holds row {int(index.max())}, but the corpus has {n_rows} rows")
        if len(index) > 1 and not (np.diff(index) > 0).all():
            raise StoreError(f"{file.filename} lists its corpus rows out of order or twice",
                             "re-run that shard with featx extract --overwrite")
        indices.append(index)
    counts = np.bincount(np.concatenate(indices), minlength=n_rows) if n_rows else np.zeros(0, np.int64)
    duplicated = np.flatnonzero(counts > 1)
    if len(duplicated):
        row = int(duplicated[0])
        holders = [Path(files[k].filename).name for k, index in enumerate(indices) if row in set(index.tolist())]
        raise StoreError(
            f"{len(duplicated)} corpus row(s) are in more than one shard, e.g. row {row} in {' and '.join(holders)}",
            "the shards come from different sharded runs; re-run the odd ones with featx extract --overwrite",
        )
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        shown = ", ".join(str(int(row)) for row in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise StoreError(f"{len(missing)} corpus row(s) are in no shard: {shown}",
                         "the shards come from different sharded runs; re-run them with featx extract --overwrite")
    return indices


def _gather(files, indices, n_rows: int, name: str, dtype=None) -> np.ndarray:
    """A per-row dataset of every shard, put back in corpus order."""
    first = files[0][name]
    out = np.empty(n_rows, dtype=dtype or first.dtype)
    for file, index in zip(files, indices):
        out[index] = file[name][()]
    return out


def _gather_strings(files, indices, n_rows: int, name: str) -> list[str]:
    """A per-row string dataset of every shard (escapes undone), put back in corpus order."""
    out = np.empty(n_rows, dtype=object)
    for file, index in zip(files, indices):
        out[index] = read_strings(file[name])
    return list(out)


def _corpus_order_rows(files, indices, n_rows: int) -> tuple[Corpus, TokenizedCorpus, dict]:
    """Row metadata of the whole corpus, shaped like what ``FeatureWriter.create`` takes."""
    first = files[0]
    texts = _gather_strings(files, indices, n_rows, "rows/text")
    ids = _gather_strings(files, indices, n_rows, "rows/id")
    split = _gather_strings(files, indices, n_rows, "rows/split") if "split" in first["rows"] else None
    labels = {}
    for key in first["labels"]:
        dataset = first["labels"][key]
        column = str(dataset.attrs["column"])
        names = json.loads(dataset.attrs["names"])
        for file in files[1:]:
            if key not in file["labels"] or json.loads(file["labels"][key].attrs["names"]) != names:
                raise StoreError(f"{file.filename} has other label classes in column '{column}' than the first shard")
        labels[column] = LabelColumn(name=column, codes=_gather(files, indices, n_rows, f"labels/{key}"), names=names)
    n_tokens = _gather(files, indices, n_rows, "rows/n_tokens")
    n_kept = _gather(files, indices, n_rows, "rows/n_kept").astype(np.int64)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(n_kept, out=offsets[1:])
    input_ids = word_ids = np.zeros(0, dtype=np.int32)
    if "tokens" in first:
        input_ids = _gather_tokens(files, indices, offsets, "tokens/input_ids")
        word_ids = _gather_tokens(files, indices, offsets, "tokens/word_ids")
    attrs = {key: value for key, value in first.attrs.items()}
    corpus = Corpus(path=Path(str(attrs.get("corpus_path", ""))), texts=texts, ids=ids,
                    text_col=str(attrs.get("text_col", "text")), id_col=str(attrs.get("id_col", "")) or None,
                    labels=labels, split=split, sha256=str(attrs["corpus_sha256"]))
    tokenized = TokenizedCorpus(input_ids=input_ids, offsets=offsets, full_lengths=n_tokens.astype(np.int32),
                                word_ids=word_ids if "tokens" in first else None)
    return corpus, tokenized, attrs


def _token_positions(shard_offsets: np.ndarray, rows: np.ndarray, out_offsets: np.ndarray,
                     out_base: int) -> tuple[np.ndarray, np.ndarray]:
    """Destination positions (relative to ``out_base``) of the tokens of shard rows, in shard order."""
    lengths = np.diff(shard_offsets)
    starts = out_offsets[rows] - out_base
    within = np.arange(int(lengths.sum())) - np.repeat(shard_offsets[:-1] - shard_offsets[0], lengths)
    return np.repeat(starts, lengths) + within, lengths


def _gather_tokens(files, indices, out_offsets, name) -> np.ndarray:
    out = np.empty(int(out_offsets[-1]), dtype=np.int32)
    for file, index in zip(files, indices):
        offsets = file["tokens/offsets"][()]
        destination, _ = _token_positions(offsets, index, out_offsets, 0)
        out[destination] = file[name][()]
    return out


def _merged_attrs(shard_attrs: dict, files, manifest: dict) -> dict:
    attrs = {key: value for key, value in shard_attrs.items() if key not in SHARD_ATTRS}
    for key in ("format", "schema_version", "layers", "poolings", "n_rows", "hidden_size", "store_dtype",
                "tokens", "complete", "sites"):
        attrs.pop(key, None)  # FeatureWriter.create sets these itself
    options = json.loads(attrs.get("options", "{}"))
    options.pop("shard_index", None)
    attrs["options"] = json.dumps(options)
    attrs["fingerprint"] = manifest["fingerprint"]
    attrs["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    attrs["merged_from"] = json.dumps([{"file": Path(file.filename).name, "rows": int(file.attrs["n_rows"]),
                                        "device": str(file.attrs.get("device", ""))} for file in files])
    return attrs


def _copy_features(writer: FeatureWriter, files, indices, tokenized: TokenizedCorpus, progress: bool) -> None:
    from tqdm.auto import tqdm

    out = writer.file
    n_rows = int(out.attrs["n_rows"])
    poolings = json.loads(out.attrs["poolings"])
    with_tokens = bool(out.attrs["tokens"])
    sites = json.loads(out.attrs["sites"]) if "sites" in out.attrs else {}
    site_rows = [site_pooled_path(site, name) for site, spec in sites.items() for name in spec["poolings"]]
    site_tokens = [site_tokens_path(site) for site in sites] if with_tokens else []
    row_bytes = sum(out["pooled"][name].dtype.itemsize * int(np.prod(out["pooled"][name].shape[1:]))
                    for name in poolings)
    row_bytes += sum(out[path].dtype.itemsize * int(np.prod(out[path].shape[1:])) for path in site_rows)
    token_bytes = sum(out[path].dtype.itemsize * int(np.prod(out[path].shape[1:]))
                      for path in ["tokens/states"] + site_tokens) if with_tokens else 0
    rows_per_block = int(max(1, BLOCK_BYTES // max(1, row_bytes)))
    blocks = plan_windows(n_rows, rows_per_block, tokenized.lengths if with_tokens else None,
                          BLOCK_BYTES / token_bytes if with_tokens else None)
    shard_offsets = [file["tokens/offsets"][()] for file in files] if with_tokens else None
    start_row = writer.rows_done
    with tqdm(total=n_rows, initial=start_row, unit="rows", disable=not progress, desc="merge") as bar:
        for start, stop in blocks:
            if stop <= start_row:
                continue
            pooled = {name: np.empty((stop - start,) + out["pooled"][name].shape[1:], out["pooled"][name].dtype)
                      for name in poolings}
            token_base = int(tokenized.offsets[start])
            states = None
            if with_tokens:
                states = np.empty((int(tokenized.offsets[stop]) - token_base,) + out["tokens/states"].shape[1:],
                                  out["tokens/states"].dtype)
            site_values = {path: np.empty((stop - start,) + out[path].shape[1:], out[path].dtype) for path in site_rows}
            site_values.update({path: np.empty((int(tokenized.offsets[stop]) - token_base,) + out[path].shape[1:],
                                               out[path].dtype) for path in site_tokens})
            for k, (file, index) in enumerate(zip(files, indices)):
                # A shard's rows are ascending, so those falling in [start, stop) are one contiguous slice.
                lo, hi = np.searchsorted(index, [start, stop])
                if lo == hi:
                    continue
                for name in poolings:
                    pooled[name][index[lo:hi] - start] = file["pooled"][name][lo:hi]
                for path in site_rows:
                    site_values[path][index[lo:hi] - start] = file[path][lo:hi]
                if with_tokens:
                    offsets = shard_offsets[k][lo : hi + 1]
                    destination, _ = _token_positions(offsets, index[lo:hi], tokenized.offsets, token_base)
                    states[destination] = file["tokens/states"][int(offsets[0]) : int(offsets[-1])]
                    for path in site_tokens:
                        site_values[path][destination] = file[path][int(offsets[0]) : int(offsets[-1])]
            writer.write_window(start, stop, pooled, states, site_values)
            writer.commit(stop)
            bar.update(stop - start)


def merge(output: str | Path, keep_shards: bool = False, overwrite: bool = False,
          progress: bool = False) -> MergeSummary:
    """Check the shards of ``output`` against their manifest and write ``output`` in corpus order."""
    from .extractor import OutputLock

    started = time.perf_counter()
    output = Path(output)
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise InputError(f"{output} should end in .h5", "give the output of the sharded extraction, e.g. OUT.h5")
    manifest = read_manifest(output)
    if manifest is None:
        hint = (f"{output} exists already (merged before?)" if output.exists()
                else "run featx extract with --shards N --shard-index I (or under torchrun) first")
        raise StoreError(f"no shards to merge: {manifest_path(output)} does not exist", hint)
    count = int(manifest["shard_count"])
    with OutputLock(output):
        if output.exists() and not overwrite:
            with FeatureFile(output, allow_partial=True) as existing:
                same = existing.complete and existing.attrs.get("fingerprint") == manifest["fingerprint"]
                rows = existing.n_rows
            if same:
                return MergeSummary(output, "up-to-date", count, rows, time.perf_counter() - started,
                                    output.stat().st_size)
            raise StoreError(f"{output} already exists and was made from a different corpus, model or options",
                             "pass --overwrite to replace it with the merged shards")
        files = _open_shards(output, manifest)
        try:
            n_rows = int(manifest["corpus_n_rows"])
            indices = _check_rows(files, n_rows)
            writer = _open_writer(output, files, indices, n_rows, manifest, overwrite)
            try:
                _copy_features(writer, files, indices, writer_tokenized(writer, n_rows), progress)
                final = writer.finish()
            except KeyboardInterrupt:
                raise Interrupted(f"merge interrupted: {writer.rows_done} of {n_rows} rows are in "
                                  f"{partial_path(output)}", "run featx merge again to resume it") from None
            finally:
                writer.close()
        finally:
            for file in files:
                file.close()
        removed = []
        if not keep_shards:
            for index in range(count):
                path = ShardSpec(index, count).path(output)
                path.unlink()
                removed.append(path)
            manifest_path(output).unlink()
    remember("features", final)
    return MergeSummary(final, "merged", count, n_rows, time.perf_counter() - started, final.stat().st_size, removed)


def writer_tokenized(writer: FeatureWriter, n_rows: int) -> TokenizedCorpus:
    """Token offsets of the merged file (from its row metadata, already in corpus order)."""
    n_kept = writer.file["rows/n_kept"][()].astype(np.int64)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(n_kept, out=offsets[1:])
    return TokenizedCorpus(input_ids=np.zeros(0, np.int32), offsets=offsets,
                           full_lengths=writer.file["rows/n_tokens"][()], word_ids=None)


def _open_writer(output: Path, files, indices, n_rows: int, manifest: dict, overwrite: bool) -> FeatureWriter:
    """Resume an interrupted merge of the same shards, or start the merged file."""
    partial = partial_path(output)
    if partial.exists():
        writer = FeatureWriter.resume(output)
        resumable = ("merged_from" in writer.attrs and writer.attrs.get("fingerprint") == manifest["fingerprint"])
        if resumable:
            return writer
        writer.close()
        if not overwrite:
            raise StoreError(f"{partial} holds an unfinished extraction that is not this merge",
                             "finish or delete it, or pass --overwrite to replace it")
    corpus, tokenized, shard_attrs = _corpus_order_rows(files, indices, n_rows)
    first = files[0]
    layers = json.loads(first.attrs["layers"])
    poolings = json.loads(first.attrs["poolings"])
    store_dtype = np.dtype(str(first.attrs["store_dtype"]))
    attrs = _merged_attrs(shard_attrs, files, manifest)
    sites = json.loads(first.attrs["sites"]) if "sites" in first.attrs else None
    return FeatureWriter.create(output, attrs, corpus, tokenized, layers, poolings, int(first.attrs["hidden_size"]),
                                store_dtype, bool(first.attrs["tokens"]), sites)

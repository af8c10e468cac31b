"""``extract``: decides how an extraction runs (single process, one shard, or a torchrun rank) and runs it.

The single-process path, in order: validate the output (before anything is loaded), read the corpus,
take the output lock, load the model, resolve the ``ExtractionPlan``, answer at once if the file is
already what the plan would write, tokenise, open (or resume) the writer, run the batch loop.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch

from ... import store
from ...errors import FeatxError, InputError, Interrupted, ModelError, StoreError, signal_of
from ...io import rereadable, source_name
from ...options import Placeholder, on_command_line, spoken, spoken_value
from ...safe_files import check_overwrite, is_hdf5_file, loads_json, output_hint
from ...state import remember
from ...store import FeatureFile, FeatureWriter, OutputLock, partial_path, resumable, shard_rows_match
from ..checks import output_path
from ..config import ExtractConfig, make_config
from ..forward.runner import Runner
from ..inputs.corpus import Corpus
from ..inputs.word_corpus import read_input
from ..model.loading import LoadedModel, load_configured
from ..plan import ExtractionPlan
from ..shards.distributed import LaunchEnv
from ..shards.sharding import ShardSpec, make_manifest, select_rows, shard_attributes, write_manifest
from ..summary import ExtractSummary, summary_of
from ..tokens.tokenize import TokenizedCorpus, tokenize_texts
from ..tokens.word_tokens import tokenize_input
from . import loop
from .freshness import POOLER_KEY
from .resolve import provenance, resolve_plan


def extract(config: ExtractConfig | None = None, **options) -> ExtractSummary:
    """Run an extraction (``featx.extract("corpus.csv", model=..., ...)`` or with an ``ExtractConfig``)."""
    config = make_config(config, **options)
    launch = LaunchEnv.detect()
    if launch is not None and config.shards is None and config.shard_index is None:
        from ..shards.distributed import extract_distributed

        return extract_distributed(config, launch, extract_one)  # this rank's shard, then rank 0 merges
    return extract_one(config)


def check_output_dir(output: Path) -> None:
    """The folder of ``output`` exists and takes a file; else one line whose hint names the option as the caller
    does (``-o OUT.h5``, ``output=OUT.h5``)."""
    directory, elsewhere = output.parent, spoken_value(None, "output", Placeholder("OUT.h5"), "-o")
    if not directory.exists():
        raise InputError(
            f"output directory {directory} does not exist",
            f"create it first, or choose another path with {spoken(None, 'output', '-o')}",
        )
    if not directory.is_dir():
        raise InputError(f"output directory {directory} is not a directory", f"choose another path with {elsewhere}")
    # Try it: os.access says "writable" to root even on read-only mounts.
    try:
        with tempfile.TemporaryFile(dir=directory, prefix=".featx-write-test-"):
            pass
    except OSError as err:
        raise InputError(
            f"output directory {directory} is not writable ({err.strerror or err})",
            f"choose a writable location with {elsewhere}",
        ) from None


def extract_one(config: ExtractConfig) -> ExtractSummary:
    """One process's extraction: the whole corpus, or shard ``config.shard_index`` of ``config.shards``."""
    started = time.perf_counter()
    output = output_path(config)
    check_output_dir(output)
    if config.overwrite:  # only a features file is ever replaced
        check_overwrite(output, "features file", is_hdf5_file)
    else:
        refuse_unusable_output(output)
    corpus = read_input(config)  # a table of texts, or word inputs (word_corpus.py)
    shard = ShardSpec.from_options(config.shards, config.shard_index)
    corpus_rows, shard_rows = len(corpus), None
    if shard is not None:  # from here on, `corpus` is this shard's rows
        corpus, shard_rows = select_rows(corpus, shard)
    with OutputLock(shard.path(output) if shard else output):
        load_started = time.perf_counter()
        loaded = load_configured(config)
        plan = resolve_plan(config, corpus.sha256, loaded, shard)
        if shard is not None:
            merged = _merged_already(config, plan, shard, corpus, corpus_rows, loaded, started)
            if merged is not None:
                return merged
        if plan.output.exists() and not config.overwrite:
            check_existing(plan.output, plan.fingerprint)
            remember("features", plan.output)
            summary = summary_of(plan.output, "up-to-date", time.perf_counter() - started, len(corpus.skipped_rows))
            summary.notes[:0] = corpus.notes + corpus.label_notes
            _note_unrereadable(config, summary)
            return summary
        timings = {"load_seconds": time.perf_counter() - load_started}
        tokenize_started = time.perf_counter()
        # Plain texts through this module's tokenize_texts: the fault tests interrupt it by that name.
        tokenized = tokenize_input(loaded, corpus, plan, texts_tokenizer=tokenize_texts)
        timings["tokenize_seconds"] = time.perf_counter() - tokenize_started
        writer = open_writer(plan, corpus, tokenized, loaded, shard_rows, corpus_rows)
        resumed_from = writer.rows_done
        forward_started = time.perf_counter()
        final, resumed_inside = _run(plan, writer, tokenized, loaded, len(corpus))
        timings["forward_seconds"] = time.perf_counter() - forward_started
    if shard is None:
        remember("features", final)
    summary = summary_of(
        final, "resumed" if resumed_from else "written", time.perf_counter() - started, len(corpus.skipped_rows)
    )
    summary.resumed_from, summary.resumed_inside = resumed_from, resumed_inside
    if resumed_inside and summary.status == "written":
        summary.status = "resumed"
    if shard is not None and LaunchEnv.detect() is None:
        summary.notes.append(
            f"shard {shard.index} of {shard.count} done; when all are done: featx merge {plan.merged_output}"
        )
    for name, seconds in timings.items():
        setattr(summary, name, seconds)
    summary.notes += edit_notes(plan, loaded) + max_tokens_notes(plan)
    summary.notes[:0] = corpus.notes + corpus.label_notes
    _note_unrereadable(config, summary)
    return summary


def max_tokens_notes(plan: ExtractionPlan) -> list[str]:
    """``--max-tokens`` below one row of the longest length, which a batch must hold: the budget was raised."""
    asked = plan.config.max_tokens
    if not asked or int(asked) >= plan.max_tokens:
        return []
    return [
        f"--max-tokens {asked} is below one row of the longest length ({plan.max_tokens} tokens): batches hold up "
        f"to {plan.max_tokens} padded tokens (a shorter --max-length lowers it)"
    ]


def edit_notes(plan: ExtractionPlan, loaded: LoadedModel) -> list[str]:
    """``--intervene``: what was edited, and that the model ran through transformers (the native fast path is
    not hooked, so it is not selected with edits)."""
    if not plan.edits:
        return []
    done = ", ".join(f"{edit.intervention.kind} at {edit.intervention.where}" for edit in plan.edits)
    return [
        f"edited inside the forward pass: {done}; every layer above recomputed (attribute 'intervention'); "
        f"the model ran through {loaded.implementation} (the native fast path is not used with --intervene)"
    ]


def _merged_already(
    config: ExtractConfig,
    plan: ExtractionPlan,
    shard: ShardSpec,
    corpus: Corpus,
    corpus_rows: int,
    loaded: LoadedModel,
    started: float,
) -> ExtractSummary | None:
    """A shard of a sharded run: the summary when the shards are merged already (nothing to do), else
    None once the run's manifest is written (or checked)."""
    merged = plan.merged_output
    assert merged is not None  # every shard's plan names its merged file
    if merged.exists() and not config.overwrite:
        check_existing(merged, plan.base_fingerprint)
        return summary_of(merged, "up-to-date", time.perf_counter() - started, len(corpus.skipped_rows))
    write_manifest(
        merged,
        make_manifest(merged, shard.count, corpus, corpus_rows, loaded.weights_sha256, plan.base_fingerprint),
        config.overwrite,
    )
    return None


def _note_unrereadable(config: ExtractConfig, summary: ExtractSummary) -> None:
    """Say how a corpus that cannot be read again (stdin, a pipe) was recognised, so nobody assumes more."""
    if not rereadable(config.corpus):
        summary.notes.append(
            f"corpus {source_name(config.corpus)} cannot be read again: this run's resume and "
            "up-to-date decisions compared the sha256 of the bytes it read, and only those"
        )


def _run(
    plan: ExtractionPlan, writer: FeatureWriter, tokenized: TokenizedCorpus, loaded: LoadedModel, n_rows: int
) -> tuple[Path, int]:
    """The batch loop into ``writer``, then the finished file and the rows an earlier run had committed
    inside the first commit block; a clear error (rows kept) if it stops."""
    output = plan.output
    try:
        inside = loop.run(
            plan, writer, tokenized, Runner(loaded, plan), plan.pad_id, pin_memory=loaded.device.type == "cuda"
        )
        return writer.finish(), inside
    except KeyboardInterrupt as interrupt:
        done = writer.rows_done
        inside = loop.rows_committed_inside(plan, tokenized, done, writer.batches_done(done))
        writer.close()
        signum, name = signal_of(interrupt)
        more = f" ({inside} of them committed inside the next commit block)" if inside else ""
        raise Interrupted(
            f"interrupted ({name}): {done + inside} of {n_rows} rows are saved in {partial_path(output)}{more}",
            "run the same featx extract command again to resume where it stopped"
            if on_command_line()
            else "call featx.extract again with the same options to resume where it stopped",
            signum,
        ) from None
    except OSError as err:
        done = writer.rows_done
        writer.close()
        raise StoreError(
            f"writing {partial_path(output)} failed ({err.strerror or err}); {done} of {n_rows} rows are saved",
            "free disk space (or fix the problem) and run the same command again to resume",
        ) from None
    except torch.OutOfMemoryError:
        done = writer.rows_done
        writer.close()
        smaller = max(plan.max_length, plan.max_tokens // 4)
        raise ModelError(
            f"{loaded.device} ran out of memory on a batch of at most {plan.max_tokens:,} padded tokens and "
            f"{plan.batch_size:,} rows; {done} of {n_rows} rows are saved in {partial_path(output)}",
            f"run again with smaller batches, e.g. {spoken_value(plan.config, 'max_tokens', smaller)} "
            f"{spoken_value(plan.config, 'overwrite', True)} (the saved rows resume only with the same options, "
            "which would run out again); "
            + ("featx extract --dry-run" if on_command_line() else "featx.estimate(...)")
            + " estimates the peak",
        ) from None
    except BaseException:
        writer.close()
        raise


NOT_REPLACEABLE_HINT = (
    "choose another output with -o (--overwrite replaces only a features file featx wrote, never a folder, a link "
    "or another file)"
)
REPLACEABLE_HINT = "pass --overwrite to replace it, or choose another output with -o"


# What a fingerprint's keys stand for, where the key is not the option's name; hashes are named, never shown.
FINGERPRINT_NAMES = {
    "corpus_sha256": "the corpus file's content",
    "model_sha256": "the model's weights",
    POOLER_KEY: "the pooler pooling (ALBERT's without its tanh before 30 Nov 2026)",
}
SHOWN_VALUE_CHARS = 80


def fingerprint_difference(recorded, wanted: str) -> str:
    """``": NAME (the file's A, this command's B), ..."``: what differs between a file's fingerprint and the one
    this command would write (both JSON objects; nested ones compared key by key), or ``""`` where either cannot
    be read. A sha256 or a long value is named without its values."""
    try:
        old, new = loads_json(recorded), loads_json(wanted)
    except (TypeError, ValueError):
        return ""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return ""

    def differences(a: dict, b: dict, prefix: str = "") -> list[str]:
        found = []
        for key in sorted(set(a) | set(b), key=lambda name: (name not in FINGERPRINT_NAMES, name)):
            left, right = a.get(key), b.get(key)
            if left == right:
                continue
            if isinstance(left, dict) and isinstance(right, dict):
                found += differences(left, right, f"{prefix}{key}.")
                continue
            name = FINGERPRINT_NAMES.get(key, prefix + key)
            shown = [repr(value) if value is not None else "none" for value in (left, right)]
            if key.endswith("sha256") or max(map(len, shown)) > SHOWN_VALUE_CHARS:
                found.append(name)
            else:
                found.append(f"{name} (the file's {shown[0]}, this command's {shown[1]})")
        return found

    found = differences(old, new)
    return ": " + ", ".join(found) if found else ""


def _existing_hint(output: Path) -> str:
    """The way out for an existing output: --overwrite only where it would replace it (``check_overwrite``)."""
    return output_hint(REPLACEABLE_HINT if not output.is_symlink() and is_hdf5_file(output) else NOT_REPLACEABLE_HINT)


def refuse_unusable_output(output: Path) -> None:
    """Without --overwrite, an existing output that no features file can be (a folder, a file that is not HDF5,
    a FIFO) is refused before the corpus is read or the model loaded; --overwrite would refuse it too."""
    if not output.exists() or is_hdf5_file(output.resolve()):
        return
    what = "it is a folder" if output.is_dir() else f"{output} is not an HDF5 file"
    if not output.is_dir() and not output.is_file():
        what = f"{output} is not a regular file"
    raise StoreError(f"{output} already exists and cannot be used: {what}", output_hint(NOT_REPLACEABLE_HINT))


def check_existing(output: Path, fingerprint: str) -> None:
    """Refuse an existing file made by another request (its fingerprint differs) or unreadable."""
    try:
        with FeatureFile(output) as existing:
            recorded = existing.fingerprint
            same = recorded == fingerprint
    except FeatxError as err:
        raise StoreError(f"{output} already exists and cannot be used: {err.message}", _existing_hint(output)) from None
    if not same:
        raise StoreError(
            f"{output} already exists and was made from a different corpus, model or options"
            f"{fingerprint_difference(recorded, fingerprint)}",
            _existing_hint(output),
        )


def open_writer(
    plan: ExtractionPlan,
    corpus: Corpus,
    tokenized: TokenizedCorpus,
    loaded: LoadedModel,
    shard_rows=None,
    corpus_rows: int | None = None,
) -> FeatureWriter:
    """Resume the unfinished file of this very plan, or create a new one."""
    output = plan.output
    # An unfinished file made by this very command is always resumed (--overwrite included: it is
    # what the command would write anyway). One that cannot be reopened holds nothing usable.
    if resumable(output):
        writer = FeatureWriter.resume(output)
        if writer.matches(plan.fingerprint):
            if plan.shard is not None and not shard_rows_match(writer, shard_rows):
                writer.close()
                raise StoreError(
                    f"{partial_path(output)} holds other corpus rows than shard {plan.shard.index} "
                    f"of {plan.shard.count}",
                    "pass --overwrite to start this shard over",
                )
            return writer
        recorded = writer.attrs.get(store.schema.FINGERPRINT)
        writer.close()
        if not plan.config.overwrite:
            raise StoreError(
                f"{partial_path(output)} holds an unfinished extraction with a different corpus, model or options"
                f"{fingerprint_difference(recorded, plan.fingerprint)}",
                "run the original command to resume it, or pass --overwrite to start over",
            )
    attrs = provenance(plan, corpus, loaded)
    if plan.shard is not None:
        assert corpus_rows is not None  # a shard's writer is told the whole corpus's rows
        attrs.update(shard_attributes(plan.shard, plan.base_fingerprint, corpus_rows))
    return FeatureWriter.create(
        output,
        attrs,
        corpus,
        tokenized,
        list(plan.sites),
        plan.store_dtype,
        plan.with_tokens,
        row_index=shard_rows,
        word_poolings=plan.word_poolings,
    )

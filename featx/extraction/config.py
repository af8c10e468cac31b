"""``ExtractConfig`` (every option of ``featx extract``, a frozen ``featx.options.Options`` checked once) and
``ExtractSummary`` (what a run did).

Kept free of torch, so that the CLI and the quick up-to-date check (``freshness.py``) can use them
without paying for the torch import. What needs the model (layers, poolings, sites, batch sizes)
is resolved once into an ``ExtractionPlan`` (``plan.py``).
"""

from __future__ import annotations

import codecs
import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import ClassVar

from ..errors import InputError
from ..options import MAX_SEED, Check, Options, normalise, one_of, whole
from ..store import FeatureFile, schema
from .model.files import DEFAULT_MODEL
from .shards.sharding import ShardSpec

STORE_DTYPES = {"float16": "float16", "fp16": "float16", "half": "float16", "float32": "float32", "fp32": "float32"}
COMPUTE_DTYPES = ("auto", "float32", "fp32", "float16", "fp16", "half", "bfloat16", "bf16")
OUTPUT_SUFFIXES = (".h5", ".hdf5")


def _size(name: str, flag: str, optional: bool = True, minimum: int = 1) -> Check:
    """A size option: a whole number of at least ``minimum`` (or left out, when ``optional``)."""
    hint = f"give {flag} a positive size" + (", or leave it out for the default" if optional else "")
    return whole(name, flag, minimum=minimum, optional=optional, hint=hint)


def _check_commit_seconds(config: ExtractConfig) -> None:
    value = config.commit_seconds
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise InputError(
            f"--commit-seconds {value} must be a positive number of seconds",
            "give --commit-seconds a positive time, e.g. 10, or leave it out for the default",
        )


def _check_store_dtype(config: ExtractConfig) -> None:
    canonical = STORE_DTYPES.get(str(config.store_dtype).lower())
    if canonical is None:
        raise InputError(f"--store-dtype '{config.store_dtype}' is not understood", "use float16 or float32")
    normalise(config, "store_dtype", canonical)  # normalised once, in the frozen object's own set-up


def _check_dtype(config: ExtractConfig) -> None:
    if str(config.dtype).lower() not in COMPUTE_DTYPES:
        raise InputError(f"--dtype '{config.dtype}' is not understood", "use auto, float32, float16 or bfloat16")


def _check_output(config: ExtractConfig) -> None:
    if config.corpus is None and config.output is None:
        return
    if config.corpus is None:
        raise InputError("no corpus given", "give the corpus file: featx extract CORPUS.csv")
    if str(config.corpus) == "-" and not config.output:
        raise InputError(
            "a corpus read from standard input ('-') needs an output path",
            "name the features file: featx extract - -o OUT.h5 < corpus.csv",
        )
    output = output_path(config)
    if output.suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(f"output {output} should end in .h5", "features files are HDF5; name them like out.h5")


def _check_encoding(config: ExtractConfig) -> None:
    try:
        codecs.lookup(str(config.encoding))
    except LookupError:
        raise InputError(
            f"unknown encoding '{config.encoding}'", "use a Python codec name such as utf-8, utf-8-sig or latin-1"
        ) from None


def _check_sep(config: ExtractConfig) -> None:
    from .inputs.corpus import normalise_sep

    normalise(config, "sep", normalise_sep(config.sep))


def _check_missing_labels(config: ExtractConfig) -> None:
    value = config.missing_labels
    if value is None or not isinstance(value, str) or not value.strip():
        raise InputError(
            "--missing-labels is empty",
            "use empty (only empty cells), pandas (NA, null, None, nan... too) or a list, e.g. 'NA,-'",
        )
    normalise(config, "missing_labels", value.strip())


def _check_text_col(config: ExtractConfig) -> None:
    if not isinstance(config.text_col, str) or not config.text_col.strip():
        raise InputError("--text-col is empty", "name the column that holds the texts, e.g. --text-col text")


LONG_INPUTS = ("truncate", "window")


def _check_long(config: ExtractConfig) -> None:
    long = str(config.long).strip().lower()
    if long not in LONG_INPUTS:
        raise InputError(
            f"--long '{config.long}' is not understood",
            "use truncate (cut at --max-length) or window (overlapping windows over the whole text)",
        )
    normalise(config, "long", long)
    if config.stride is not None and long != "window":
        raise InputError("--stride applies to --long window only", "add --long window, or leave --stride out")


_device_map_choice = one_of(
    "device_map",
    "--device-map",
    ("auto",),
    optional=True,
    hint="use --device-map auto (accelerate places the layers over the GPUs, then the CPU)",
)


def _check_device_map(config: ExtractConfig) -> None:
    _device_map_choice(config)
    if config.device_map is not None and config.random_init:
        raise InputError(
            "--device-map places weights read from the model folder; --random-init draws new ones",
            "leave out --device-map with --random-init",
        )


def _check_words(config: ExtractConfig) -> None:
    """Word inputs run every sentence whole: longer ones in overlapping windows, never truncated."""
    from .inputs.treebank import check_word_options

    normalise(config, "more_corpora", tuple(str(path) for path in config.more_corpora or ()))
    if check_word_options(config) is not None:
        normalise(config, "long", "window")


def is_word_input(config: ExtractConfig) -> bool:
    from .inputs.treebank import word_format

    return config.corpus is not None and word_format(config.corpus, config.word_format, config.columns) is not None


def _check_shards(config: ExtractConfig) -> None:
    ShardSpec.from_options(config.shards, config.shard_index)


def _check_pair(config: ExtractConfig) -> None:
    from .inputs.pairs import check_pair_options

    if config.text_pair_col is not None and is_word_input(config):
        raise InputError(
            "--text-pair-col reads two text columns of a table; word inputs have no second text",
            "extract the pairs from a CSV/TSV/JSONL table, or drop --text-pair-col",
        )
    check_pair_options(config)


def _check_prompts(config: ExtractConfig) -> None:
    from .inputs.positions import check_pool_at
    from .inputs.templates import check_template_options

    check_template_options(config, is_word_input)
    check_pool_at(config)


@dataclass(frozen=True)
class ExtractConfig(Options):
    """Every option of an extraction; the CLI builds one of these from its flags.

    Frozen and checked on creation by its ``CONSTRAINTS`` (``featx.options``): a bad value is an
    ``InputError`` before anything is read or loaded. ``dataclasses.replace`` (or ``make_config``) makes
    a changed copy, checked again.
    """

    corpus: str | Path
    output: str | Path | None = None
    model: str = DEFAULT_MODEL
    text_col: str = "text"
    id_col: str | None = None
    text_pair_col: str | None = None  # sentence pairs: the second text of each row (featx/extraction/inputs/pairs.py)
    pair_mode: str | None = None  # with text_pair_col: cross (one sequence, the default) or separate
    layers: str = "all"
    poolings: str = "all"
    tokens: bool = False
    sites: str = (
        "hidden"  # also record attn_out, ffn, pre_ln, attn_heads, module:NAME (featx/extraction/forward/sites.py)
    )
    max_length: int | None = None
    long: str = "truncate"  # texts longer than max_length: truncate, or window (overlapping windows, stitched)
    stride: int | None = None  # --long window: tokens shared by consecutive windows (default: a quarter window)
    device: str = "auto"
    device_map: str | None = None  # "auto": spread the model over the GPUs (and CPU) with accelerate
    dtype: str = "auto"
    store_dtype: str = "float16"
    max_tokens: int | None = None  # padded tokens per batch; default depends on the device
    batch_size: int | None = None  # most rows per batch; default depends on the device (plan.py)
    skip_empty: bool = False
    encoding: str = "utf-8"
    sep: str | None = None  # the corpus delimiter: None sniffs it (comma, tab, semicolon, pipe)
    missing_labels: str = "empty"  # label values read as missing: empty (the empty cell), pandas, or a comma list
    # A .gz corpus may inflate to this many bytes (None: featx.io.MAX_CORPUS_BYTES, and at most
    # MAX_GZIP_RATIO times its compressed size); a value set lifts the ratio check. Not in the fingerprint.
    max_corpus_bytes: int | None = None
    overwrite: bool = False
    trust_remote_code: bool = False
    random_init: bool = False
    seed: int = 0
    commit_rows: int | None = None  # rows per commit window; default sized by memory
    # Most seconds of work between commits: a window taking longer commits its finished batches early.
    # Changes neither the features nor the fingerprint, only how much a kill can lose.
    commit_seconds: float = 10.0
    progress: bool = True
    shards: int | None = None  # extract only shard ``shard_index`` of ``shards`` (featx/sharding.py)
    shard_index: int | None = None
    # Word inputs (treebank.py): CoNLL-U, column files, JSON Lines of tokens; one row per sentence
    word_format: str | None = None  # conllu, columns or jsonl; default: from the suffix (.conllu) or --columns
    columns: str | None = None  # column files: the fields of a line, e.g. form,upos,ner
    word_pooling: str = "first,last,mean"  # word inputs: the subword(s) that make a word's vector
    more_corpora: tuple = ()  # word inputs: further files; each sentence's split comes from its file's name
    # Prompts (templates.py, positions.py): a template with {text} (or @FILE), the tokenizer's chat template
    # around it, its system message, the one token stored as pooling ``at``, and rows lacking the marker left out
    template: str | None = None
    chat_template: bool = False
    system: str | None = None
    pool_at: str | None = None  # last, marker:TEXT or index:N
    skip_missing_marker: bool = False
    contrast: str | None = None  # answers, e.g. "True,False": each row's prompt run once per answer

    # Every constraint on the options, in one table (in the spirit of scikit-learn's parameter constraints).
    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        _check_text_col,
        _check_output,
        _check_words,
        _check_store_dtype,
        _check_dtype,
        _check_encoding,
        _size("max_tokens", "--max-tokens"),
        _size("batch_size", "--batch-size"),
        _size("commit_rows", "--commit-rows"),
        _size("max_length", "--max-length", minimum=2),
        _size("max_corpus_bytes", "--max-corpus-bytes"),
        _check_commit_seconds,
        _check_shards,
        _check_long,
        _size("stride", "--stride", minimum=0),
        _check_device_map,
        _check_sep,
        _check_missing_labels,
        _check_pair,
        _check_prompts,
        whole("seed", "--seed", minimum=0, maximum=MAX_SEED),
    )


@dataclass
class ExtractSummary:
    """What an extraction did: its output, ``status`` (written, resumed or up-to-date), rows, tokens, truncated
    and windowed rows, timings, the file's size, and notes; ``line()`` is the summary ``featx extract`` prints."""

    output: Path
    status: str  # "written", "resumed" or "up-to-date"
    rows: int
    tokens: int
    truncated_rows: int
    skipped_empty: int
    seconds: float
    file_bytes: int
    model: str
    device: str
    dtype: str
    layers: list[int] = field(default_factory=list)
    poolings: list[str] = field(default_factory=list)
    resumed_from: int = 0
    windowed_rows: int = 0  # rows longer than the model's maximum, run in overlapping windows (--long window)
    words: int = 0  # word inputs (CoNLL-U...): the words stored, one vector per word pooling and layer
    resumed_inside: int = 0  # rows an earlier run committed inside the window after ``resumed_from`` (by time)
    notes: list[str] = field(default_factory=list)  # extra lines for the user (e.g. the merge of shards)
    # Where the time went (0 for an up-to-date file): model load, tokenisation, and the batch loop
    # (forward, pooling, copies; writing overlaps it). ``tokens / forward_seconds`` is the steady-state rate.
    load_seconds: float = 0.0
    tokenize_seconds: float = 0.0
    forward_seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    def line(self) -> str:
        """The one-line summary ``featx extract`` prints."""
        size = f"{self.file_bytes / 1e6:.1f} MB"
        parts = [
            f"{self.rows} rows",
            f"{self.tokens} tokens",
            f"{self.truncated_rows} truncated",
        ]
        if self.words:
            parts.insert(1, f"{self.words} words")
        if self.windowed_rows:
            parts.append(f"{self.windowed_rows} windowed")
        if self.skipped_empty:
            parts.append(f"{self.skipped_empty} empty skipped")
        if self.status == "up-to-date":
            return f"up to date: {self.output} ({', '.join(parts)}, {size}); use --overwrite to recompute"
        parts += [f"{self.seconds:.1f} s", f"{self.tokens_per_second:,.0f} tokens/s", size]
        inside = f", plus {self.resumed_inside} rows committed inside the next window" if self.resumed_inside else ""
        resumed = f" (resumed at row {self.resumed_from}{inside})" if self.status == "resumed" else ""
        return f"wrote {self.output}{resumed}: " + ", ".join(parts)

    def as_dict(self) -> dict:
        """The summary as a JSON-ready dict."""
        data = asdict(self)
        data["output"] = str(self.output)
        data["tokens_per_second"] = self.tokens_per_second
        return data


def output_path(config: ExtractConfig) -> Path:
    """``--output``, or ``<corpus stem>[.random-init].features.h5`` beside the corpus."""
    if config.output:
        return Path(config.output)
    corpus = Path(config.corpus)
    tag = ".random-init" if config.random_init else ""
    return corpus.with_name(f"{corpus.stem}{tag}.features.h5")


def make_config(config: ExtractConfig | str | Path | None = None, **options) -> ExtractConfig:
    """An ``ExtractConfig`` from a corpus path and options, or a config with some options replaced."""
    known = {item.name for item in fields(ExtractConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InputError(
            f"unknown extraction option(s): {', '.join(unknown)}",
            f"see featx.ExtractConfig for the options: {', '.join(sorted(known))}",
        )
    if isinstance(config, os.PathLike):
        config = Path(config)
    if config is not None and not isinstance(config, (str, Path, ExtractConfig)):
        raise InputError(
            f"featx.extract takes a corpus file path (or an ExtractConfig), not a {type(config).__name__}",
            "featx.embed(texts, ...) takes in-memory texts and returns their features as an array "
            "(featx.extraction.embed: every layer and pooling); or write the texts to a CSV and extract that",
        )
    if isinstance(config, (str, Path)):
        return ExtractConfig(corpus=config, **options)
    if config is None:
        return ExtractConfig(**options)
    return ExtractConfig(**{**asdict(config), **options}) if options else config


def summary_of(path: Path, status: str, seconds: float, skipped: int) -> ExtractSummary:
    """The summary of a finished features file."""
    with FeatureFile(path) as features:
        attrs = features.attrs
        windowed = 0
        if str(attrs.get(schema.LONG_INPUTS, "truncate")) == "window":
            windowed = int((features.n_kept > int(attrs[schema.MAX_LENGTH])).sum())
        summary = ExtractSummary(
            output=path,
            status=status,
            rows=features.n_rows,
            tokens=int(features.n_kept.sum() + features.pair_n_kept.sum()),  # both sides of separate-mode pairs
            truncated_rows=int((features.truncated | features.pair_truncated).sum()),
            skipped_empty=skipped,
            seconds=seconds,
            file_bytes=path.stat().st_size,
            model=str(attrs.get(schema.MODEL)),
            device=str(attrs.get(schema.DEVICE)),
            dtype=str(attrs.get(schema.COMPUTE_DTYPE)),
            layers=features.layers,
            poolings=features.poolings,
            windowed_rows=windowed,
            words=int(features.word_offsets()[-1]) if features.has_words else 0,
        )
        if str(attrs.get(schema.MODEL_PART, "model")) == "encoder":
            summary.notes.append(
                f"{summary.model} is an encoder-decoder model: these are its encoder's states (the decoder was not run)"
            )
        blocks, top = attrs.get(schema.BLOCKS_RUN), int(attrs.get(schema.N_MODEL_LAYERS, 0)) - 1
        if blocks is not None and int(blocks) < top:
            summary.notes.append(
                f"ran {int(blocks)} of the model's {top} blocks: no stored layer is above layer {int(blocks)}"
            )
        if bool(attrs.get(schema.CAUSAL, False)):
            summary.notes.append(
                f"{summary.model} is causal (decoder-only): no cls pooling, its first token sees "
                "only itself; last is the last real token"
            )
        return summary

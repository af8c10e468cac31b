"""``ExtractConfig``: every option of ``featx extract``, a frozen ``featx.options.Options`` checked once by the
``CONSTRAINTS`` table of ``checks.py``, each declared once as a field with its flag, help and help group
(the command line's options and ``featx.embed``'s keywords are made from the fields).

Kept free of torch, so that the CLI and the quick up-to-date check (``freshness.py``) can use them
without paying for the torch import. What needs the model (layers, poolings, sites, batch sizes)
is resolved once into an ``ExtractionPlan`` (``plan.py``). ``ExtractSummary`` (what a run did) is in
``summary.py``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import ClassVar

from ..errors import InputError
from ..options import Check, Options, encoding_option, option, renamed, sep_option
from .checks import CONSTRAINTS
from .model.files import DEFAULT_MODEL

INPUT, SITES, READING, MODEL = "Input and layout", "Sites, length and device", "Reading the corpus", "Model and output"
COMMITS, WORDS, PROMPTS = "Commits and shards", "Word inputs", "Prompts"
EDITS = "Edits inside the forward pass"


@dataclass(frozen=True)
class ExtractConfig(Options):
    """Every option of an extraction; the CLI builds one of these from its flags (each field's ``flag``).

    Frozen and checked on creation by its ``CONSTRAINTS`` (``featx.options``): a bad value is an
    ``InputError`` before anything is read or loaded. ``dataclasses.replace`` (or ``make_config``) makes
    a changed copy, checked again.
    """

    corpus: str | Path
    output: str | Path | None = option(
        None,
        flag=("-o", "--output"),
        group=INPUT,
        help="Features file (default: CORPUS.features.h5 beside the corpus).",
    )
    model: str = option(
        DEFAULT_MODEL,
        flag="--model",
        group=INPUT,
        help="Hugging Face model folder or id; 'default' is the embedded all-MiniLM-L6-v2.",
    )
    text_col: str = option("text", flag="--text-col", group=INPUT, help="Column holding the texts.")
    id_col: str | None = option(
        None, flag="--id-col", group=INPUT, help="Column of unique row ids (default: row numbers)."
    )
    text_pair_col: str | None = option(
        None, flag="--text-pair-col", group=INPUT, help="Sentence pairs: the column of each row's second text."
    )
    pair_mode: str | None = option(
        None,
        flag="--pair-mode",
        group=INPUT,
        help="With --text-pair-col: cross (one sequence in the model's pair format, the default) or separate.",
    )
    layers: str = option(
        "all",
        flag=("--layer", "--layers"),
        listed=True,
        group=INPUT,
        help="Layers to store: all, 0,3,6, -4: ... (below the top layer, only the blocks up to the highest one run)",
    )
    poolings: str = option(
        "all",
        flag="--pooling",
        listed=True,
        group=INPUT,
        help="all or a list of cls,mean,max,last,pooler (sentence pairs, cross mode: also mean_a,mean_b). With "
        "--template or --chat-template also span_mean, span_max, span_last: the mean, the element-wise max and the "
        "last token's state over the row's own text tokens in the prompt (tokens whose characters overlap the "
        "text; template and special tokens excluded); with --pool-at also at.",
    )
    tokens: bool = option(False, flag="--tokens", group=INPUT, help="Also store token-level states (large).")
    sites: str = option(
        "hidden",
        flag="--site",
        listed=True,
        group=SITES,
        help="Activations to store: hidden,attn_out,ffn,pre_ln,attn_heads or module:NAME (hidden always).",
    )
    max_length: int | None = option(
        None,
        flag="--max-length",
        group=SITES,
        help="Truncate texts to this many tokens, special tokens included (default: the model's maximum; at least its "
        "special tokens plus one, e.g. 3 for [CLS] .. [SEP]).",
    )
    long: str = option(
        "truncate",
        flag="--long",
        group=SITES,
        help="Texts longer than --max-length: truncate, or window (overlapping windows over the whole text).",
    )
    stride: int | None = option(
        None,
        flag="--stride",
        group=SITES,
        help="--long window: tokens shared by consecutive windows (default: a quarter of a window).",
    )
    device: str = option(
        "auto",
        flag="--device",
        group=SITES,
        help="Torch device the model runs on: auto (a GPU when torch sees one, else the CPU), cpu, cuda, cuda:N "
        "or mps.",
    )
    device_map: str | None = option(
        None,
        flag="--device-map",
        group=SITES,
        help="auto: spread a model too large for one GPU over the GPUs (then the CPU) with accelerate.",
    )
    dtype: str = option("auto", flag="--dtype", group=SITES, help="Compute dtype: auto, float32, float16, bfloat16.")
    store_dtype: str = option("float16", flag="--store-dtype", group=SITES, help="Stored features: float16 or float32.")
    max_tokens: int | None = option(
        None,
        flag="--max-tokens",
        group=SITES,
        help="Padded tokens per batch (default: 1024 on CPU, 65536 on GPU; at least one row of --max-length).",
    )
    batch_size: int | None = option(
        None,
        flag="--batch-size",
        group=SITES,
        help="Most sequences per forward pass: rows, or with --long window windows, of one or several long texts "
        "(default: 256 on CPU, 16384 on GPU).",
    )
    skip_empty: bool = option(
        False,
        flag="--skip-empty",
        group=READING,
        help="Leave out empty or whitespace-only texts (zero-width and control characters count as "
        "whitespace) instead of refusing.",
    )
    encoding: str = encoding_option(READING)
    sep: str | None = sep_option(READING)
    missing_labels: str = option(
        "empty",
        flag="--missing-labels",
        group=READING,
        help="Label values read as missing: empty (empty cells only), pandas (also NA, null, None, nan...) "
        "or a comma list such as 'NA,-'.",
    )
    # Not in the fingerprint. None: featx.io.MAX_CORPUS_BYTES, and at most MAX_GZIP_RATIO times the compressed size.
    max_corpus_bytes: int | None = option(
        None,
        flag="--max-corpus-bytes",
        group=READING,
        help="A .gz corpus may inflate to this many bytes (default 2 GiB, and at most 100 times its "
        "compressed size); setting it lifts the ratio check.",
    )
    overwrite: bool = option(False, flag="--overwrite", group=MODEL, help="Replace an existing or unfinished output.")
    trust_remote_code: bool = option(
        False, flag="--trust-remote-code", group=MODEL, help="Allow the model folder's own Python code to run."
    )
    random_init: bool = option(
        False, flag="--random-init", group=MODEL, help="Same architecture and tokenizer, random weights (a control)."
    )
    init_seed: int = option(
        0, flag="--init-seed", group=MODEL, old=("--seed",), help="Seed of the random weights of --random-init."
    )
    commit_rows: int | None = option(
        None, flag="--commit-rows", group=COMMITS, help="Rows per commit (the unit of resuming; default: by memory)."
    )
    # Changes neither the features nor the fingerprint, only how much a kill can lose.
    commit_seconds: float = option(
        10.0,
        flag="--commit-seconds",
        group=COMMITS,
        help="Most seconds of work between commits (what a kill can lose at most, roughly).",
    )
    progress: bool = option(True, flag=("--quiet", "-q"), negate=True, group=COMMITS, help="No progress bar.")
    shards: int | None = option(
        None,
        flag="--shards",
        group=COMMITS,
        help="Split the corpus into this many shards and extract only --shard-index (under torchrun: automatic).",
    )
    shard_index: int | None = option(
        None, flag="--shard-index", group=COMMITS, help="Which shard to extract, 0 to --shards minus 1."
    )
    # Word inputs (inputs/treebank.py): CoNLL-U, column files, JSON Lines of tokens; one row per sentence
    word_format: str | None = option(
        None,
        flag="--word-format",
        group=WORDS,
        help="Word inputs: conllu, columns or jsonl (default: .conllu files, --columns, JSON Lines of tokens).",
    )
    columns: str | None = option(
        None,
        flag="--columns",
        listed=True,
        group=WORDS,
        help="Column files: the fields of a line, e.g. form,upos,ner (_ skips one).",
    )
    word_pooling: str = option(
        "first,last,mean",
        flag="--word-pooling",
        listed=True,
        group=WORDS,
        help="Word inputs: the subword(s) that make a word's vector, any of first,last,mean.",
    )
    more_corpora: tuple = ()  # word inputs: further files (the CLI's further CORPUS arguments)
    # Prompts (inputs/templates.py, inputs/positions.py)
    template: str | None = option(
        None,
        flag="--template",
        group=PROMPTS,
        help="Wrap each row in a prompt: 'Review: {text}\\nSentiment:' ({text} is --text-col, {NAME} another "
        "column, {{ }} literal braces; \\n \\t \\\\ are read as newline, tab, backslash), or @FILE to read it "
        "from FILE as it is (one trailing newline dropped).",
    )
    chat_template: bool = option(
        False,
        flag="--chat-template",
        group=PROMPTS,
        help="Wrap the user turn (the --template prompt, or the text) in the tokenizer's own chat template, "
        "with the generation prompt.",
    )
    system: str | None = option(
        None, flag="--system", group=PROMPTS, help="With --chat-template: a system message before the user turn."
    )
    pool_at: str | None = option(
        None,
        flag="--pool-at",
        group=PROMPTS,
        help="Also store the state at one token per row as pooling 'at': last, marker:TEXT (the last token "
        "of TEXT's last occurrence, e.g. marker:'Sentiment:') or index:N (-1 the last token, 0 the first). "
        "To pool the text's own tokens instead, see --pooling span_*.",
    )
    skip_missing_marker: bool = option(
        False,
        flag="--skip-missing-marker",
        group=PROMPTS,
        help="Leave out rows whose prompt lacks the --pool-at marker.",
    )
    contrast: str | None = option(
        None,
        flag="--contrast",
        listed=True,
        group=PROMPTS,
        help="Contrast pairs: answers such as 'True,False'; each prompt runs once per answer (in {answer}, else "
        "after the prompt) and every answer's states are stored (answer k>0 as site answer_k); featx probe "
        "reads the difference of the first two.",
    )
    # Edits inside the forward pass (edits/): recorded in the file's attributes and fingerprint
    intervene: str | None = option(
        None,
        flag="--intervene",
        group=EDITS,
        help="Edit the hidden state of layer L for every token and recompute every layer above: erase:ERASERS@L "
        "(featx erase's .erasers.npz), project:BUNDLE@L, mean:BUNDLE@L (a featx fit bundle's class span removed, "
        "or set to its training mean), steer:BUNDLE:CLASS:ALPHA@L (or FEATURES.h5:LABEL:CLASS:ALPHA@L: the "
        "class-mean difference), random:RANK@L (RANK random directions, uncentred) or random:ERASERS@L (the "
        "control of erase:ERASERS@L: its rank, centred on its mean); several comma-separated apply in order, an "
        "empty item is refused (docs/interventions.md).",
    )
    intervene_seed: int = option(
        0, flag="--intervene-seed", group=EDITS, help="Seed of the random directions of --intervene random."
    )

    # Every constraint on the options, in one table (``checks.py``).
    CONSTRAINTS: ClassVar[tuple[Check, ...]] = CONSTRAINTS


def _all_files(value) -> bool:
    """Whether ``value`` is a list or tuple of paths of existing files (the CLI's several CORPUS arguments)."""
    items = value if isinstance(value, (list, tuple)) else []
    return bool(items) and all(isinstance(item, (str, os.PathLike)) and os.path.isfile(item) for item in items)


def make_config(config: ExtractConfig | str | Path | None = None, **options) -> ExtractConfig:
    """An ``ExtractConfig`` from a corpus path and options, or a config with some options replaced (an old
    keyword of a renamed option, ``seed``, is taken with a deprecation warning)."""
    options = renamed(ExtractConfig, options)
    known = {item.name for item in fields(ExtractConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InputError(
            f"unknown extraction option(s): {', '.join(unknown)}",
            f"see featx.extraction.ExtractConfig for the options: {', '.join(sorted(known))}",
        )
    if isinstance(config, os.PathLike):
        config = Path(config)
    if config is not None and not isinstance(config, (str, Path, ExtractConfig)):
        raise InputError(
            f"featx.extract takes a corpus file path (or an ExtractConfig), not a {type(config).__name__}",
            "several word input files make one features file as featx.extract(first, more_corpora=[the others])"
            if _all_files(config)
            else "featx.embed(texts, ...) takes in-memory texts and returns their features as an array "
            "(featx.extraction.embed: every layer and pooling); or write the texts to a CSV and extract that",
        )
    if isinstance(config, (str, Path)):
        return ExtractConfig(corpus=config, **options)
    if config is None and options.get("corpus") is None:
        raise InputError("no corpus given", "give the corpus file: featx.extract('corpus.csv')")
    if config is None:
        return ExtractConfig(**options)
    return ExtractConfig(**{**asdict(config), **options}) if options else config


__all__ = [
    "ExtractConfig",
    "make_config",
]

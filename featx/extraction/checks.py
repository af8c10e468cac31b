"""The checks of ``ExtractConfig`` (``featx extract``'s options), in its one ``CONSTRAINTS`` table: each raises
``InputError(message, hint)`` naming the option as the user gave it (``featx.options.spoken_value``: the flag on
the command line, the keyword from Python; a flag left in a message's text is reworded for Python when the config is
made). Kept free of torch, like the config."""

from __future__ import annotations

import codecs
import dataclasses
import math
from pathlib import Path
from typing import Any

from ..checks import one_of, path_like, spelled, whole
from ..errors import InputError
from ..io import corpus_stem
from ..options import MAX_SEED, Check, normalise, spoken, spoken_value
from .shards.sharding import ShardSpec

ExtractConfig = Any  # the checks take an ``ExtractConfig`` (config.py imports this module, not the other way)

STORE_DTYPES = {"float16": "float16", "fp16": "float16", "half": "float16", "float32": "float32", "fp32": "float32"}
COMPUTE_DTYPES = ("auto", "float32", "fp32", "float16", "fp16", "half", "bfloat16", "bf16")
OUTPUT_SUFFIXES = (".h5", ".hdf5")


def _size(name: str, optional: bool = True, minimum: int = 1) -> Check:
    """A size option: a whole number of at least ``minimum`` (or left out, when ``optional``)."""
    size = "a positive size" if minimum <= 1 else f"a size of at least {minimum}"

    def check(config: ExtractConfig) -> None:
        hint = f"give {spoken(config, name)} {size}" + (", or leave it out for the default" if optional else "")
        whole(name, spoken(config, name), minimum=minimum, optional=optional, hint=hint)(config)

    return check


def _check_commit_seconds(config: ExtractConfig) -> None:
    value = config.commit_seconds
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise InputError(
            f"{spoken_value(config, 'commit_seconds', value)} must be a positive number of seconds",
            f"give {spoken(config, 'commit_seconds')} a positive time, e.g. 10, or leave it out for the default",
        )


def _check_store_dtype(config: ExtractConfig) -> None:
    canonical = STORE_DTYPES.get(str(config.store_dtype).lower())
    if canonical is None:
        given = spoken_value(config, "store_dtype", config.store_dtype, shown=f"'{config.store_dtype}'")
        raise InputError(f"{given} is not understood", "use float16 or float32")
    normalise(config, "store_dtype", canonical)  # normalised once, in the frozen object's own set-up


def _check_dtype(config: ExtractConfig) -> None:
    if str(config.dtype).lower() not in COMPUTE_DTYPES:
        given = spoken_value(config, "dtype", config.dtype, shown=f"'{config.dtype}'")
        raise InputError(f"{given} is not understood", "use auto, float32, float16 or bfloat16")


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
    if output.name.lower() in OUTPUT_SUFFIXES:  # '.h5' alone is a hidden file without a suffix
        raise InputError(f"output {output} has no name before its {output.name}", "name the file, like out.h5")
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
        example = spoken_value(config, "text_col", "text")
        raise InputError(
            f"{spoken(config, 'text_col')} is empty", f"name the column that holds the texts, e.g. {example}"
        )


LONG_INPUTS = ("truncate", "window")


def _check_long(config: ExtractConfig) -> None:
    long = str(config.long).strip().lower()
    if long not in LONG_INPUTS:
        raise InputError(
            f"{spoken_value(config, 'long', config.long, shown=repr(config.long))} is not understood",
            "use truncate (cut at --max-length) or window (overlapping windows over the whole text)",
        )
    normalise(config, "long", long)
    if config.stride is not None and long != "window":
        window, stride = spoken_value(config, "long", "window"), spoken(config, "stride")
        raise InputError(f"{stride} applies to {window} only", f"add {window}, or leave {stride} out")


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
    elif config.word_pooling != _default(config, "word_pooling"):  # a table has no word vectors: it would be ignored
        raise InputError(
            "--word-pooling applies to word inputs (CoNLL-U, --columns files, JSON Lines of tokens), "
            "not to a table of texts",
            "leave --word-pooling out (--pooling chooses a text's poolings), or give a word input",
        )


def _default(config: ExtractConfig, name: str) -> Any:
    return next(each.default for each in dataclasses.fields(config) if each.name == name)


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


def _check_selection(config: ExtractConfig) -> None:
    """``--layers``' spelling and ``--pooling``'s names, before the model says which layers and poolings it has."""
    from ..selection import POOLINGS, check_layer_spelling, parse_poolings
    from .inputs.pairs import pair_poolings
    from .inputs.templates import prompt_poolings

    check_layer_spelling(config.layers, "--layers", allow_combined=False, config=config)
    parse_poolings(config.poolings, prompt_poolings(config, pair_poolings(config, POOLINGS)))


def _check_intervene(config: ExtractConfig) -> None:
    from .edits.spec import check_intervene

    check_intervene(config)


def _check_seeds(config: ExtractConfig) -> None:
    """A seed given for randomness the run does not have would be ignored: refused instead."""
    if config.init_seed and not config.random_init:
        raise InputError(
            f"{spoken_value(config, 'init_seed', config.init_seed)}"
            " seeds the random weights of --random-init, and this run keeps the "
            "model's own weights",
            "add --random-init for a random-weights control, or leave --init-seed out",
        )
    if config.intervene_seed:
        from .edits.spec import parse_interventions

        if not any(edit.kind == "random" for edit in parse_interventions(config.intervene, config.intervene_seed)):
            raise InputError(
                f"{spoken_value(config, 'intervene_seed', config.intervene_seed)}"
                " seeds the directions of --intervene random:RANK@L, and "
                "this run has no random edit",
                "add a random edit (e.g. --intervene random:8@3), or leave --intervene-seed out",
            )


def output_path(config: ExtractConfig) -> Path:
    """``--output``, or ``<corpus stem>[.random-init].features.h5`` beside the corpus."""
    if config.output:
        return Path(config.output)
    corpus = Path(config.corpus)
    tag = ".random-init" if config.random_init else ""
    return corpus.with_name(f"{corpus_stem(corpus)}{tag}.features.h5")


# Every constraint on the options, in one table (in the spirit of scikit-learn's parameter constraints).
CONSTRAINTS: tuple[Check, ...] = (
    path_like("corpus", "output", "model"),
    _check_text_col,
    _check_output,
    _check_words,
    _check_store_dtype,
    _check_dtype,
    _check_encoding,
    _size("max_tokens"),
    _size("batch_size"),
    _size("commit_rows"),
    _size("max_length", minimum=2),
    _size("max_corpus_bytes"),
    _check_commit_seconds,
    _check_shards,
    _check_long,
    _size("stride", minimum=0),
    _check_device_map,
    _check_sep,
    _check_missing_labels,
    _check_pair,
    _check_prompts,
    spelled("layers", "--layers", example="e.g. layers='all', layers=3 or layers=[0, 6]"),
    spelled("poolings", "--pooling", example="e.g. poolings='mean' or poolings=['mean', 'cls']"),
    _check_selection,
    whole("init_seed", "--init-seed", minimum=0, maximum=MAX_SEED),
    whole("intervene_seed", "--intervene-seed", minimum=0, maximum=MAX_SEED),
    _check_intervene,
    _check_seeds,
)

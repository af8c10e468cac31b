"""``LensConfig``: every option of ``featx lens``, frozen and checked when made (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..checks import path_like, text, whole
from ..errors import InputError
from ..io import corpus_stem
from ..options import (
    Check,
    Options,
    encoding_option,
    normalise,
    on_command_line,
    option,
    quiet_option,
    sep_option,
    spoken,
    spoken_value,
)
from ..probing import bootstrap_option, check_bootstrap, check_folds, check_seed, folds_option, seed_option
from .answers import parse_answers

INPUT, PROBE, RUN = "Input", "Probe and evaluation", "Model and output"


def _check_template(config) -> None:
    if config.chat_template and config.template is None:
        return  # the text itself is the user turn
    if not isinstance(config.template, str) or not config.template:
        decoder = "Review: {text}\nSentiment:"
        raise InputError(
            f"{'featx lens' if on_command_line() else 'featx.lens'} needs {spoken(config, 'template')}: the prompt "
            "whose answering position the lens reads",
            f"e.g. {spoken_value(config, 'template', decoder, shown=repr(decoder))} (a decoder), "
            "'Review: {text} It was [MASK].' (an MLM)",
        )


def _check_answers(config) -> None:
    parse_answers(config.answers)


def _check_layers(config) -> None:
    if not isinstance(config.layers, str) or not config.layers.strip():
        raise InputError(
            f"{spoken_value(config, 'layers', config.layers, shown=repr(config.layers))} is not understood",
            "e.g. all, 0,3,6 or -4:",
        )
    normalise(config, "layers", config.layers.strip())


@dataclass(frozen=True)
class LensConfig(Options):
    """Options of ``featx.lens``: each field is the ``featx lens`` flag of the same name (``layers`` is
    ``--layer``). The extraction behind it stores the answering position's states (pooling ``at``) of every
    layer in float32; the probe is featx's logistic-regression probe on those states."""

    corpus: str | Path
    answers: str | None = option(
        None,
        flag="--answers",
        kind="str",
        group=INPUT,
        help="Answer tokens: ' yes, no' (by class order) or 'pos= great,neg= bad'.",
    )
    template: str | None = option(
        None, flag="--template", group=INPUT, help="Prompt template with {text} (an MLM's with its [MASK])."
    )
    chat_template: bool = option(
        False,
        flag="--chat-template",
        group=INPUT,
        help="Wrap the prompt (or the text) in the tokenizer's chat template; the answer follows its generation "
        "prompt.",
    )
    system: str | None = option(None, flag="--system", group=INPUT, help="With --chat-template: a system message.")
    label: str = option("label", flag="--label", group=INPUT, help="Label column the answers stand for.")
    model: str = option("default", flag="--model", group=INPUT, help="Model folder or id (with its LM or MLM head).")
    text_col: str = option("text", flag="--text-col", group=INPUT, help="Column holding the texts.")
    id_col: str | None = option(None, flag="--id-col", group=INPUT, help="Column of unique row ids.")
    encoding: str = encoding_option(INPUT)
    sep: str | None = sep_option(INPUT)
    layers: str = option("all", flag="--layer", listed=True, group=PROBE, help="Layers read: all, 0,3,6 or -4:.")
    folds: int = folds_option(PROBE)
    seed: int = seed_option(PROBE, "the logreg probe")
    jobs: int | None = option(None, flag="--jobs", group=PROBE, help="Parallel probe jobs (default: one per core).")
    output: str | Path | None = option(
        None,
        flag=("-o", "--output"),
        group=RUN,
        kind="str",
        help="Results prefix: PREFIX.csv, .json, .png, .svg and PREFIX.features.h5 (default CORPUS.lens).",
    )
    figure: bool = option(
        True, flag="--no-figure", negate=True, group=RUN, help="Skip the figure (PREFIX.png and .svg)."
    )
    max_length: int | None = option(None, flag="--max-length", group=RUN, help="Token limit (default: the model's).")
    batch_size: int | None = option(None, flag="--batch-size", group=RUN, help="Rows per forward batch.")
    device: str = option("auto", flag="--device", group=RUN, help="auto, cpu, cuda, cuda:N or mps.")
    dtype: str = option("auto", flag="--dtype", group=RUN, help="Compute dtype: auto, float32, float16, bfloat16.")
    overwrite: bool = option(False, flag="--overwrite", group=RUN, help="Replace an existing features file.")
    progress: bool = quiet_option(RUN, "No progress bar.")
    n_bootstrap: int = bootstrap_option(
        PROBE,
        folds="without one the lens's intervals resample every scored row and the probe's are t intervals over the "
        "folds",
        also="The lens's, the probe's and the majority class's intervals alike.",
    )

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("corpus", what="featx.lens takes a corpus file path", hint="write the texts and labels to a CSV"),
        path_like("output"),
        _check_template,
        _check_answers,
        text("label", "--label", example="name the label column, e.g. label='sentiment'"),
        _check_layers,
        check_folds,  # --folds and --seed as featx probe's: at least 2 folds, a seed from 0 to MAX_SEED
        check_seed,
        whole("max_length", "--max-length", optional=True),
        whole("batch_size", "--batch-size", optional=True),
        whole("jobs", "--jobs", optional=True),
        check_bootstrap,  # --n-bootstrap as featx probe's: 1 to 100000
    )

    def prefix(self) -> Path:
        """The results prefix: ``--output``, else the corpus path with ``.lens`` in place of its suffix."""
        if self.output is not None:
            return Path(self.output)
        corpus = Path(self.corpus)
        return corpus.with_name(corpus_stem(corpus) + ".lens")

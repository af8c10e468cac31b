"""``FitConfig`` and ``PredictConfig``: the options of ``featx fit`` and ``featx predict``, frozen and checked
when made by their ``CONSTRAINTS`` tables (``featx.options``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..checks import number, numbers, one_of, path_like, spelled, text, whole
from ..errors import InputError
from ..options import Check, Options, encoding_option, option, overwrite_option, sep_option, spoken_value
from ..probing import (
    DEFAULT_ALPHAS,
    DEFAULT_CS,
    bootstrap_option,
    check_bootstrap,
    check_folds,
    check_group,
    check_jobs,
    check_seed,
    control_option,
    folds_option,
    group_option,
    seed_option,
)

HEADS = ("logreg", "svm", "mlp", "ridge")
CLASS_METRICS = ("accuracy", "macro_f1", "balanced_accuracy")
VALUE_METRICS = ("r2", "spearman", "pearson")
TASKS = ("auto", "classification", "regression")
BUNDLE_SUFFIX = ".featx"
CHOICE, EVALUATION, BUNDLE = "Label and probe", "Evaluation", "Bundle"
READING, PREDICTIONS, COMPUTE = "Reading the corpus", "Predictions", "Compute"


def _check_metric(config: FitConfig) -> None:
    if config.metric is None:
        return
    spelled = str(config.metric).strip().lower()
    if spelled not in CLASS_METRICS + VALUE_METRICS:
        raise InputError(
            f"{spoken_value(config, 'metric', config.metric, shown=repr(config.metric))} is not understood",
            f"classification: {', '.join(CLASS_METRICS)}; regression: {', '.join(VALUE_METRICS)}",
        )
    object.__setattr__(config, "metric", spelled)


@dataclass(frozen=True)
class FitConfig(Options):
    """Options of ``featx.fit``: which stored label to learn, from which layer(s) and pooling (``auto``: chosen
    by cross-validation on the training rows), with which head, written as a bundle folder."""

    features: str | Path | None = None
    label: str | None = option(
        None, flag="--label", group=CHOICE, help="Label column to learn (default: 'label', else the first one)."
    )
    layer: str = option(
        "auto",
        flag="--layer",
        listed=True,
        group=CHOICE,
        help="auto (chosen by cross-validation on the training rows), 3, -1, cat(-4:) or a list to choose from.",
    )
    pooling: str = option(
        "auto", flag="--pooling", listed=True, group=CHOICE, help="auto, or one or several stored poolings."
    )
    arcs: bool = option(
        False,
        flag="--arcs",
        group=CHOICE,
        help="Word inputs: fit pairs of words. --label deprel: a relation labeller of (head, dependent) arcs; "
        "--label head: a head selector (each word's head, or the root: a softmax over its candidates, with the "
        "signed offset; each sentence's heads decoded as its best tree, one word on the root).",
    )
    classifier: str = option(
        "logreg", flag="--classifier", group=CHOICE, help="logreg, svm, mlp (classes) or ridge (numbers)."
    )
    metric: str | None = option(
        None,
        flag="--metric",
        group=CHOICE,
        help="Chosen on: accuracy (default), macro_f1 or balanced_accuracy for classes; r2 (default), pearson or "
        "spearman for a number.",
    )
    output: str | Path | None = option(  # None: beside the features file, .featx
        None,
        flag=("-o", "--output"),
        group=BUNDLE,
        kind="path",
        help="Bundle folder to write (default: FEATURES less .features.h5, + .featx, beside it).",
    )
    task: str = option(
        "auto",
        flag="--task",
        group=CHOICE,
        choices=TASKS,
        help="auto: a numeric label with many distinct values is regression (ridge, R²), else classes.",
    )
    folds: int = folds_option(EVALUATION, used="of the choice of layer, pooling and head (over the training rows)")
    seed: int = seed_option(EVALUATION, "the heads")
    balanced: bool = option(False, flag="--balanced", group=EVALUATION, help="Balanced class weights.")
    group: str | None = group_option(EVALUATION)
    control: bool = control_option(EVALUATION)
    cs: tuple[float, ...] = DEFAULT_CS
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    n_bootstrap: int = bootstrap_option(
        EVALUATION,
        folds="without test rows the cross-validated score is the estimate, with no interval",
        also="The chosen probe's test score and the lexical baseline's (a head selector's UAS and its baselines', "
        "over whole test sentences).",
    )
    overwrite: bool = overwrite_option(BUNDLE, "an existing bundle")
    write: bool = True
    jobs: int | None = option(  # at most one per candidate
        None, flag="--jobs", group=EVALUATION, help="Candidates scored side by side (default: one per core)."
    )

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like(
            "features",
            what="featx.fit takes a features file path (the .h5 file featx extract writes)",
            hint="featx.extract(corpus, output='feats.h5') writes one from a corpus file; in-memory texts: "
            "featx.embed(texts) gives their features, "
            "or fit featx.sklearn.HiddenStates and a scikit-learn classifier on them",
        ),
        path_like("output"),
        text("label", "label", optional=True, example="name a stored label column, e.g. label='sentiment'"),
        spelled("layer", "layer", example="e.g. layer='auto', layer=3 or layer='cat(-4:)'"),
        spelled("pooling", "pooling", example="e.g. pooling='auto' or pooling='mean'"),
        check_seed,
        check_folds,
        check_jobs,
        check_group,
        one_of("classifier", "--classifier", HEADS),
        one_of("task", "--task", TASKS, hint="choose classification, regression or auto"),
        numbers("cs", None),
        numbers("alphas", None),
        check_bootstrap,
        _check_metric,
    )


def _check_row_ids(config: PredictConfig) -> None:
    if config.row_ids and config.id_col is not None:
        raise InputError(
            "--row-ids and --id-col cannot be combined",
            "--id-col names the column of the ids, --row-ids numbers the rows: keep one",
        )


def _check_top_k(config: PredictConfig) -> None:
    if config.top_k is not None and config.threshold is not None:
        raise InputError(
            "--top-k and --threshold cannot be combined", "use --top-k for many classes, --threshold for two"
        )


@dataclass(frozen=True)
class PredictConfig(Options):
    """Options of ``featx predict``: a bundle, a corpus read like ``featx extract`` reads it, and the file the
    predictions go to (CSV, or TSV/JSONL by its extension)."""

    bundle: str | Path | None = None
    corpus: str | Path | None = None  # a corpus file, or "-" for stdin
    output: str | Path | None = option(  # None: beside the corpus, .predictions.csv
        None,
        flag=("-o", "--output"),
        group=PREDICTIONS,
        kind="path",
        help="Predictions file (.csv/.tsv/.jsonl); - writes CSV to standard output.",
    )
    text_col: str | None = option(
        None, flag="--text-col", group=READING, help="Column of the texts (default: the one the bundle was fitted on)."
    )
    text_pair_col: str | None = option(
        None, flag="--text-pair-col", group=READING, help="Sentence pairs: the column of each row's second text."
    )
    id_col: str | None = option(
        None,
        flag="--id-col",
        group=READING,
        help="Column of unique row ids (default: the bundle's id column when the corpus has it, else row numbers).",
    )
    row_ids: bool = option(
        False,
        flag="--row-ids",
        group=READING,
        help="Ids are the data row numbers (0-based), even when the corpus has the bundle's id column.",
    )
    sep: str | None = sep_option(READING)
    encoding: str = encoding_option(READING)
    label: str | None = option(
        None,
        flag="--label",
        group=PREDICTIONS,
        help="A label column of the corpus: also print the accuracy (R²) against it, beside the most frequent "
        "class's (a head selector, --label head: its UAS beside its fit's baselines); on the corpus the probe was "
        "fitted on, a note, and its test-split rows' score alone.",
    )
    top_k: int | None = option(
        None, flag="--top-k", group=PREDICTIONS, help="Write the K most likely classes instead of every class."
    )
    threshold: float | None = option(
        None, flag="--threshold", group=PREDICTIONS, help="Binary probes: predict the second class at p >= T."
    )
    commit_rows: int = option(  # rows encoded per chunk, written at once
        1024,
        flag="--commit-rows",
        group=COMPUTE,
        old=("--batch-rows",),
        help="Rows per commit (the unit of resuming), as featx extract --commit-rows.",
    )
    batch_size: int | None = option(  # None: featx extract's default for the device
        None,
        flag="--batch-size",
        group=COMPUTE,
        help="Most sequences per forward pass: texts, or windows of long texts when the bundle's features were "
        "extracted with --long window (default: 256 on CPU, 16384 on GPU).",
    )
    device: str = option(
        "auto",
        flag="--device",
        group=COMPUTE,
        help="Torch device the model runs on: auto (a GPU when torch sees one, else the CPU), cpu, cuda, cuda:N "
        "or mps.",
    )
    overwrite: bool = overwrite_option(PREDICTIONS, "an existing predictions file")
    progress: bool = option(
        True,
        flag=("--quiet", "-q", "--no-progress"),
        negate=True,
        group=COMPUTE,
        help="No progress bar (as extract -q).",
    )
    word_format: str | None = option(
        None,
        flag="--word-format",
        group=READING,
        help="Word probes: conllu, columns or jsonl (default: from the file, as extract; a table of texts is split "
        "on whitespace).",
    )
    columns: str | None = option(
        None,
        flag="--columns",
        listed=True,
        group=READING,
        help="Word probes, column files: the fields of a line, e.g. form,upos.",
    )
    model: str | Path | None = option(  # None: the bundle's own (its recorded folder, or its name here)
        None,
        flag="--model",
        group=COMPUTE,
        help="The bundle's model where it lives now (moved, another machine): its folder or Hugging Face id, found as "
        "featx extract --model finds it; refused, before any text is encoded, unless its weights, tokenizer and "
        "config have the bundle's sha256.",
    )
    trust_remote_code: bool = option(  # never because the bundle says so
        False,
        flag="--trust-remote-code",
        group=COMPUTE,
        help="Allow the model folder's own Python code to run (never implied by the bundle).",
    )

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("bundle", "corpus", "output", "model"),
        whole("top_k", "--top-k", minimum=1, optional=True),
        number("threshold", "--threshold", low=0.0, high=1.0, low_open=False, optional=True),
        whole("commit_rows", "--commit-rows", minimum=1),
        whole("batch_size", "--batch-size", minimum=1, optional=True),
        _check_top_k,
        _check_row_ids,
    )


__all__ = ["BUNDLE_SUFFIX", "CLASS_METRICS", "HEADS", "VALUE_METRICS", "FitConfig", "PredictConfig"]

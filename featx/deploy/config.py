"""``FitConfig`` and ``PredictConfig``: the options of ``featx fit`` and ``featx predict``, frozen and checked
when made by their ``CONSTRAINTS`` tables (``featx.options``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..errors import InputError
from ..options import Check, Options, number, numbers, one_of, path_like, spelled, text, whole
from ..probing.config import DEFAULT_ALPHAS, DEFAULT_CS, check_bootstrap, check_folds, check_jobs, check_seed

HEADS = ("logreg", "svm", "mlp", "ridge")
CLASS_METRICS = ("accuracy", "macro_f1", "balanced_accuracy")
VALUE_METRICS = ("r2", "spearman", "pearson")
TASKS = ("auto", "classification", "regression")
BUNDLE_SUFFIX = ".featx"


def _check_metric(config: FitConfig) -> None:
    if config.metric is None:
        return
    spelled = str(config.metric).strip().lower()
    if spelled not in CLASS_METRICS + VALUE_METRICS:
        raise InputError(
            f"--metric '{config.metric}' is not understood",
            f"classification: {', '.join(CLASS_METRICS)}; regression: {', '.join(VALUE_METRICS)}",
        )
    object.__setattr__(config, "metric", spelled)


def _check_output(config: FitConfig) -> None:
    if config.output is not None and not str(config.output).strip():
        raise InputError("-o/--output is empty", "name the bundle folder, e.g. -o model.featx")


@dataclass(frozen=True)
class FitConfig(Options):
    """Options of ``featx.fit``: which stored label to learn, from which layer(s) and pooling (``auto``: chosen
    by cross-validation on the training rows), with which head, written as a bundle folder."""

    features: str | Path | None = None
    label: str | None = None  # None: "label" if stored, else the first label column
    layer: str = "auto"  # auto (every stored layer), or what featx probe --layer takes: 3, -1, cat(-4:), stack
    pooling: str = "auto"  # auto (every stored pooling), or one or several stored poolings
    classifier: str = "logreg"  # logreg, svm, mlp (classification) or ridge (regression)
    metric: str | None = None  # what the choice maximises: accuracy / r2 unless given
    output: str | Path | None = None  # the bundle folder (default: beside the features file, .featx)
    task: str = "auto"
    folds: int = 5
    seed: int = 0
    balanced: bool = False
    cs: tuple[float, ...] = DEFAULT_CS
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    n_bootstrap: int = 1000
    overwrite: bool = False
    write: bool = True
    jobs: int | None = None  # candidates scored side by side; None: one per core (at most one per candidate)

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like(
            "features",
            "featx.fit takes a features file path (the .h5 file featx extract writes)",
            "featx.extract(corpus, output='feats.h5') writes one from a corpus file; in-memory texts: "
            "featx.embed(texts) gives their features, "
            "or fit featx.sklearn.HiddenStates and a scikit-learn classifier on them",
        ),
        text("label", "label", optional=True, example="name a stored label column, e.g. label='sentiment'"),
        spelled("layer", "layer", example="e.g. layer='auto', layer=3 or layer='cat(-4:)'"),
        spelled("pooling", "pooling", example="e.g. pooling='auto' or pooling='mean'"),
        check_seed,
        check_folds,
        check_jobs,
        one_of("classifier", "--classifier", HEADS),
        one_of("task", "--task", TASKS, hint="choose classification, regression or auto"),
        numbers("cs", "--cs"),
        numbers("alphas", "--alphas"),
        check_bootstrap,
        _check_metric,
        _check_output,
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
    output: str | Path | None = None  # None: beside the corpus, .predictions.csv
    text_col: str | None = None  # None: the bundle's text column
    text_pair_col: str | None = None  # None: the bundle's second column (sentence pairs)
    id_col: str | None = None
    sep: str | None = None
    encoding: str = "utf-8"
    label: str | None = None  # a label column to score the predictions against
    top_k: int | None = None
    threshold: float | None = None
    batch_rows: int = 1024  # rows encoded per chunk (the unit of resuming)
    batch_size: int | None = None  # most texts per forward pass; None: featx extract's default for the device
    device: str = "auto"
    overwrite: bool = False
    progress: bool = True
    word_format: str | None = None  # word probes: conllu, columns or jsonl (default: from the file, as extract)
    columns: str | None = None  # word probes, column files: the fields of a line, e.g. form,upos

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        whole("top_k", "--top-k", minimum=1, optional=True),
        number("threshold", "--threshold", low=0.0, high=1.0, low_open=False, optional=True),
        whole("batch_rows", "--batch-rows", minimum=1),
        whole("batch_size", "--batch-size", minimum=1, optional=True),
        _check_top_k,
    )


__all__ = ["BUNDLE_SUFFIX", "CLASS_METRICS", "HEADS", "VALUE_METRICS", "FitConfig", "PredictConfig"]

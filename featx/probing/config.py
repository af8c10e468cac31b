"""``ProbeConfig``: every option of a probing run, the single object the CLI builds; frozen, and checked
when made by its ``CONSTRAINTS`` table (``featx.options``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..checks import names, numbers, path_like, spelled, text, whole
from ..errors import InputError
from ..options import Check, Options, option, quiet_option, spoken, spoken_value
from ..selection import check_layer_spelling
from .shared_options import (
    bootstrap_option,
    check_folds,
    check_group,
    check_join,
    check_join_needs_labels,
    check_seed,
    control_option,
    folds_option,
    group_option,
    join_option,
    seed_option,
)
from .solvers.devices import check_device
from .tasks.structural_checks import STRUCTURAL_MODES, check_structural

CLASSIFIERS = ("logreg", "svm", "mlp", "attn")
REGRESSION_ONLY = ("ridge",)  # accepted by --classifier, refused for a classification label
TASKS = ("auto", "classification", "regression")
LABEL, PROBES, EVALUATION = "Label and task", "Layers, poolings and probes", "Evaluation"
OUTPUT, COMPUTE = "Output and analyses", "Compute"
# The L2 strengths of the ridge probe searched inside every training fold (features are standardised).
DEFAULT_ALPHAS = (1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
# The inverse regularisation strengths searched inside every training fold (features are standardised).
DEFAULT_CS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


def check_jobs(config) -> None:
    """``jobs`` is not 0 (None: one per core; -1 too)."""
    if config.jobs is not None and int(config.jobs) == 0:
        raise InputError(
            f"{spoken_value(config, 'jobs', config.jobs, '--jobs')} runs nothing",
            "use a positive number, or -1 for one job per core",
        )


def _check_layer_spelling(config: ProbeConfig) -> None:
    check_layer_spelling(config.layers, "--layer", config=config)


def _check_task(config: ProbeConfig) -> None:
    if str(config.task).lower() not in TASKS:
        raise InputError(
            f"{spoken_value(config, 'task', config.task)} is not known", "choose classification, regression or auto"
        )


def _check_classifiers(config: ProbeConfig) -> None:
    parts = config.classifiers if isinstance(config.classifiers, (list, tuple)) else str(config.classifiers).split(",")
    chosen: list[str] = []
    for name in (str(part).strip().lower() for part in parts):
        if not name:
            continue
        if name not in CLASSIFIERS + REGRESSION_ONLY:
            raise InputError(
                f"classifier '{name}' is not available",
                f"choose from {', '.join(CLASSIFIERS)} (ridge: numeric labels), e.g. "
                + spoken_value(config, "classifiers", "logreg,mlp", "--classifier"),
            )
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise InputError("--classifier selects nothing", f"choose from {', '.join(CLASSIFIERS)}")
    object.__setattr__(config, "classifiers", tuple(chosen))


def _check_device(config: ProbeConfig) -> None:
    check_device(config.device)  # imports torch only for a GPU asked for by name


def _check_arcs(config: ProbeConfig) -> None:
    if config.arcs and config.labels is not None:
        raise InputError("--arcs probes the stored word labels, not --labels", "leave --labels out")


def _check_group(config: ProbeConfig) -> None:
    """``--group`` names another column than the label, of sentence rows (word probes fold by sentence)."""
    check_group(config)
    if config.group is not None and config.arcs:
        raise InputError("--group applies to sentence labels: arc probes already fold by sentence", "leave out --group")


def check_labels_file(config) -> None:
    """``--labels sentiment`` (a column name, where ``--label`` was meant) is refused as what it likely is
    (shared by probe and its ``--sweep``)."""
    given = config.labels
    if isinstance(given, (str, Path)) and not Path(given).suffix and not Path(given).exists():
        raise InputError(
            f"{spoken_value(config, 'labels', given, '--labels')}: no such label file "
            f"({spoken(config, 'labels', '--labels')} joins a file of label columns)",
            f"to probe a stored label column, use {spoken_value(config, 'label', str(given), '--label')} (singular)",
        )


def _check_train_sizes(config: ProbeConfig) -> None:
    if config.train_sizes is not None:
        from .analyses.curves import parse_train_sizes

        parse_train_sizes(config.train_sizes)


def _check_metric(config: ProbeConfig) -> None:
    """A known ``--metric`` name (whether it fits the label's task is checked once the task is known)."""
    if config.metric is None:
        return
    from .evaluation.selection import METRICS

    name = str(config.metric).strip().lower()
    if name not in METRICS:
        raise InputError(
            f"{spoken_value(config, 'metric', config.metric)} is not known",
            "choose accuracy, macro_f1 or balanced_accuracy for classes; r2, pearson or spearman for a number",
        )
    object.__setattr__(config, "metric", name)


def _at_least(minimum: int, flag: str) -> str:
    return f"give {flag} a value of at least {minimum}"


def _check_curve_layers(config: ProbeConfig) -> None:
    if config.curve_layers is not None and config.train_sizes is None:
        named = spoken(config, "curve_layers")
        raise InputError(
            f"{named} applies to {spoken(config, 'train_sizes')} only",
            f"add {spoken_value(config, 'train_sizes', '0.1,0.25,0.5,1.0')}, or leave {named} out",
        )


# The bootstrap size, checked alike by every probing command (as --folds and --seed are: shared_options).
# The bootstrap holds n_bootstrap resamples of the test rows at once, so it is bounded (10**5 keeps a 10,000-row
# test part under a few GB).
MAX_BOOTSTRAP = 100_000
check_bootstrap = whole(  # --n-bootstrap (shared_options.bootstrap_option), n_bootstrap from Python
    "n_bootstrap",
    "--n-bootstrap",
    minimum=1,
    maximum=MAX_BOOTSTRAP,
    hint=lambda config: _at_least(1, spoken(config, "n_bootstrap", "--n-bootstrap")),
)


@dataclass(frozen=True)
class ProbeConfig(Options):
    """Options of ``featx.probe``: each field is the ``featx probe`` flag of the same name (``layers`` is
    ``--layer``, ``poolings`` ``--pooling``, ``classifiers`` ``--classifier``, ``sites`` ``--site``).

    Checked when made (a bad value is an ``InputError`` naming the flag); ``classifiers`` and ``sites``
    are stored as tuples of names without repeats. ``dataclasses.replace`` makes a checked copy.
    """

    features: str | Path | None = None  # None: the last extraction remembered in this directory
    label: str | None = option(
        None, flag="--label", group=LABEL, help="Label column to probe (default: 'label', else the first one)."
    )
    labels: str | Path | None = option(
        None,
        flag="--labels",
        group=LABEL,
        kind="path",
        help="A file of label columns (CSV/TSV/JSONL) joined to the stored rows, instead of the stored labels.",
    )
    join: str = join_option(LABEL)
    bins: int | None = option(
        None,
        flag="--bins",
        group=LABEL,
        help="Probe a numeric sentence label as N quantile bins (under a split, of its train and val rows' values); "
        "a word label ignores it, with a note.",
    )
    min_class_rows: int | None = option(
        None, flag="--min-class-rows", group=LABEL, help="Drop classes with fewer labelled rows (reported)."
    )
    layers: str = option(
        "all",
        flag="--layer",
        listed=True,
        group=PROBES,
        help="all, 0,3,6, -4:, cat(-4:) (concatenated), stack (one probe per layer + meta classifier).",
    )
    poolings: str = option(
        "all", flag="--pooling", listed=True, group=PROBES, help="all or a list of the stored poolings."
    )
    sites: str | list[str] | tuple[str, ...] = option(
        "hidden",
        flag="--site",
        listed=True,
        group=PROBES,
        help="Stored sites to probe side by side, e.g. hidden,ffn,attn_out, or all (every stored site; see featx "
        "extract --site). A word label reads the hidden states only.",
    )
    classifiers: str | list[str] | tuple[str, ...] = option(
        "logreg",
        flag="--classifier",
        listed=True,
        group=PROBES,
        help="Any of logreg,svm,mlp,attn; ridge for a continuous label.",
    )
    folds: int = folds_option(EVALUATION)
    seed: int = seed_option(
        EVALUATION, "the control permutation", "the heads", "the learning curves' subsets", "MDL's row order"
    )
    balanced: bool = option(False, flag="--balanced", group=EVALUATION, help="Balanced class weights.")
    group: str | None = group_option(EVALUATION)
    control: bool = control_option(EVALUATION)
    lexical: bool = option(  # the lexical baseline row of sentence-level runs (TF-IDF n-grams; tasks/lexical.py)
        True,
        flag="--no-lexical",
        negate=True,
        group=EVALUATION,
        help="Skip the lexical baseline of sentence labels (TF-IDF word and character n-grams).",
    )
    baseline: str | Path | None = option(
        None,
        flag="--baseline",
        group=EVALUATION,
        help="A second features file of the same rows and prompts (e.g. from --random-init) probed side by side.",
    )
    output: str | Path | None = option(  # None: beside the features file
        None,
        flag=("-o", "--output"),
        group=OUTPUT,
        kind="str",
        help="Results prefix: writes PREFIX.csv, PREFIX.json and PREFIX.predictions.csv (default: FEATURES stem + "
        ".LABEL.probe.csv and .json, and .LABEL.predictions.csv).",
    )
    jobs: int | None = option(
        None, flag="--jobs", group=COMPUTE, help="Parallel (layer spec x pooling) jobs (default: one per core)."
    )
    allow_partial: bool = option(
        False, flag="--allow-partial", group=COMPUTE, help="Probe the rows written so far of an unfinished extraction."
    )
    cs: tuple[float, ...] = DEFAULT_CS  # the C grid of logreg probes
    n_bootstrap: int = bootstrap_option(
        EVALUATION,
        also="Learning-curve points take at most 200. Above 1000 it is also the number of random patterns of a "
        "paired test that cannot count them all (R², macro-F1, balanced accuracy, Pearson or Spearman over more "
        "than 16 differing rows or groups); accuracy's tests count every pattern.",
    )
    write: bool = True
    has_group: bool = True  # False: a caller without --group (featx lens); the repeated-text note names none
    mdl: bool = option(
        False,
        flag="--mdl",
        group=OUTPUT,
        help="Also the MDL online codelength (bits) and compression per layer and pooling, beside the control "
        "task's (the same code on its labels; not with --no-control) and their difference in bits.",
    )
    train_sizes: str | list | None = option(
        None,
        flag="--train-sizes",
        listed=True,
        group=OUTPUT,
        help="Learning curves: fractions of each training part (0.1,0.25,0.5,1.0) or row counts; each size beside "
        "its baseline (the majority class or training mean on the same rows); written to PREFIX.curve.csv.",
    )
    curve_layers: str | None = option(
        None,
        flag="--curve-layers",
        listed=True,
        group=OUTPUT,
        help="Layers of the learning curves (default: every layer probed).",
    )
    predictions: str | None = option(
        None,
        flag="--predictions",
        group=OUTPUT,
        help="POOLING[/CLASSIFIER] of the per-row predictions file (default: those of the best layer).",
    )
    progress: bool = quiet_option(OUTPUT)
    task: str = option(
        "auto",
        flag="--task",
        group=LABEL,
        choices=TASKS,
        help="auto: a numeric label with many distinct values is regression (ridge, R²), else classes.",
    )
    alphas: tuple[float, ...] = DEFAULT_ALPHAS  # the ridge grid of regression probes
    arcs: bool = option(
        False,
        flag="--arcs",
        group=PROBES,
        help="Word-level arc probes: --label deprel (relation of each head-dependent pair) or --label head "
        "(is a word pair an arc).",
    )
    device: str = option(
        "auto",
        flag="--device",
        group=COMPUTE,
        help="Torch device the logreg probes are solved on: auto (a CUDA GPU when torch sees one, else the CPU), "
        "cpu, cuda or cuda:N. Only the logistic solver moves; on a GPU, jobs take turns unless --jobs is given.",
    )
    metric: str | None = option(
        None,
        flag="--metric",
        group=EVALUATION,
        help="What the best layer, pooling and classifier are chosen in (on the training part, never the test "
        "rows), tested in and compared with the control and baselines in: accuracy (default), macro_f1 or "
        "balanced_accuracy for classes; r2 (default), pearson or spearman for a number.",
    )
    structural: str | None = option(
        None,
        flag="--structural",
        group=PROBES,
        choices=STRUCTURAL_MODES,
        help="Instead of a label: structural probes of the stored dependency trees (Hewitt & Manning 2019), distance "
        "(UUAS, DSpr; beside the linear chain) or depth (root accuracy, NSpr; beside word position).",
    )
    rank: int | None = option(None, flag="--rank", group=PROBES, help="Rank of a structural probe (default 64).")

    # Every constraint on the options, in the order they are checked.
    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like(
            "features",
            what="featx.probe takes a features file path (the .h5 file featx extract writes)",
            hint="featx.extract(corpus, output='feats.h5') writes one from a corpus file; in-memory texts: "
            "featx.embed(texts) gives their features, "
            "or probe them with featx.sklearn.HiddenStates and a scikit-learn classifier",
        ),
        path_like("labels", "baseline", "output"),
        text("label", "label", optional=True, example="name a stored label column, e.g. label='sentiment'"),
        spelled("layers", "layers", example="e.g. layers='all', layers=3 or layers=[1, 2]"),
        spelled("poolings", "poolings", example="e.g. poolings='mean' or poolings=['mean', 'cls']"),
        _check_layer_spelling,
        check_seed,
        check_bootstrap,
        check_folds,
        check_jobs,
        numbers("cs", None),  # as featx fit checks its grids
        _check_task,
        numbers("alphas", None),
        _check_classifiers,
        names("sites", "--site", example="e.g. --site hidden,ffn,attn_out"),
        _check_device,
        check_join,
        _check_arcs,
        _check_group,
        check_labels_file,
        check_join_needs_labels,
        whole("bins", "--bins", minimum=2, optional=True, hint=_at_least(2, "--bins")),
        whole("min_class_rows", "--min-class-rows", minimum=1, optional=True, hint=_at_least(1, "--min-class-rows")),
        _check_train_sizes,
        _check_curve_layers,
        _check_metric,
        check_structural,
    )

    def classifier_list(self) -> list[str]:
        """The classifiers asked for, lower-case, in order, without repeats."""
        return list(self.classifiers)

    def site_list(self) -> list[str]:
        """The stored sites to probe, in order, without repeats."""
        return list(self.sites)

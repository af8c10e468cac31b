"""``ProbeConfig``: every option of a probing run, the single object the CLI builds; frozen, and checked
when made by its ``CONSTRAINTS`` table (``featx.options``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..errors import InputError
from ..options import MAX_SEED, Check, Options, names, one_of, path_like, requires, spelled, text, whole
from .solvers.devices import check_device

CLASSIFIERS = ("logreg", "svm", "mlp", "attn")
REGRESSION_ONLY = ("ridge",)  # accepted by --classifier, refused for a classification label
TASKS = ("auto", "classification", "regression")
# The L2 strengths of the ridge probe searched inside every training fold (features are standardised).
DEFAULT_ALPHAS = (1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
# The inverse regularisation strengths searched inside every training fold (features are standardised).
DEFAULT_CS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


def check_folds(config) -> None:
    """``folds`` is at least 2 (shared by every command that cross-validates)."""
    if int(config.folds) < 2:
        raise InputError(f"--folds {config.folds} is too small", "use at least 2 folds (default 5)")


def check_jobs(config) -> None:
    """``jobs`` is not 0 (None: one per core; -1 too)."""
    if config.jobs is not None and int(config.jobs) == 0:
        raise InputError("--jobs 0 runs nothing", "use a positive number, or -1 for one job per core")


def _positive_grid(name: str, what: str):
    def check(config: ProbeConfig) -> None:
        grid = getattr(config, name)
        if not grid or any(float(value) <= 0 for value in grid):
            raise InputError(f"{what} must hold positive values")

    return check


def _check_task(config: ProbeConfig) -> None:
    if str(config.task).lower() not in TASKS:
        raise InputError(f"--task {config.task} is not known", "choose classification, regression or auto")


def _check_classifiers(config: ProbeConfig) -> None:
    parts = config.classifiers if isinstance(config.classifiers, (list, tuple)) else str(config.classifiers).split(",")
    chosen: list[str] = []
    for name in (str(part).strip().lower() for part in parts):
        if not name:
            continue
        if name not in CLASSIFIERS + REGRESSION_ONLY:
            raise InputError(f"classifier '{name}' is not available: choose from {', '.join(CLASSIFIERS)}")
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
            f"--metric {config.metric} is not known",
            "choose accuracy, macro_f1 or balanced_accuracy for classes; r2, pearson or spearman for a number",
        )
    object.__setattr__(config, "metric", name)


def _at_least(minimum: int, flag: str) -> str:
    return f"give {flag} a value of at least {minimum}"


# The seed and the bootstrap size, checked alike by every probing command.
# A seed is at most MAX_SEED (what numpy and scikit-learn take); the bootstrap holds n_bootstrap resamples of
# the test rows at once, so it is bounded (10**5 keeps a 10,000-row test part under a few GB).
MAX_BOOTSTRAP = 100_000
check_seed = whole("seed", "--seed", minimum=0, maximum=MAX_SEED, hint=_at_least(0, "--seed"))
check_bootstrap = whole(
    "n_bootstrap", "n_bootstrap", minimum=1, maximum=MAX_BOOTSTRAP, hint=_at_least(1, "n_bootstrap")
)


@dataclass(frozen=True)
class ProbeConfig(Options):
    """Options of ``featx.probe``: each field is the ``featx probe`` flag of the same name (``layers`` is
    ``--layer``, ``poolings`` ``--pooling``, ``classifiers`` ``--classifier``, ``sites`` ``--site``).

    Checked when made (a bad value is an ``InputError`` naming the flag); ``classifiers`` and ``sites``
    are stored as tuples of names without repeats. ``dataclasses.replace`` makes a checked copy.
    """

    features: str | Path | None = None  # None: the last extraction remembered in this directory
    label: str | None = None  # None: "label" if present, else the first label column
    labels: str | Path | None = None  # a file of label columns joined to the stored rows (--labels)
    join: str = "id"  # how --labels rows match stored rows: id, or row (data row numbers)
    bins: int | None = None  # probe a numeric label as this many quantile bins
    min_class_rows: int | None = None  # drop classes with fewer labelled rows
    layers: str = "all"
    poolings: str = "all"
    sites: str | list[str] | tuple[str, ...] = "hidden"  # stored sites to probe side by side (extraction/sites.py)
    classifiers: str | list[str] | tuple[str, ...] = "logreg"
    folds: int = 5
    seed: int = 0
    balanced: bool = False
    control: bool = True
    lexical: bool = True  # the lexical baseline row of sentence-level runs (TF-IDF n-grams; tasks/lexical.py)
    baseline: str | Path | None = None
    output: str | Path | None = None  # prefix of the .csv/.json results; None: beside the features file
    jobs: int | None = None  # parallel (layer spec x pooling) jobs; None: one per core
    allow_partial: bool = False
    cs: tuple[float, ...] = DEFAULT_CS  # the C grid of logreg probes
    n_bootstrap: int = 1000
    write: bool = True
    mdl: bool = False  # also the online (MDL) codelength per layer spec and pooling
    train_sizes: str | list | None = None  # learning curves: fractions of each training part, or row counts
    curve_layers: str | None = None  # layers of the learning curves (default: every single layer probed)
    predictions: str | None = None  # "POOLING/CLASSIFIER" of the per-row predictions file (default: the best's)
    progress: bool = False
    task: str = "auto"  # classification, regression, or auto (a numeric label with many distinct values)
    alphas: tuple[float, ...] = DEFAULT_ALPHAS  # the ridge grid of regression probes
    arcs: bool = False  # word-level arc probes: --label deprel (relation of each arc) or head (arc or not)
    device: str = "auto"  # where logreg probes are solved: auto (a CUDA GPU if torch sees one), cpu, cuda, cuda:N
    metric: str | None = None  # what the best row is chosen and tested in; None: accuracy, or r2 for a number

    # Every constraint on the options, in the order they are checked.
    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like(
            "features",
            "featx.probe takes a features file path (the .h5 file featx extract writes)",
            "featx.extract(corpus, output='feats.h5') writes one from a corpus file; in-memory texts: "
            "featx.embed(texts) gives their features, "
            "or probe them with featx.sklearn.HiddenStates and a scikit-learn classifier",
        ),
        text("label", "label", optional=True, example="name a stored label column, e.g. label='sentiment'"),
        spelled("layers", "layers", example="e.g. layers='all', layers=3 or layers=[1, 2]"),
        spelled("poolings", "poolings", example="e.g. poolings='mean' or poolings=['mean', 'cls']"),
        check_seed,
        check_bootstrap,
        check_folds,
        check_jobs,
        _positive_grid("cs", "the C grid"),
        _check_task,
        _positive_grid("alphas", "the ridge alpha grid"),
        _check_classifiers,
        names("sites", "--site", example="e.g. --site hidden,ffn,attn_out"),
        _check_device,
        one_of("join", "--join", ("id", "row"), hint="use --join id or --join row"),
        _check_arcs,
        requires("join", "--join", "labels", "--labels", default="id", hint="add --labels FILE, or leave --join out"),
        whole("bins", "--bins", minimum=2, optional=True, hint=_at_least(2, "--bins")),
        whole("min_class_rows", "--min-class-rows", minimum=1, optional=True, hint=_at_least(1, "--min-class-rows")),
        _check_train_sizes,
        _check_metric,
    )

    def classifier_list(self) -> list[str]:
        """The classifiers asked for, lower-case, in order, without repeats."""
        return list(self.classifiers)

    def site_list(self) -> list[str]:
        """The stored sites to probe, in order, without repeats."""
        return list(self.sites)

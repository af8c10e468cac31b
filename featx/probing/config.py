"""``ProbeConfig``: every option of a probing run, the single object the CLI builds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, require_whole
from .solvers.devices import check_device

CLASSIFIERS = ("logreg", "svm", "mlp", "attn")
REGRESSION_ONLY = ("ridge",)  # accepted by --classifier, refused for a classification label
TASKS = ("auto", "classification", "regression")
# The L2 strengths of the ridge probe searched inside every training fold (features are standardised).
DEFAULT_ALPHAS = (1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
# The inverse regularisation strengths searched inside every training fold (features are standardised).
DEFAULT_CS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


@dataclass
class ProbeConfig:
    """Options of ``featx.probe``; see the README's Probe section for their meaning."""

    features: str | Path | None = None  # None: the last extraction remembered in this directory
    label: str | None = None  # None: "label" if present, else the first label column
    labels: str | Path | None = None  # a file of label columns joined to the stored rows (--labels)
    join: str = "id"  # how --labels rows match stored rows: id, or row (data row numbers)
    bins: int | None = None  # probe a numeric label as this many quantile bins
    min_class_rows: int | None = None  # drop classes with fewer labelled rows
    layers: str = "all"
    poolings: str = "all"
    sites: str | list[str] = "hidden"  # which stored sites to probe (featx/sites.py), side by side
    classifiers: str | list[str] = "logreg"
    folds: int = 5
    seed: int = 0
    balanced: bool = False
    control: bool = True
    baseline: str | Path | None = None
    output: str | Path | None = None  # prefix of the .csv/.json results; None: beside the features file
    jobs: int | None = None  # parallel (layer spec x pooling) jobs; None: one per core
    allow_partial: bool = False
    cs: tuple[float, ...] = DEFAULT_CS
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

    def classifier_list(self) -> list[str]:
        names = self.classifiers if isinstance(self.classifiers, (list, tuple)) else str(self.classifiers).split(",")
        chosen: list[str] = []
        for name in (str(part).strip().lower() for part in names):
            if not name:
                continue
            if name not in CLASSIFIERS + REGRESSION_ONLY:
                raise InputError(f"classifier '{name}' is not available: choose from {', '.join(CLASSIFIERS)}")
            if name not in chosen:
                chosen.append(name)
        if not chosen:
            raise InputError("--classifier selects nothing", f"choose from {', '.join(CLASSIFIERS)}")
        return chosen

    def site_list(self) -> list[str]:
        names = self.sites if isinstance(self.sites, (list, tuple)) else str(self.sites).split(",")
        chosen = list(dict.fromkeys(str(name).strip() for name in names if str(name).strip()))
        if not chosen:
            raise InputError("--site selects nothing", "e.g. --site hidden,ffn,attn_out")
        return chosen

    def validate(self) -> None:
        require_whole(self.seed, "--seed", minimum=0)
        require_whole(self.n_bootstrap, "n_bootstrap", minimum=1)
        if int(self.folds) < 2:
            raise InputError(f"--folds {self.folds} is too small", "use at least 2 folds (default 5)")
        if self.jobs is not None and int(self.jobs) == 0:
            raise InputError("--jobs 0 runs nothing", "use a positive number, or -1 for one job per core")
        if not self.cs or any(float(c) <= 0 for c in self.cs):
            raise InputError("the C grid must hold positive values")
        if str(self.task).lower() not in TASKS:
            raise InputError(f"--task {self.task} is not known", "choose classification, regression or auto")
        if not self.alphas or any(float(a) <= 0 for a in self.alphas):
            raise InputError("the ridge alpha grid must hold positive values")
        self.classifier_list()
        self.site_list()
        check_device(self.device)  # imports torch only for a GPU asked for by name
        if str(self.join).strip().lower() not in ("id", "row"):
            raise InputError(f"--join '{self.join}' is not understood", "use --join id or --join row")
        if self.arcs and self.labels is not None:
            raise InputError("--arcs probes the stored word labels, not --labels", "leave --labels out")
        if self.join != "id" and self.labels is None:
            raise InputError("--join applies to --labels only", "add --labels FILE, or leave --join out")
        if self.bins is not None:
            require_whole(self.bins, "--bins", minimum=2)
        if self.min_class_rows is not None:
            require_whole(self.min_class_rows, "--min-class-rows", minimum=1)
        if self.train_sizes is not None:
            from .analyses.curves import parse_train_sizes

            parse_train_sizes(self.train_sizes)

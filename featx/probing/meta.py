"""``ProbeMeta``: the metadata of one probing run, typed, and its JSON form (the ``meta`` of the results
JSON).

The task (classification or regression) and the level (sentence, word, arc) are typed fields; which keys
the JSON holds follows from them, in one place (``to_dict``): classification runs list their classes and
C grid, regression runs their target and alpha grid, word runs their sentences and layer summaries,
sentence pairs their pair mode and cosine baseline. ``from_dict`` reads a results JSON's meta back, older
files too (missing keys take their defaults, unknown keys are kept as they are).

A ``ProbeMeta`` reads like the dict it is written as (``meta["label"]``, ``meta.get("level")``), so the
report code takes a live run's metadata and a loaded file's alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .. import store
from ..errors import StoreError
from ..json_fields import ANY, LIST, OBJECT, TEXT, WHOLE, Field, FieldTable, fields, rows_with, shown

FILE_KEYS = (store.schema.MODEL, store.schema.MODEL_SHA256, store.schema.CORPUS_PATH, store.schema.CORPUS_SHA256)
PAIR_KEYS = ("pair_mode", "pair_feature", "cosine_baseline")
SOLVER_KEYS = ("solver", "solver_device", "solver_gpu")
VERSION_SUFFIX = "_version"

# The meta fields that the readers of a results file (featx report, plot, compare, explain) compute with, and the JSON
# type each holds (null, or the key absent, always reads). A file edited by hand, or someone else's, with another
# type there is refused naming the field, not left to fail inside a figure or a table.
_TEXT_LISTS = ("classifiers", "poolings", "sites", "layer_specs")  # joined into the report's run table
META_FIELDS = FieldTable(
    (
        *fields(TEXT, "features_file", "label", "task", "level", "evaluation", "metric", "pair_mode", nullable=True),
        *fields(TEXT, "predictions_for", "predictions_layer", nullable=True),
        *fields(WHOLE, "n_rows", "n_labelled", "n_missing_labels", "n_unlabelled", nullable=True),
        *fields(WHOLE, "n_dev", "n_sentences", "n_words", nullable=True),
        *fields(WHOLE, "seed", "folds", "n_groups", "n_bootstrap", nullable=True),
        *fields(LIST, "label_names", *_TEXT_LISTS, "notes", "train_sizes", nullable=True),
        *(Field((name, ANY), TEXT) for name in _TEXT_LISTS),
        Field(("cosine_baseline",), rows_with("pooling", "layer"), nullable=True),
        *fields(
            OBJECT, "class_counts", "target", "layer_summary", "lexical", "selected", "best_on_test", nullable=True
        ),
    ),
    name="meta",
)


def checked_meta(meta: Any, where: Any) -> dict[str, Any]:
    """The ``meta`` object of the results JSON ``where``, each field of :data:`META_FIELDS` of its JSON type
    (StoreError naming the first that is not)."""
    if not isinstance(meta, dict):
        raise StoreError(
            f"{where}: its meta is {shown(meta)}, not an object; it is not a featx results file",
            "give the .probe.json or .probe.csv file written by featx probe",
        )
    META_FIELDS.check(meta, str(where), "write it again with featx probe, or correct that field", StoreError)
    return meta


class _Named(str, Enum):
    """An enumeration whose members are their string values (in tables, JSON and f-strings)."""

    def __str__(self) -> str:
        return str(self.value)


class Task(_Named):
    """What a probe predicts: classes, or a number."""

    CLASSIFICATION = "classification"
    REGRESSION = "regression"


class Level(_Named):
    """What a probed item is: a text (sentence or pair), a word, or a (head, dependent) pair of words."""

    SENTENCE = "sentence"
    WORD = "word"
    ARC = "arc"

    @property
    def is_words(self) -> bool:
        return self is not Level.SENTENCE


def package_versions() -> dict[str, str | None]:
    """The versions of featx and the numeric packages behind a run (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    import numpy as np

    from .._version import __version__

    out: dict[str, str | None] = {"featx": __version__, "numpy": np.__version__}
    for package, key in (("scikit-learn", "sklearn"), ("torch", "torch")):
        try:
            out[key] = version(package)
        except PackageNotFoundError:
            out[key] = None
    return out


def file_meta(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The model and corpus records of a features file (its attributes)."""
    return {key: attrs.get(key) for key in FILE_KEYS}


def _moved(out: dict[str, Any], keys: list[str], after: str) -> dict[str, Any]:
    """``out`` with ``keys`` moved to just after the key ``after``."""
    rest = [key for key in out if key not in keys]
    position = rest.index(after) + 1
    return {key: out[key] for key in rest[:position] + keys + rest[position:]}


@dataclass(frozen=True, eq=False)
class ProbeMeta(Mapping[str, Any]):
    """The metadata of one probing run; ``to_dict`` is its JSON form."""

    task: Task
    level: Level
    features_file: str
    label: str
    n_rows: int
    n_labelled: int
    n_missing_labels: int  # the stored rows not probed: without a label, or left out for a reason a note gives
    evaluation: str
    folds: int | None
    n_dev: int
    seed: int
    classifiers: list[str]
    poolings: list[str]
    sites: list[str]
    layer_specs: list[str]
    control: bool
    jobs: int
    seconds: float
    notes: list[str]
    predictions_for: str = ""
    # the layer chosen on training rows among the predictions file's own (hidden-state single) layers
    predictions_layer: str | None = None
    mdl: bool = False
    # of n_missing_labels, the rows without a label; the others have one and a note says why they were left out (a
    # split value featx does not use, a class --min-class-rows drops). None: a word run, or a file written before it
    n_unlabelled: int | None = None
    train_sizes: list[float] | None = None
    group: str | None = None  # --group: the column whose groups the folds, holdouts and resamples keep whole
    labels_file: str | None = None  # --labels: the file of label columns joined to the stored rows (by ``join``)
    join: str | None = None
    n_groups: int | None = None
    n_bootstrap: int | None = None  # the resamples of a split's intervals (--n-bootstrap; None: a file before it)
    file: dict[str, Any] = field(default_factory=dict)  # model and corpus records of the features file
    versions: dict[str, str | None] = field(default_factory=dict)
    solver: dict[str, str] = field(default_factory=dict)  # where the logistic probes were solved
    # classification
    label_names: list[str] = field(default_factory=list)
    class_counts: dict[str, int] = field(default_factory=dict)
    cs: list[float] = field(default_factory=list)
    balanced: bool = False
    bins: dict[str, Any] | None = None  # --bins: the edges and the rows whose values drew them (label_classes.Bins)
    # regression
    target: dict[str, float] = field(default_factory=dict)
    alphas: list[float] = field(default_factory=list)
    # the --baseline features file (word-level runs: written only when given)
    baseline_file: str | None = None
    baseline_model: str | None = None
    # word-level runs
    n_sentences: int = 0
    n_words: int = 0
    control_task: str = ""
    layer_summary: dict[str, Any] = field(default_factory=dict)
    # sentence pairs: pair_mode, pair_feature and (separate mode) cosine_baseline
    pairs: dict[str, Any] = field(default_factory=dict)
    # sentence-level runs: the lexical baseline (tasks.lexical; None: turned off, or no texts)
    lexical: dict[str, Any] | None = None
    # the metric of the run (--metric) and its best row chosen on training rows vs the best on the test rows
    metric: str = ""
    selected: dict[str, Any] | None = None
    best_on_test: dict[str, Any] | None = None
    optimism: float | None = None  # best_on_test's test score minus selected's
    # the companion files, once written
    predictions_file: str | None = None
    curve_file: str | None = None
    rows_sha256: str | None = None  # the tested rows' digest (tasks/tested_rows.py): what compare pairs files by
    extra: dict[str, Any] = field(default_factory=dict)  # keys of other (older or newer) files, kept

    @property
    def is_classification(self) -> bool:
        return self.task is Task.CLASSIFICATION

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the keys a run of this task and level writes, nothing else."""
        out: dict[str, Any] = {"features_file": self.features_file, **self.file}
        words, classes = self.level.is_words, self.is_classification
        if not classes:
            out["task"] = self.task.value
        out["label"] = self.label
        if self.labels_file is not None:
            out.update(labels_file=self.labels_file, join=self.join)
        if words:
            out["level"] = self.level.value
        if classes:
            out.update(label_names=self.label_names, class_counts=self.class_counts)
            if self.bins is not None:
                out["bins"] = self.bins
        else:
            out["target"] = self.target
        out.update(n_rows=self.n_rows, n_labelled=self.n_labelled, n_missing_labels=self.n_missing_labels)
        if self.n_unlabelled is not None:
            out["n_unlabelled"] = self.n_unlabelled
        if words:
            out.update(n_sentences=self.n_sentences, n_words=self.n_words)
        out.update(self._run_keys(words, classes))
        out.update(self._closing_keys())
        # Where the word and regression runs have always written some keys (the JSON's order kept).
        if words:
            out = _moved(out, ["mdl"], after="control")
            out = _moved(out, [key for key in SOLVER_KEYS if key in out], after="notes")
        elif not classes:
            out = _moved(out, [key for key in PAIR_KEYS if key in out], after="train_sizes")
        return out

    def _run_keys(self, words: bool, classes: bool) -> dict[str, Any]:
        """The keys of how the run was made: evaluation, grids, control, baseline file, workers."""
        out: dict[str, Any] = {
            "evaluation": self.evaluation,
            "folds": self.folds,
            **({"group": self.group, "n_groups": self.n_groups} if self.group is not None else {}),
            "n_dev": self.n_dev,
            "seed": self.seed,
            **({"n_bootstrap": self.n_bootstrap} if self.n_bootstrap is not None else {}),
            "classifiers": self.classifiers,
            "poolings": self.poolings,
            "sites": self.sites,
            "layer_specs": self.layer_specs,
        }
        if classes:
            out.update(cs=self.cs, balanced=self.balanced)
        else:
            out["alphas"] = self.alphas
        out["control"] = self.control
        if words:
            out.update(control_task=self.control_task, layer_summary=self.layer_summary)
            if self.baseline_file is not None:
                out.update(baseline_file=self.baseline_file, baseline_model=self.baseline_model)
        else:
            out["baseline_file"] = self.baseline_file
            if classes:
                out["baseline_model"] = self.baseline_model
        out["jobs"] = self.jobs
        out.update(self.solver)
        return out

    def _closing_keys(self) -> dict[str, Any]:
        """Timing, versions, notes and the companion files."""
        out: dict[str, Any] = {
            "seconds": self.seconds,
            **{f"{name}{VERSION_SUFFIX}": value for name, value in self.versions.items()},
            "notes": self.notes,
            "predictions_for": self.predictions_for,
            **({"predictions_layer": self.predictions_layer} if self.predictions_layer is not None else {}),
            **self.pairs,
            "mdl": self.mdl,
            "train_sizes": self.train_sizes,
        }
        if not self.level.is_words:
            out["lexical"] = self.lexical
        if self.metric:
            out.update(metric=self.metric, selected=self.selected, best_on_test=self.best_on_test)
            out["optimism"] = self.optimism
        for key in ("predictions_file", "curve_file", "rows_sha256"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, meta: Mapping[str, Any]) -> ProbeMeta:
        """A results JSON's meta, of this or an older featx (missing keys take their defaults)."""
        known = {name for name in cls.__dataclass_fields__ if name not in ("file", "versions", "solver", "pairs")}
        grouped = set(FILE_KEYS) | set(PAIR_KEYS) | set(SOLVER_KEYS) | {"task", "level"}
        values = {key: value for key, value in meta.items() if key in known - {"task", "level", "extra"}}
        extra = {
            key: value
            for key, value in meta.items()
            if key not in known and key not in grouped and not key.endswith(VERSION_SUFFIX)
        }
        defaults: dict[str, Any] = {
            "features_file": "",
            "label": "",
            **{name: 0 for name in ("n_rows", "n_labelled", "n_missing_labels", "n_dev", "seed", "jobs")},
            "evaluation": "",
            "folds": None,
            "control": False,
            "seconds": 0.0,
            **{name: [] for name in ("classifiers", "poolings", "sites", "layer_specs", "notes")},
        }
        return cls(
            task=Task(meta.get("task") or Task.CLASSIFICATION),
            level=Level(meta.get("level") or Level.SENTENCE),
            **{**defaults, **values},
            file={key: meta[key] for key in FILE_KEYS if key in meta},
            versions={
                key[: -len(VERSION_SUFFIX)]: value for key, value in meta.items() if key.endswith(VERSION_SUFFIX)
            },
            solver={key: meta[key] for key in SOLVER_KEYS if key in meta},
            pairs={key: meta[key] for key in PAIR_KEYS if key in meta},
            extra=extra,
        )

    # -- read like the JSON dict ---------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

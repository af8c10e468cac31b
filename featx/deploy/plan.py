"""``FitPlan``: what a ``FitConfig`` resolves to against its features file, before any fitting: the label and
task, the training and test rows, the (layer spec, pooling) candidates, the metric chosen on, and the
extraction settings the bundle needs to recompute features from texts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import store
from ..errors import InputError
from ..options import Placeholder, spoken, spoken_command, spoken_value
from ..probing import (
    HEAD_LABEL,
    Groups,
    check_group_count,
    check_split_groups,
    default_label,
    group_rows,
    note_shared_texts,
    refuse_word_group,
    resolve_task,
    stored_column,
)
from ..safe_files import loads_json
from ..selection import LayerSpec, parse_layer_specs, parse_poolings
from ..state import given_or_last
from ..store import FeatureFile
from .config import BUNDLE_SUFFIX, CLASS_METRICS, VALUE_METRICS, FitConfig
from .rows import classes_of_training, dev_rows, kept_in_split, split_rows

# The features file's records a bundle keeps: how to run the model again on new texts.
EXTRACTION_ATTRS = (
    store.schema.MODEL,
    store.schema.MODEL_PATH,
    store.schema.MODEL_SHA256,
    store.schema.TOKENIZER_SHA256,
    store.schema.CONFIG_SHA256,
    store.schema.MODEL_TYPE,
    store.schema.N_MODEL_LAYERS,
    store.schema.TOKENIZER,
    store.schema.COMPUTE_DTYPE,
    store.schema.STORE_DTYPE,
    store.schema.MAX_LENGTH,
    store.schema.LONG_INPUTS,
    store.schema.STRIDE,
    store.schema.PAIR_MODE,
    store.schema.TEXT_PAIR_COL,
    store.schema.TEXT_COL,
    store.schema.ID_COL,
    store.schema.RANDOM_INIT,
    store.schema.IMPLEMENTATION,
    store.schema.MODEL_PART,
)


@dataclass(frozen=True)
class FitPlan:
    """One ``featx fit`` run, decided: rows, targets, candidates and what the bundle records."""

    config: FitConfig
    path: Path
    output: Path
    label: str
    task: str  # classification or regression
    classes: list[str] | None  # the class names (classification)
    rows: np.ndarray  # the stored rows used (labelled)
    y: np.ndarray  # their class codes (into ``classes``) or values
    # positions in ``rows`` of the training rows (every labelled row in the train or val split, or every one without
    # a split column); ``rows`` leaves out those whose split value featx does not use (``_in_split``)
    train: np.ndarray
    test: np.ndarray  # positions in ``rows`` of the test split's rows (empty: no split)
    candidates: list[tuple[LayerSpec, str]]
    metric: str
    fingerprint: str | None
    extraction: dict
    layers: list[int]  # the stored layers (the layer count the model had)
    notes: list[str] = field(default_factory=list)
    level: str = "sentence"  # or "word": ``rows`` are then stored words, ``pooling`` a word pooling
    # the groups of ``rows`` that no fold, holdout or resample ever splits: a word label's sentences, or
    # --group COLUMN's groups (``config.group`` says which); None: rows are drawn one by one
    grouping: Groups | None = None
    # positions in ``rows`` of the val split's rows (a word label: the val sentences' words; among ``train``): the
    # final head is trained on the other training rows and its C (alpha) chosen, or its mlp early-stopped, on
    # these, as featx probe does; None without a val split
    dev: np.ndarray | None = None
    # --arcs (level "arc"): "relation" (a relation labeller of gold arcs) or "head" (a head selector); ``rows``
    # are then ``(n, 2)`` (head, dependent) word indices (``arc_plan``)
    arcs: str | None = None

    @property
    def is_classification(self) -> bool:
        return self.classes is not None


def output_of(config: FitConfig, path: Path) -> Path:
    if config.output is not None:
        return Path(config.output)
    stem = path.name[: -len(".features.h5")] if path.name.endswith(".features.h5") else path.stem
    return path.with_name(stem + BUNDLE_SUFFIX)


def metric_of(config: FitConfig, task: str) -> str:
    allowed = CLASS_METRICS if task == "classification" else VALUE_METRICS
    if config.metric is None:
        return allowed[0]
    if config.metric not in allowed:
        raise InputError(
            f"{spoken_value(config, 'metric', config.metric)} does not apply to a {task} label",
            f"choose one of: {', '.join(allowed)}",
        )
    return config.metric


def extraction_of(features: FeatureFile) -> dict:
    attrs = features.attrs
    out = {name: _plain(attrs.get(name)) for name in EXTRACTION_ATTRS}
    try:
        options = loads_json(attrs.get(store.schema.OPTIONS) or "{}")
    except ValueError:
        options = {}
    for name in ("dtype", "trust_remote_code", "long", "stride", *PROMPT_OPTIONS):
        if isinstance(options, dict) and name in options:
            out[f"option_{name}"] = _plain(options[name])
    if out.get(store.schema.RANDOM_INIT) and isinstance(options, dict):  # predict draws the same random weights
        out["option_seed"] = _plain(options.get("init_seed", options.get("seed")))
    _check_reproducible(features, out)
    return out


# The extraction options that make a row's prompt (templates.py): a bundle records them and predict renders
# every new text the same way.
PROMPT_OPTIONS = ("template", "chat_template", "system", "pool_at", "contrast")


def _check_reproducible(features: FeatureFile, extraction: dict) -> None:
    """Refuse, before any fitting, a features file whose features a bundle could not make again from a text:
    prompts recorded in the file but not in its options, a template naming columns besides the text."""
    from ..extraction import ANSWER_FIELD, TEXT_FIELD, parse_template

    derived = store.derived_record(features.attrs)
    if derived is not None:
        kind = derived.get("kind") or "derived"
        raise InputError(
            f"{features.path} holds {kind} features made from another features file (featx erase), which featx "
            "predict does not make from a text, so a bundle fitted on it would predict from the original features",
            "fit on the features file it was made from (and read the erased one with featx probe)",
        )
    if features.attrs.get(store.schema.INTERVENTION):
        raise InputError(
            f"{features.path} was extracted with edits inside the forward pass (--intervene), which featx predict "
            "does not make, so a bundle fitted on it would predict from unedited features",
            "fit on a plain extraction (and read the edited file with featx probe)",
        )
    prompted = any(
        features.attrs.get(name) for name in (store.schema.TEMPLATE, store.schema.CHAT_TEMPLATE, store.schema.POOL_AT)
    )
    if prompted and not any(extraction.get(f"option_{name}") for name in PROMPT_OPTIONS):
        raise InputError(
            f"{features.path} was extracted with prompts (--template, --chat-template or --pool-at) that its "
            "options do not record, so a bundle could not render new texts the same way",
            "extract again with this featx, then fit",
        )
    template = extraction.get("option_template")
    if template:
        fields = parse_template(str(template), str(extraction.get("text_col") or TEXT_FIELD)).fields
        others = [name for name in fields if name not in (TEXT_FIELD, ANSWER_FIELD)]
        if others:
            raise InputError(
                f"the template of {features.path} names column(s) {', '.join(others)} besides the text, and a "
                "bundle predicts from a text alone",
                "extract with a template of {text} only (e.g. 'Review: {text} Sentiment:'), then fit",
            )


def _plain(value):
    """An HDF5 attribute as a JSON value."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _targets(features: FeatureFile, label: str, task: str) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
    """(labelled rows, their codes or values, class names)."""
    if task == "regression":
        values = features.label_values(label)
        assert values is not None, "resolve_task checked that the column is numeric"
        rows = np.flatnonzero(np.isfinite(values))
        return rows, values[rows], None
    column = stored_column(features, label)
    rows = np.flatnonzero(column.codes >= 0)
    return rows, column.codes[rows].astype(np.int64), list(column.names)


def _grouping(features: FeatureFile, config: FitConfig, rows: np.ndarray, label: str, parts, notes) -> Groups | None:
    """``--group COLUMN``'s group of every labelled row (None without it), read and checked as featx probe
    reads and checks it: a test split sharing a group with the training (or val) rows is refused, and so are
    as few training groups as folds. Without it, a note where a pair file's rows share sentences."""
    if config.group is None:
        note_shared_texts(features, rows, notes)
        return None
    grouping = group_rows(features, config.group, rows, label, notes)
    train, test, dev = parts
    if len(test):
        fitted = train if dev is None else np.setdiff1d(train, dev)
        check_split_groups(grouping, fitted, test, dev)
    check_group_count(grouping.take(train), int(config.folds))
    return grouping


def _auto(spec: str) -> str:
    """``--layer``/``--pooling`` as the parsers read them: ``auto`` is every stored one."""
    return "all" if spec.strip().lower() == "auto" else spec


def _candidates(features: FeatureFile, config: FitConfig) -> list[tuple[LayerSpec, str]]:
    specs = parse_layer_specs(_auto(config.layer), features.layers, config=config, name="layer")
    poolings = parse_poolings(_auto(config.pooling), features.poolings)
    return [(spec, pooling) for spec in specs for pooling in poolings]


def _wants_words(features: FeatureFile, config: FitConfig) -> bool:
    """A word label asked for (a word label column that is no sentence label), or a file of word labels only.
    ``head`` without ``--arcs`` (the arcs, as in ``probing.plan.wants_words``) is refused. Any other
    missing label is the store's message, which names both kinds of label columns."""
    if not getattr(features, "has_words", False):
        return False
    if config.label is None:
        return not features.label_columns
    words = features.word_label_columns()
    if config.label == HEAD_LABEL and config.label not in words and config.label not in features.label_columns:
        label, arcs = spoken_value(config, "label", HEAD_LABEL), spoken_value(config, "arcs", True)
        raise InputError(
            f"'head' is the dependency arcs of a word input, fitted as a head selector with {arcs}",
            f"add {arcs}: {spoken_command('fit', 'FEATURES', label, arcs)}",
        )
    return config.label in words and config.label not in features.label_columns


def _word_label(features: FeatureFile, config: FitConfig, notes: list[str]) -> str:
    columns = features.word_label_columns()
    if config.label is not None:
        return config.label
    if not columns:
        raise InputError(f"{features.path} has no label columns, of sentences or of words", "extract labelled data")
    label = "upos" if "upos" in columns else columns[0]
    notes.append(f"no --label: fitting the word label '{label}' (word labels: {', '.join(columns)})")
    return label


def word_candidates(features: FeatureFile, config: FitConfig) -> list[tuple[LayerSpec, str]]:
    specs = parse_layer_specs(_auto(config.layer), features.layers, config=config, name="layer")
    if any(spec.kind != "single" for spec in specs):
        raise InputError(
            f"{spoken_value(config, 'layer', config.layer)}: a word probe reads one layer at a time",
            f"give {spoken_value(config, 'layer', Placeholder('K'))} (or auto, every stored layer, one at a time)",
        )
    stored = tuple(features.word_poolings())
    return [(spec, pooling) for spec in specs for pooling in parse_poolings(_auto(config.pooling), stored)]


def check_word_options(config: FitConfig, label: str) -> None:
    if config.task == "regression" or config.classifier == "ridge":
        raise InputError(
            f"'{label}' is a word label, and featx fit learns word labels as classes",
            f"use {spoken_value(config, 'classifier', 'logreg')}, svm or mlp, and leave {spoken(config, 'task')} out",
        )


def _resolve_words(config: FitConfig, path: Path, features: FeatureFile, notes: list[str]) -> FitPlan:
    """The plan of a word label: every labelled word an item, grouped by its sentence; the sentences' split, whose
    val sentences (``_dev``) choose the final head's C, or early-stop its mlp, as featx probe's word probes do."""
    label = _word_label(features, config, notes)
    if config.group is not None:
        refuse_word_group(label)
    check_word_options(config, label)
    codes = features.word_labels(label)
    rows = np.flatnonzero(codes >= 0)
    sentences = features.word_sentence()[rows]
    kept = kept_in_split(features, sentences, notes, "words")
    rows, sentences = rows[kept], sentences[kept]
    train, test = split_rows(features, sentences)
    names = features.word_label_names(label)
    y, classes = classes_of_training(codes[rows].astype(np.int64), train, test, names, label)
    candidates = word_candidates(features, config)
    dev = dev_rows(features, sentences)  # the val sentences' words
    return FitPlan(
        config, Path(path), output_of(config, Path(path)), label, "classification", classes, rows, y, train, test,
        candidates, metric_of(config, "classification"), features.fingerprint, extraction_of(features),
        list(features.layers), notes, level="word", grouping=sentence_groups(sentences), dev=dev,
    )  # fmt: skip


def sentence_groups(sentences: np.ndarray) -> Groups:
    """A word label's grouping: each word's sentence (numbered as stored), which no choice ever splits."""
    present, codes = np.unique(sentences, return_inverse=True)
    return Groups("sentence", codes.astype(np.int64), [str(int(number)) for number in present])


def _check_head(config: FitConfig, label: str, task: str, notes: list[str]) -> None:
    """The head fits the label's task: ridge for a number (logreg and svm become ridge, said in ``notes``), any
    other for classes."""
    if task == "regression" and config.classifier in ("logreg", "svm"):
        notes.append(f"'{label}' is numeric: fitted as regression with ridge")
    elif task == "regression" and config.classifier == "mlp":
        raise InputError(
            f"'{label}' is fitted as regression, and featx fit saves ridge regression heads only",
            f"use {spoken_value(config, 'classifier', 'ridge')}, or "
            f"{spoken_value(config, 'task', 'classification')} with binned labels",
        )
    elif task == "classification" and config.classifier == "ridge":
        raise InputError(
            f"ridge is a regression head, and '{label}' is fitted as classes",
            f"use {spoken_value(config, 'classifier', 'logreg')}, or "
            f"{spoken_value(config, 'task', 'regression')} for a numeric label",
        )


def resolve_fit(config: FitConfig) -> FitPlan:
    """Open the features file once and decide the run (every input check before any fitting)."""
    path, using_last = given_or_last(config.features, "features")
    notes = [using_last] if using_last else []
    with FeatureFile(path) as features:
        if _wants_words(features, config):
            return _resolve_words(config, Path(path), features, notes)
        label = default_label(features, config, notes)  # type: ignore[arg-type]
        task = resolve_task(features, label, config.task).value
        _check_head(config, label, task, notes)
        rows, y, names = _targets(features, label, task)
        kept = kept_in_split(features, rows, notes)
        rows, y = rows[kept], y[kept]
        train, test = split_rows(features, rows)
        classes = None
        if names is not None:
            y, classes = classes_of_training(y, train, test, names, label)
        elif len(train) < 2 * int(config.folds):
            raise InputError(f"only {len(train)} labelled training rows for {config.folds}-fold cross-validation")
        candidates = _candidates(features, config)
        if any(spec.kind == "stack" for spec, _ in candidates) and (classes is None or config.classifier == "mlp"):
            raise InputError(
                "stack combines linear probes of a class label (logreg or svm)",
                f"use {spoken_value(config, 'classifier', 'logreg')} or svm on a class label, or a single layer or "
                "cat(...)",
            )
        extraction = extraction_of(features)
        fingerprint, layers = features.fingerprint, list(features.layers)
        dev = dev_rows(features, rows)
        grouping = _grouping(features, config, rows, label, (train, test, dev), notes)
    return FitPlan(
        config,
        Path(path),
        output_of(config, Path(path)),
        label,
        task,
        classes,
        rows,
        y,
        train,
        test,
        candidates,
        metric_of(config, task),
        fingerprint,
        extraction,
        layers,
        notes,
        grouping=grouping,
        dev=dev,
    )


__all__ = [
    "EXTRACTION_ATTRS",
    "FitPlan",
    "check_word_options",
    "extraction_of",
    "metric_of",
    "output_of",
    "resolve_fit",
    "sentence_groups",
    "word_candidates",
]

"""Word-level probing tasks: which items are probed (words, or (head, dependent) pairs), their labels,
their sentences, and the evaluation plan by sentence.

A *source* is anything with the word methods of ``FeatureFile`` (``word_offsets``, ``word_sentence``,
``word_forms``, ``word_labels``, ``word_label_names``, ``word_heads``, ``word_features``) plus ``split``
and ``n_rows``; tests pass an in-memory one with planted data.

Every item belongs to one sentence (``groups``); folds and the split are by sentence, so no sentence
has items on both sides, and the inner holdouts (C search, early stopping) are by sentence too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...options import joined, on_command_line, spoken_value
from ...store import HEAD_ROOT, HEAD_UNKNOWN
from .. import evaluation as ev
from ..meta import Level

HEAD_LABEL = "head"  # --label head --arcs: is this word pair an arc?
ARC_NAMES = ["no-arc", "arc"]
ROOT = "<root>"  # the head of a root word, in the lexical keys of head candidates


def _head_arcs() -> str:
    """``--label head --arcs`` on the command line, ``label='head', arcs=True`` from Python."""
    return joined(spoken_value(None, "label", HEAD_LABEL, "--label"), "--arcs" if on_command_line() else "arcs=True")


def opened_source(source, allow_partial: bool = False):
    """A context giving the source: a features file path is opened (in a worker; an unfinished one with
    ``allow_partial``, showing its committed rows), an object is used as is."""
    if isinstance(source, (str, Path)):
        from ...store import FeatureFile

        return FeatureFile(source, allow_partial=allow_partial)
    return contextlib.nullcontext(source)


@dataclass
class WordPlan(ev.Plan):
    """An outer plan whose items carry their sentence (``groups``); tests and intervals resample sentences."""

    groups: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


@dataclass
class WordTask:
    label: str
    level: Level  # word or arc
    y: np.ndarray  # class codes 0..k-1 of the items
    class_names: list[str]
    groups: np.ndarray  # sentence (row) of each item
    words: np.ndarray  # (n,) word index of each item (word tasks), or (n, 2) (head, dependent) words (arcs)
    keys: np.ndarray  # lexical key of each item (word type, or the types of a pair), for control and baseline
    n_words: int
    n_sentences: int

    @property
    def n_classes(self) -> int:
        return len(self.class_names)


def word_types(source) -> np.ndarray:
    """Each word's type, the lexical key of the word-type baseline and control task: its form, lowercased."""
    return np.array([str(form).lower() for form in source.word_forms()], dtype=object)


def word_task(source, label: str) -> WordTask:
    """The word-level task of one word label column: every labelled word is an item."""
    if label not in source.word_label_columns():
        raise InputError(
            f"no word label column '{label}'; word label columns: {', '.join(source.word_label_columns())}",
            f"pick one with {spoken_value(None, 'label', 'NAME', '--label', shown='NAME')}",
        )
    codes = np.asarray(source.word_labels(label), dtype=np.int64)
    kept = np.flatnonzero(codes >= 0)
    y, names = _renumber(codes[kept], source.word_label_names(label), label, source)
    sentence = np.asarray(source.word_sentence(), dtype=np.int64)
    return WordTask(
        label, Level.WORD, y, names, sentence[kept], kept, word_types(source)[kept], len(codes), int(source.n_rows)
    )


def _renumber(codes: np.ndarray, names: list[str], label: str, source) -> tuple[np.ndarray, list[str]]:
    """The classes present numbered 0, 1, ... (a label refused by ``check_labels``, naming ``source``: a features
    file's path, or a path or name given as it is; an in-memory source of the tests has neither)."""
    where = source if isinstance(source, str | Path) else getattr(source, "path", None)
    ev.check_labels(codes, names, label, where or "the features file")
    present = np.unique(codes)
    return np.searchsorted(present, codes), [names[code] for code in present]


def unknown_heads_note(heads: np.ndarray, notes: list[str] | None) -> None:
    """A note of how many words have an unknown head (``HEAD_UNKNOWN``: '_' in CoNLL-U, or no head given): they
    are no arc's dependent and no word's gold attachment, so the arc items leave them out."""
    unknown = int(np.count_nonzero(np.asarray(heads) == HEAD_UNKNOWN))
    if unknown and notes is not None:
        notes.append(
            f"{unknown:,} word(s) with an unknown head ('_', or none given) left out of the arc items "
            "(still candidate heads of the other words of their sentence)"
        )


def _arcs(source) -> tuple[np.ndarray, np.ndarray]:
    """``(heads, dependents)`` global word indices of every gold arc (root and unknown heads left out)."""
    offsets = np.asarray(source.word_offsets(), dtype=np.int64)
    sentence = np.asarray(source.word_sentence(), dtype=np.int64)
    heads = np.asarray(source.word_heads(), dtype=np.int64)
    dependents = np.flatnonzero(heads >= 0)
    head_words = offsets[sentence[dependents]] + heads[dependents]
    inside = head_words < offsets[sentence[dependents] + 1]  # a head index past its sentence: unusable
    return head_words[inside], dependents[inside]


def relation_task(source, label: str, notes: list[str] | None = None) -> WordTask:
    """``--label deprel --arcs``: each gold (head, dependent) pair, labelled with its dependent's relation (a word
    with an unknown head is no dependent: how many, said in ``notes``)."""
    if label not in source.word_label_columns():
        raise InputError(
            f"no word label column '{label}' to classify arcs by",
            f"word label columns: {', '.join(source.word_label_columns())}; or {_head_arcs()}",
        )
    heads, dependents = _arcs(source)
    unknown_heads_note(source.word_heads(), notes)
    codes = np.asarray(source.word_labels(label), dtype=np.int64)[dependents]
    keep = codes >= 0
    heads, dependents = heads[keep], dependents[keep]
    if not len(dependents):
        raise InputError(f"no word has both a head and a '{label}' label", "extract a treebank with HEAD and DEPREL")
    y, names = _renumber(codes[keep], source.word_label_names(label), label, source)
    sentence = np.asarray(source.word_sentence(), dtype=np.int64)
    types = word_types(source)
    return WordTask(
        label,
        Level.ARC,
        y,
        names,
        sentence[dependents],
        np.stack([heads, dependents], axis=1),
        types[dependents],
        len(types),
        int(source.n_rows),
    )


def gold_attachments(offsets: np.ndarray, heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(dependents, heads)`` global word indices of every word whose attachment is known: a word with a head
    gets that word, a root word (``HEAD_ROOT``) gets itself (the root, written as the word paired with itself), the
    latter only in a sentence with at least one arc (a sentence without one has no tree: in files written before
    ``HEAD_UNKNOWN`` existed, -1 also meant unknown). A word with an unknown head (``HEAD_UNKNOWN``) is left out.
    ``offsets``: sentence ``s`` owns words ``offsets[s]:offsets[s+1]``; ``heads``: 0-based within the sentence."""
    offsets, heads = np.asarray(offsets, np.int64), np.asarray(heads, np.int64)
    sentence = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    start, stop = offsets[sentence], offsets[sentence + 1]
    arc = (heads >= 0) & (start + heads < stop)  # a head index past its sentence: unusable
    has_tree = np.bincount(sentence[arc], minlength=len(offsets) - 1) > 0
    root = (heads == HEAD_ROOT) & has_tree[sentence]
    dependents = np.flatnonzero(arc | root)
    words = np.arange(len(heads))
    head_words = np.where(arc, start + heads, words)[dependents]
    return dependents, head_words


def attachment_task(source, seed: int, notes: list[str] | None = None) -> WordTask:
    """``--label head --arcs``: for every word of a sentence with a tree, its gold pair (head, word) labelled
    ``arc`` (a root word paired with itself: the root), and one other candidate pair labelled ``no-arc``: another
    word of the sentence, or the word itself when it is not the root, drawn uniformly (seeded). The candidates are
    those ``featx fit --label head --arcs``'s head selector chooses among. A word with an unknown head has no gold
    pair (how many, said in ``notes``)."""
    offsets = np.asarray(source.word_offsets(), dtype=np.int64)
    dependents, heads = gold_attachments(offsets, np.asarray(source.word_heads(), dtype=np.int64))
    unknown_heads_note(source.word_heads(), notes)
    if not len(dependents):
        raise InputError("no word has a head", "extract a treebank with a HEAD column (CoNLL-U)")
    sentence = np.asarray(source.word_sentence(), dtype=np.int64)
    rng = np.random.default_rng(seed + 4099)
    negatives = []
    for dependent, head in zip(dependents.tolist(), heads.tolist(), strict=True):
        start, stop = int(offsets[sentence[dependent]]), int(offsets[sentence[dependent] + 1])
        if stop - start < 2:  # a one-word sentence: its root is its only candidate
            continue
        other = start + int(rng.integers(stop - start - 1))
        negatives.append((other + (other >= head), dependent))  # every candidate but the gold head, uniformly
    pairs = np.concatenate([np.stack([heads, dependents], axis=1), np.asarray(negatives, np.int64).reshape(-1, 2)])
    y = np.concatenate([np.ones(len(heads), np.int64), np.zeros(len(negatives), np.int64)])
    types = word_types(source)
    keys = np.array([f"{_head_type(types, h, d)} -> {types[d]}" for h, d in pairs], dtype=object)
    return WordTask(
        HEAD_LABEL, Level.ARC, y, list(ARC_NAMES), sentence[pairs[:, 1]], pairs, keys, len(types), int(source.n_rows)
    )


def _head_type(types: np.ndarray, head: int, dependent: int) -> str:
    return ROOT if head == dependent else str(types[head])


def items_in_split(task: WordTask, split: np.ndarray | None, notes: list[str], source: object = "the file") -> WordTask:
    """``task`` without the items of sentences whose split value is none of train, val (its aliases) and test, said
    in a note (``evaluation.usable_split``; featx fit leaves those words out alike); when no sentence of an item
    has a usable value, the split is not used (``task``, said in the note). No split column: ``task``."""
    if split is None:
        return task
    items = "words" if task.level is Level.WORD else "word pairs"
    usable, note = ev.usable_split(np.asarray(split, dtype=object)[task.groups], items, source)
    if note is None:
        return task
    notes.append(note)
    if usable.all():
        return task
    keep = np.flatnonzero(usable)
    y, names = _renumber(task.y[keep], task.class_names, task.label, source)
    return replace(task, y=y, class_names=names, groups=task.groups[keep], words=task.words[keep], keys=task.keys[keep])


# -- the plan by sentence ------------------------------------------------------------------------------
def sentence_plan(
    task: WordTask, split: np.ndarray | None, folds: int, seed: int, notes: list[str], classifiers=("logreg",)
) -> WordPlan:
    """The file's split by sentence (train, else dev, trains; dev picks C, or early-stops the mlp, when train is
    there; test scores), else seeded k-fold over sentences, stratified as far as whole sentences allow."""
    groups = task.groups
    if split is not None:
        values = np.char.lower(np.asarray(split, dtype=str))[groups]
        train = np.flatnonzero(np.isin(values, ev.TRAIN_VALUES))
        dev = np.flatnonzero(np.isin(values, ev.DEV_VALUES))
        test = np.flatnonzero(np.isin(values, ev.TEST_VALUES))
        if not len(train) and len(dev) and len(test):
            notes.append(
                f"the split has no train part: the dev part ({len(np.unique(groups[dev]))} sentences) "
                f"trains the probes ({ev.tuned_on(classifiers)} on a holdout of its sentences), the test part "
                "scores them"
            )
            train, dev = dev, np.zeros(0, np.int64)
        if len(train) and len(test):
            _check_split_classes(task, train, test, notes)
            return WordPlan("split", [(train, test)], [dev if len(dev) else None], groups=groups)
        if len(np.unique(values)) > 1:
            notes.append(
                f"the split column has no train and test sentences to use; cross-validating with {folds} "
                "folds over sentences instead"
            )
    n_sentences = len(np.unique(groups))
    if n_sentences < folds:
        raise InputError(
            f"only {n_sentences} sentences for {folds} folds",
            f"use {spoken_value(None, 'folds', max(2, n_sentences), '--folds')}",
        )
    _note_rare_classes(task, folds, notes)
    pairs = sentence_folds(task.y, groups, folds, seed)
    return WordPlan(f"{folds}-fold cv", pairs, [None] * len(pairs), groups=groups)


def sentence_folds(y: np.ndarray, groups: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Seeded k-fold (train, test) item indices over the sentences ``groups``, stratified by ``y`` as far as whole
    sentences allow: a word probe's folds without a split, rebuilt from its seed by the paired tests between
    runs. A class rarer than the folds is kept (missing from some folds' test parts: a note where the probe
    runs says so)."""
    return ev.stratified_group_splits(y, groups, folds, seed)


def _note_rare_classes(task: WordTask, folds: int, notes: list[str]) -> None:
    """A label with fewer items than folds cannot be in every fold's test part: a note names it (kept, as a
    label seen only in the test part of a split is)."""
    counts = np.bincount(task.y, minlength=task.n_classes)
    rare = [code for code in np.argsort(counts, kind="stable") if 0 < counts[code] < folds]
    if rare:
        listed = ", ".join(f"{task.class_names[code]} ({counts[code]})" for code in rare[:10])
        more = f" and {len(rare) - 10} more" if len(rare) > 10 else ""
        notes.append(
            f"label(s) with fewer items than the {folds} folds, so missing from some folds' test parts: {listed}{more}"
        )


def _check_split_classes(task: WordTask, train: np.ndarray, test: np.ndarray, notes: list[str]) -> None:
    """A training part needs two classes; a rare label seen only in the test part is kept (its items count
    as errors: no probe can predict it) and named in a note."""
    seen = np.unique(task.y[train])
    if len(seen) < 2:
        raise InputError(f"the training part has only one class of label '{task.label}'", "check the split column")
    unseen = np.setdiff1d(np.unique(task.y[test]), seen)
    if len(unseen):
        counts = np.bincount(task.y[test], minlength=task.n_classes)
        listed = ", ".join(f"{task.class_names[code]} ({counts[code]})" for code in unseen)
        notes.append(f"label(s) never seen in the training part, counted as errors in the test part: {listed}")


# -- control task and lexical baseline ---------------------------------------------------------------------
def control_labels(task: WordTask, rows: np.ndarray, seed: int) -> np.ndarray:
    """Hewitt & Liang's control task: each lexical key (word type; for arcs the dependent's type, or the
    pair of types) gets one fixed random label, drawn from the label distribution of ``rows`` (the
    training part; seeded). Returns the control label of every item."""
    return type_control(task.keys.astype(str), task.y, rows, task.n_classes, seed)


def type_control(keys: np.ndarray, y: np.ndarray, rows: np.ndarray, n_classes: int, seed: int) -> np.ndarray:
    """``control_labels`` of items by their lexical ``keys`` (``featx probe``'s, and ``featx fit``'s beside its chosen
    word probe or relation labeller): one random class per key, drawn from the classes of ``rows``."""
    unique, inverse = np.unique(keys, return_inverse=True)
    distribution = np.bincount(y[rows], minlength=n_classes).astype(np.float64)
    distribution /= distribution.sum()
    rng = np.random.default_rng(seed + 7919)
    per_key = rng.choice(n_classes, size=len(unique), p=distribution)
    return per_key[inverse]


def lexical_predictions(task: WordTask, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """The most frequent label of each lexical key in ``train`` only; keys never seen there get the
    training part's majority label."""
    return per_type_predictions(task.keys.astype(str), task.y, train, test, task.n_classes)


def per_type_predictions(keys: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, n_classes: int):
    """The most frequent class of each key (a lowercased word form: its type) among the ``train`` items, for
    the ``test`` items; a key never seen in training gets the training items' majority class."""
    majority = int(np.argmax(np.bincount(y[train], minlength=n_classes)))
    unique, inverse = np.unique(keys[train], return_inverse=True)
    counts = np.zeros((len(unique), n_classes), np.int64)
    np.add.at(counts, (inverse, y[train]), 1)
    best = dict(zip(unique.tolist(), np.argmax(counts, axis=1).tolist(), strict=False))
    return np.array([best.get(key, majority) for key in keys[test]], dtype=np.int64)

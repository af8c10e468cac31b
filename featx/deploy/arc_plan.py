"""The ``FitPlan`` of ``featx fit --arcs``: the items are pairs of words of one sentence, built by ``featx probe
--arcs``'s own tasks (``probing.relation_task``, ``probing.attachment_task``) and read as it reads them
(``[h_head, h_dep, h_head * h_dep]``), so that fit and probe fit the same heads on the same items.

``--label deprel --arcs`` (a relation labeller): each gold (head, dependent) arc, labelled with the dependent's
relation. ``--label head --arcs`` (a head selector): each word's gold pair (its head, or itself for the root) and
one other candidate of its sentence, whose sentences the selector (``attach``) is fitted on, each word's gold head
against every candidate. The plan's ``rows`` are the pairs ``(n, 2)`` (word indices), grouped by their sentence:
folds, holdouts and intervals keep a sentence's pairs together."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..options import joined, spoken, spoken_value
from ..probing import HEAD_LABEL, attachment_task, refuse_word_group, relation_task
from ..state import given_or_last
from ..store import FeatureFile
from .config import FitConfig
from .plan import FitPlan, check_word_options, extraction_of, metric_of, output_of, sentence_groups, word_candidates
from .rows import classes_of_training, dev_rows, kept_in_split, split_rows

RELATION, SELECTOR = "relation", "head"  # the two kinds of arc bundle (the manifest's ``arcs``)
UAS = "uas"  # a head selector's metric: the share of words whose head it picks right


def arc_label(features: FeatureFile, config: FitConfig, notes: list[str]) -> str:
    """``--label``, or (none given) ``deprel`` when stored, else ``head``, as ``featx probe --arcs`` defaults."""
    if not getattr(features, "has_words", False):
        raise InputError(
            f"--arcs needs word-level data, and {features.path} has none",
            "extract a treebank (featx extract treebank.conllu) to get words, heads and relations",
        )
    if config.label is not None:
        return config.label
    label = "deprel" if "deprel" in features.word_label_columns() else HEAD_LABEL
    notes.append(f"no --label: fitting the arcs' '{label}' (--label deprel: relations, --label head: heads)")
    return label


def _check_arc_options(config: FitConfig, label: str) -> None:
    if config.group is not None:
        refuse_word_group(label)
    check_word_options(config, label)
    if label == HEAD_LABEL and config.classifier != "logreg":
        raise InputError(
            f"{spoken_value(config, 'classifier', config.classifier)}: a head selector is a linear softmax over each "
            "word's candidate heads (logreg)",
            f"leave {spoken(config, 'classifier')} out with "
            f"{joined(spoken_value(config, 'label', HEAD_LABEL), spoken_value(config, 'arcs', True))}",
        )
    if label == HEAD_LABEL and config.metric is not None:
        raise InputError(
            f"{spoken_value(config, 'metric', config.metric)}: a head selector is chosen on its attachment score (UAS)",
            f"leave {spoken(config, 'metric')} out with "
            f"{joined(spoken_value(config, 'label', HEAD_LABEL), spoken_value(config, 'arcs', True))}",
        )


def resolve_arcs(config: FitConfig, path: Path, features: FeatureFile, notes: list[str]) -> FitPlan:
    """The plan of an arc bundle: every item a pair of words, grouped by sentence; the sentences' split, whose val
    sentences choose the final head's C (or early-stop its mlp), as featx probe's arc probes do."""
    label = arc_label(features, config, notes)
    _check_arc_options(config, label)
    selector = label == HEAD_LABEL
    task = attachment_task(features, int(config.seed), notes) if selector else relation_task(features, label, notes)
    kept = kept_in_split(features, task.groups, notes, "word pairs" if selector else "arcs")
    pairs, sentences = task.words[kept], task.groups[kept]
    train, test = split_rows(features, sentences)
    y, classes = classes_of_training(task.y[kept], train, test, task.class_names, label)
    if selector and len(classes) < 2:
        raise InputError("the training sentences have no head to choose among", "check the split column")
    return FitPlan(
        config, Path(path), output_of(config, Path(path)), label, "classification", classes, pairs, y, train, test,
        word_candidates(features, config), UAS if selector else metric_of(config, "classification"),
        features.fingerprint, extraction_of(features), list(features.layers), notes, level="arc",
        grouping=sentence_groups(sentences), dev=dev_rows(features, sentences), arcs=SELECTOR if selector else RELATION,
    )  # fmt: skip


def resolve_arc_fit(config: FitConfig) -> FitPlan:
    """Open the features file once and decide an arc fit (every input check before any fitting)."""
    path, using_last = given_or_last(config.features, "features")
    notes = [using_last] if using_last else []
    with FeatureFile(path) as features:
        return resolve_arcs(config, Path(path), features, notes)


__all__ = ["RELATION", "SELECTOR", "UAS", "arc_label", "resolve_arc_fit", "resolve_arcs"]

"""``featx predict`` with an arc bundle: a relation labeller writes one line per gold (head, dependent) arc of a word
input that gives heads (CoNLL-U, or columns or JSON Lines with a head), refusing one without any; a head selector
writes one line per word, its predicted head. Each chunk of sentences gives one row of numbers per item (an arc's
class scores; a word's predicted head, margin and probability), which the partial file stores and the output frame
is built from.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..options import spoken_value
from ..probing import gold_attachments
from ..store import HEAD_UNKNOWN
from .arc_plan import SELECTOR
from .arc_probe import NO_HEADS_HINT, gold_arcs, predicted_heads, relation_scores, word_positions
from .arc_tree import TREE
from .attach import neighbour_heads, offset_heads
from .table import fitted_codes, output_frame, score_line


def check_arc_input(probe, words, corpus: Any, config: Any, notes: list[str]) -> None:
    """Before the model runs: a head selector takes no --top-k or --threshold (it writes one head per word); a
    relation labeller needs gold heads, so an input without a single arc is refused, and its words whose head is
    unknown ('_') have no arc to label: how many, said in ``notes``."""
    if probe.arcs == SELECTOR and (config.top_k is not None or config.threshold is not None):
        raise InputError(
            f"{'--top-k' if config.top_k is not None else '--threshold'}: a head selector writes each word's "
            "best-scoring head (its margin and its probability among the candidates)",
            "leave it out",
        )
    if probe.arcs != SELECTOR and not np.any(np.asarray(words.heads) >= 0):
        raise InputError(
            f"this bundle labels the relation of gold (head, dependent) arcs, and {corpus} gives no heads",
            NO_HEADS_HINT,
        )
    unknown = int(np.count_nonzero(np.asarray(words.heads) == HEAD_UNKNOWN))
    if probe.arcs != SELECTOR and unknown:
        notes.append(f"{unknown:,} word(s) with an unknown head ('_', or none given) have no gold arc: no line")


def item_offsets(probe, words) -> np.ndarray:
    """Where each sentence's items start in the output: its arcs (a relation labeller) or its words."""
    offsets = np.asarray(words.offsets, np.int64)
    if probe.arcs == SELECTOR:
        return offsets
    sentence = np.searchsorted(offsets, gold_arcs(offsets, words.heads)[:, 1], side="right") - 1
    return np.r_[0, np.cumsum(np.bincount(sentence, minlength=len(offsets) - 1))].astype(np.int64)


def chunk_scores(probe, words, start: int, stop: int, overrides: dict) -> list:
    """The score rows of the items of sentences ``start:stop``."""
    sentences = [words.sentence(row) for row in range(start, stop)]
    states, offsets = probe.word_features(sentences, **overrides)
    if probe.arcs == SELECTOR:
        heads, margins, probability = predicted_heads(probe, states, offsets)
        return np.stack([heads.astype(np.float64), margins, probability], axis=1).tolist()
    first, last = int(words.offsets[start]), int(words.offsets[stop])
    pairs = gold_arcs(offsets, np.asarray(words.heads[first:last], np.int64))
    return relation_scores(probe, states, pairs).tolist()


def arc_index(probe, words, ids: list[str]) -> dict[str, list]:
    """The id columns of the output: each item's sentence id, its word's position and form; a relation labeller's
    arc also its head's position and form."""
    offsets, forms = np.asarray(words.offsets, np.int64), np.asarray(words.forms, dtype=object)
    if probe.arcs == SELECTOR:
        dependents = np.arange(int(offsets[-1]))
    else:
        pairs = gold_arcs(offsets, words.heads)
        dependents = pairs[:, 1]
    sentence = np.searchsorted(offsets, dependents, side="right") - 1
    index = {
        "id": np.asarray(ids, dtype=object)[sentence].tolist(),
        "word": word_positions(offsets, dependents).tolist(),
        "form": forms[dependents].tolist(),
    }
    if probe.arcs != SELECTOR:
        index.update(head=word_positions(offsets, pairs[:, 0]).tolist(), head_form=forms[pairs[:, 0]].tolist())
    return index


def arc_frame(probe, index: dict, scores: np.ndarray, words, top_k, threshold) -> pd.DataFrame:
    """The output table: a relation labeller's as a word probe's (prediction, class columns); a head selector's
    predicted head (position from 1, 0 the root), its form (ROOT for the root), its margin as an arc (the
    selector's raw score, comparable among one word's candidates only) and its probability among them."""
    if probe.arcs != SELECTOR:
        return output_frame(probe, index, scores, top_k, threshold)
    frame = pd.DataFrame(index)
    heads = scores[:, 0].astype(np.int64)
    offsets, forms = np.asarray(words.offsets, np.int64), np.asarray(words.forms, dtype=object)
    starts = np.repeat(offsets[:-1], np.diff(offsets))
    frame["prediction"] = heads
    frame["head_form"] = np.where(heads == 0, "ROOT", forms[np.maximum(starts + heads - 1, 0)])
    frame["score_arc"] = scores[:, 1]
    frame["p_head"] = scores[:, 2]
    return frame


def arc_truth(probe, words, label: str | None) -> np.ndarray | None:
    """``--label``'s gold values of the items: a relation labeller's arcs' relations (class codes, -1 missing; a
    relation the bundle never saw refused), or (``--label head``) each word's gold head as the output writes heads
    (-1 where the sentence has no tree)."""
    if label is None:
        return None
    if probe.arcs == SELECTOR:
        if label != "head":
            given, head = (spoken_value(None, "label", name, "--label") for name in (label, "head"))
            raise InputError(f"{given}: a head selector is scored against the input's heads", f"use {head}")
        offsets = np.asarray(words.offsets, np.int64)
        dependents, gold = gold_attachments(offsets, words.heads)
        truth = np.full(int(offsets[-1]), -1, np.int64)
        truth[dependents] = np.where(gold == dependents, 0, word_positions(offsets, gold))
        return truth
    columns = dict(words.labels or {})
    if label not in columns:
        found = ", ".join(columns) or "none"
        raise InputError(
            f"the corpus has no word label column '{label}' to score against (word label columns: {found})"
        )
    column, dependents = columns[label], gold_arcs(words.offsets, words.heads)[:, 1]

    def refuse(unseen: list[str]) -> InputError:
        return InputError(
            f"label column '{label}' holds relation(s) {', '.join(repr(n) for n in unseen[:5])} on arcs that the "
            f"labeller never saw when it was fitted (its classes: {', '.join(probe.classes[:10])})",
            "score only arcs of the fitted relations, or fit again with these labels",
        )

    return fitted_codes(column, np.asarray(column.codes)[dependents], probe.classes, refuse)


def arc_score_line(probe, frame: pd.DataFrame, truth: np.ndarray | None, words=None) -> str | None:
    """Accuracy of a relation labeller on the labelled arcs (beside their most frequent relation), or a head
    selector's UAS on the words with a gold head (saying how its heads were decoded) beside the two baselines its fit
    used (``head_baseline_line``)."""
    if truth is None:
        return None
    known = truth >= 0
    if probe.arcs == SELECTOR:
        right = frame["prediction"].to_numpy(np.int64)[known] == truth[known]
        uas = float(np.mean(right)) if known.any() else float("nan")
        tree = probe.info.get("head_decode") == TREE  # an earlier featx's selector: each word's best head on its own
        decoded = "decoded as each sentence's best tree" if tree else "each its best-scoring candidate"
        scored = f"UAS {uas:.4f} on {int(known.sum())} words with a gold head, {decoded}"
        return scored + head_baseline_line(probe, words)
    return score_line(probe, frame, truth)


def head_baseline_line(probe, words) -> str:
    """The baselines of a head selector's fit (``head_baselines`` of its bundle: the training words' most frequent
    head offset that fits, and the nearest word on their heads' side) applied to ``words``' words with a gold head,
    after the UAS; a bundle of an earlier featx records none, and the line says so."""
    fitted = probe.info.get("head_baselines")
    if not isinstance(fitted, dict) or words is None:
        return " (no baseline beside it: this bundle, from an earlier featx, records none; fit it again to get them)"
    offsets = np.asarray(words.offsets, np.int64)
    dependents, gold = gold_attachments(offsets, words.heads)
    if not len(dependents):
        return ""

    def uas(heads: np.ndarray) -> str:
        return f"{float(np.mean(heads == gold)):.4f}"

    side = fitted["side"]
    return (
        f"; baselines fitted on the bundle's training words: most frequent head offset "
        f"{uas(offset_heads(fitted['offsets'], dependents, offsets))}, nearest word to the {side} (the root at the "
        f"sentence's edge) {uas(neighbour_heads(side, dependents, offsets))}"
    )


__all__ = [
    "arc_frame",
    "arc_index",
    "arc_score_line",
    "arc_truth",
    "check_arc_input",
    "chunk_scores",
    "head_baseline_line",
    "item_offsets",
]

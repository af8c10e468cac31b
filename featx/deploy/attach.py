"""The head selector of ``featx fit --label head --arcs``: for each word, a linear score of every candidate head in
its sentence (every other word, and the word itself standing for the root), trained as a softmax over a word's
candidates with the gold head against all the others (``arc_select``: the pair features of ``featx probe --arcs``
plus the side the head lies on and the signed offset in buckets); each sentence's predicted heads are its best tree
(``arc_tree``: one word on the root, no cycle).

Its layer, pooling and C are chosen together by the unlabelled attachment score (UAS: the share of words given their
gold head) of k-fold cross-validation over the training sentences, a sentence's words in one fold, each held-out
sentence decoded as its best tree; a candidate's Cs within ``C_TIE`` of its best UAS tie, and the smallest wins. The
final fit starts from the mean of the folds' solutions at the chosen C. Its test UAS (of the trees, and for
comparison of each word's best-scoring head on its own) stands beside two baselines fitted on the training words
only: each word's most frequent head offset in training that fits its sentence (the root as offset 0), and the
nearest word on the side heads lie on most often in training (a word at that edge of its sentence: the root).
"""

from __future__ import annotations

import numpy as np

from ..probing import arc_features, bootstrap_intervals, fold_mean, gold_attachments
from ..selection import LayerSpec
from .arc_select import (
    OFFSET_BOUNDS,
    PARTS,
    Sentences,
    arc_weights,
    fit_path,
    fit_selector,
    pair_scores,
    selector_features,
    standardiser,
    to_head,
)
from .arc_tree import ARGMAX, TREE, tree_heads
from .choose import Candidate, cv_folds, fit_options

BLOCK_PAIRS = 16_384  # candidate pairs scored in one matrix product
# A candidate's C values whose cross-validated UAS is within C_TIE of its best tie, and the smallest of them (the
# strongest penalty) wins: on UD GUM the UAS of one fold at one C moved by up to 0.0007 between converged fits that
# differed only in L-BFGS's history, and the mean UAS of C 0.1, 1 and 10 came within 0.0009 of each other
C_TIE = 1e-3


def arc_margins(head, X: np.ndarray) -> np.ndarray:
    """How strongly each pair is an arc: the score of ``arc`` minus that of ``no-arc`` (a log-odds for logreg and
    mlp, the margin for svm)."""
    scores = head.scores(X)
    arc = list(head.classes).index("arc")
    return scores[:, arc] - scores[:, 1 - arc]


def pair_reader(bounds):
    """The pair features a head selector reads: with offset ``bounds`` (``offset_buckets`` of its bundle) the
    selector's (``arc_select.selector_features``), without (a bundle of an earlier featx) ``[h_head, h_dep,
    h_head * h_dep]``."""
    if bounds is None:
        return arc_features
    return lambda states, pairs: selector_features(states, pairs, tuple(bounds))


def select_heads(
    head, states: np.ndarray, offsets: np.ndarray, dependents: np.ndarray, bounds=OFFSET_BOUNDS, decode: str = ARGMAX
) -> tuple[np.ndarray, ...]:
    """The predicted head (a word index; the dependent itself: the root) of each of ``dependents`` (word indices,
    ``offsets`` their sentences' bounds) among every word of its sentence, that head's score (the margin) and its
    probability among the word's candidates (the softmax of their scores). ``decode``: ``argmax``, each word's
    best-scoring candidate on its own; ``tree`` (a linear selector's only), its head in its sentence's best tree
    (``arc_tree.tree_heads``: one word on the root, no cycle)."""
    offsets, dependents = np.asarray(offsets, np.int64), np.asarray(dependents, np.int64)
    weights = arc_weights(head, bounds)
    if decode == TREE and weights is None:
        raise ValueError("a tree decoding needs a linear head selector's scores")
    sentence_of = np.searchsorted(offsets, dependents, side="right") - 1
    heads, margins = np.empty(len(dependents), np.int64), np.empty(len(dependents), np.float64)
    probability = np.empty(len(dependents), np.float64)
    order = np.argsort(sentence_of, kind="stable")
    bounds_at = np.flatnonzero(np.diff(sentence_of[order])) + 1
    for at in np.split(order, bounds_at) if len(order) else []:
        candidates = np.arange(offsets[sentence_of[at[0]]], offsets[sentence_of[at[0]] + 1])
        if weights is not None:  # a selector's scores, factorised: no pair features built
            scores, words = pair_scores(weights, states[candidates]), dependents[at] - candidates[0]
            chosen = tree_heads(scores) if decode == TREE else np.argmax(scores, axis=0)
            blocks = [(at, scores[:, words], chosen[words])]
        else:
            parts = _pair_probe_scores(head, states, candidates, dependents, at, pair_reader(bounds))
            blocks = [(block, part, np.argmax(part, axis=0)) for block, part in parts]
        for block, scored, best in blocks:
            margins[block] = scored[best, np.arange(len(block))]
            heads[block] = candidates[best]
            top = scored.max(axis=0)  # a tree's head need not be the best-scoring one
            probability[block] = np.exp(margins[block] - top) / np.exp(scored - top).sum(axis=0)
    return heads, margins, probability


def _pair_probe_scores(head, states, candidates, dependents, at, features) -> list:
    """``(block, (candidate, word) scores)`` of the dependents ``at`` of one sentence, scored pair by pair through
    ``features`` (a head selector of an earlier featx: any classifier)."""
    per_block = max(1, BLOCK_PAIRS // len(candidates))
    out = []
    for block in np.array_split(at, -(-len(at) // per_block)):
        words = dependents[block]
        pairs = np.stack([np.repeat(candidates, len(words)), np.tile(words, len(candidates))], axis=1)
        out.append((block, arc_margins(head, features(states, pairs)).reshape(len(candidates), len(words))))
    return out


def attached_in(offsets: np.ndarray, heads: np.ndarray, sentences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(dependents, gold heads)`` of the words of ``sentences`` whose attachment is known (``gold_attachments``)."""
    dependents, gold = gold_attachments(offsets, heads)
    inside = np.isin(np.searchsorted(offsets, dependents, side="right") - 1, sentences)
    return dependents[inside], gold[inside]


def _stored(path, spec: LayerSpec, pooling: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A candidate's word vectors, the sentences' word offsets, and each word's gold head as a word index (the word
    itself: the root; -1: unknown)."""
    from ..store import FeatureFile

    with FeatureFile(path) as features:
        states = np.asarray(features.word_features(pooling, spec.layers[0]), np.float32)
        offsets, heads = np.asarray(features.word_offsets(), np.int64), features.word_heads()
    dependents, gold = gold_attachments(offsets, heads)
    known = np.full(len(states), -1, np.int64)
    known[dependents] = gold
    return states, offsets, known


def _sentences_of(offsets: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    return np.unique(np.searchsorted(offsets, pairs[:, 1], side="right") - 1)


def _standardised(
    torch, states, offsets, gold, fitting: np.ndarray, *others: np.ndarray
) -> tuple[list, tuple[np.ndarray, np.ndarray]]:
    """``Sentences`` of ``fitting`` and of each of ``others``, the vectors standardised on ``fitting``'s words, and
    that standardisation (``standardiser``'s mean and scale)."""
    words = np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in fitting])
    mean, scale = standardiser(states, words)
    X = ((states - mean) / scale).astype(np.float32)
    return [Sentences(torch, X, offsets, gold, part) for part in (fitting, *others)], (mean, scale)


def score_head_candidate(path, spec: LayerSpec, pooling: str, pairs, splits, cs) -> tuple[list[list[float]], list]:
    """One candidate's UAS in each fold at each C of ``cs`` (sorted, smallest first): the selector fitted on the
    fold's training sentences along the C path, each of its held-out sentences decoded as its best tree; and at each
    C the mean of the folds' solutions (where the final fit at that C starts)."""
    import torch
    from threadpoolctl import threadpool_limits

    from ..probing import JOB_THREADS, torch_threads

    with threadpool_limits(limits=JOB_THREADS), torch_threads(JOB_THREADS, True):
        states, offsets, gold = _stored(path, spec, pooling)
        scores, solutions = [], []
        for fit_rows, val_rows in splits:
            (fitting, held), _ = _standardised(
                torch,
                states,
                offsets,
                gold,
                _sentences_of(offsets, pairs[fit_rows]),
                _sentences_of(offsets, pairs[val_rows]),
            )
            path_of_c = fit_path(fitting, cs, held, tree=True)
            scores.append([uas for _, _, uas in path_of_c])
            solutions.append([params for _, params, _ in path_of_c])
        starts = []
        for at in range(len(cs)):  # at each C, the mean of the folds' solutions
            starts.append({name: np.mean([fold[at][name] for fold in solutions], axis=0) for name in PARTS})
        return scores, starts


def choose_heads(plan, report=None, splits=None) -> list[Candidate]:
    """Every candidate's cross-validated UAS on the training sentences at its chosen C (the smallest within
    ``C_TIE`` of its best), best first (ties: the earlier one), with the mean of its folds' solutions at that C;
    ``splits``: the folds over the training pairs (drawn here, a sentence's pairs in one fold, when not given)."""
    from ..probing import job_workers, run_jobs

    options = fit_options(plan)
    pairs, y, groups = plan.rows[plan.train], plan.y[plan.train], plan.grouping.codes[plan.train]
    if splits is None:
        splits = cv_folds(y, len(plan.classes), options["folds"], options["seed"], groups)
    cs = sorted(float(c) for c in options["cs"])
    jobs = [(plan.path, spec, pooling, pairs, splits, cs) for spec, pooling in plan.candidates]
    workers = job_workers(options.get("jobs"), len(jobs))
    score = score_head_candidate
    every = run_jobs(score, jobs, workers) if workers > 1 else (score(*job) for job in jobs)
    scored = []
    for number, ((spec, pooling), per_fold) in enumerate(zip(plan.candidates, every, strict=True), 1):
        by_c = np.asarray(per_fold[0], np.float64).reshape(len(per_fold[0]), -1)
        means = [fold_mean(by_c[:, i]) for i in range(by_c.shape[1])]
        top = max((mean for mean in means if np.isfinite(mean)), default=float("nan"))
        best = next((i for i, mean in enumerate(means) if mean >= top - C_TIE), 0)
        scored.append(Candidate(spec, pooling, means[best], tuple(by_c[:, best]), cs[best], per_fold[1][best]))
        if report is not None:
            report(
                f"[{number}/{len(plan.candidates)}] layer {spec.name} {pooling}: uas {means[best]:.4f} (C {cs[best]:g})"
            )
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].score, i))
    return [scored[i] for i in order]


def final_selector(plan, best: Candidate):
    """The saved head selector: fitted on every training sentence at the C the cross-validation chose, starting from
    the mean of the folds' solutions at that C (``best.start``; without one, warm-started along the C path up to
    it), as a linear ``Head`` over the raw pair features."""
    import torch
    from threadpoolctl import threadpool_limits

    from ..probing import JOB_THREADS, torch_threads

    with threadpool_limits(limits=JOB_THREADS), torch_threads(JOB_THREADS, True):
        states, offsets, gold = _stored(plan.path, best.spec, best.pooling)
        (fitting,), standardisation = _standardised(
            torch, states, offsets, gold, _sentences_of(offsets, plan.rows[plan.train])
        )
        if best.start is not None:
            params = fit_selector(fitting, best.C, best.start)
        else:
            params = fit_path(fitting, [c for c in fit_options(plan)["cs"] if float(c) <= best.C])[-1][1]
    return to_head(params, *standardisation, best.C)


# -- baselines, fitted on the training words only -------------------------------------------------------------
def head_baseline_fit(train: tuple) -> dict:
    """What the two baselines learn from the training words ``train`` (``(dependents, heads)``), as a bundle
    records it: ``offsets``, every head offset (head - word; 0 the root) seen, most frequent first (ties: the
    smaller), and ``side``, the side most heads lie on (``left`` on a tie)."""
    values, counts = np.unique(np.asarray(train[1]) - np.asarray(train[0]), return_counts=True)
    ranked = values[np.argsort(-counts, kind="stable")]
    left = np.sum(train[1] < train[0]) >= np.sum(train[1] > train[0])
    return {"offsets": [int(value) for value in ranked], "side": "left" if left else "right"}


def offset_heads(ranked, dependents: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each of ``dependents``' head by the first of the ``ranked`` offsets that fits inside its sentence (the
    dependent itself, the root, when none does)."""
    dependents = np.asarray(dependents, np.int64)
    sentence = np.searchsorted(offsets, dependents, side="right") - 1
    start, stop = offsets[sentence], offsets[sentence + 1]
    chosen = dependents.copy()  # the root when no training offset fits
    for offset in np.asarray(ranked, np.int64)[::-1]:  # the most frequent last, so it wins wherever it fits
        target = dependents + offset
        fits = (target >= start) & (target < stop)
        chosen[fits] = target[fits]
    return chosen


def neighbour_heads(side: str, dependents: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each of ``dependents``' nearest word on ``side`` (left or right); the root at that edge of the sentence."""
    dependents = np.asarray(dependents, np.int64)
    sentence = np.searchsorted(offsets, dependents, side="right") - 1
    target = dependents + (-1 if side == "left" else 1)
    inside = (target >= offsets[sentence]) & (target < offsets[sentence + 1])
    return np.where(inside, target, dependents)


def offset_baseline(train: tuple, test: tuple, offsets: np.ndarray) -> np.ndarray:
    """Each test word's head by the most frequent offset (head - word; 0 the root) among the training words that
    fits inside its sentence (the root always does). ``train``, ``test``: ``(dependents, heads)``."""
    return offset_heads(head_baseline_fit(train)["offsets"], test[0], offsets)


def neighbour_baseline(train: tuple, test: tuple, offsets: np.ndarray) -> tuple[np.ndarray, str]:
    """Each test word's nearest word on the side (left or right) most training heads lie on; the root at that
    edge of the sentence. Returns the heads and the side."""
    side = head_baseline_fit(train)["side"]
    return neighbour_heads(side, test[0], offsets), side


def training_baselines(plan) -> dict:
    """``head_baseline_fit`` of the training sentences' words of a head selector's ``plan``: what ``featx
    predict`` applies to a new input's words to stand its UAS beside the same two baselines."""
    from ..store import FeatureFile

    with FeatureFile(plan.path) as features:
        offsets, heads = np.asarray(features.word_offsets(), np.int64), features.word_heads()
    sentence_of = np.searchsorted(offsets, plan.rows[plan.train][:, 1], side="right") - 1
    return head_baseline_fit(attached_in(offsets, heads, np.unique(sentence_of)))


def uas_interval(right: np.ndarray, sentences: np.ndarray, n_bootstrap: int, seed: int) -> tuple[float, float, float]:
    """UAS of the words marked ``right`` with its 95% bootstrap interval over whole sentences."""
    wrong = (~np.asarray(right, bool)).astype(np.int64)
    low, high = bootstrap_intervals(np.zeros(len(wrong), np.int64), wrong, 2, n_bootstrap, seed, sentences)["accuracy"]
    return float(np.mean(right)), float(low), float(high)


def head_test(plan, head, spec: LayerSpec, pooling: str, bounds=OFFSET_BOUNDS) -> dict:
    """The test sentences' UAS (every word of theirs with a known attachment) of their best trees, what the bundle
    predicts, with its interval; beside it, for comparison, each word's best-scoring head taken on its own
    (``argmax``), and the two baselines fitted on the training sentences' words."""
    from ..store import FeatureFile

    with FeatureFile(plan.path) as features:
        states = features.word_features(pooling, spec.layers[0])
        offsets, heads = np.asarray(features.word_offsets(), np.int64), features.word_heads()
    sentence_of = np.searchsorted(offsets, plan.rows[:, 1], side="right") - 1
    train = attached_in(offsets, heads, np.unique(sentence_of[plan.train]))
    test = attached_in(offsets, heads, np.unique(sentence_of[plan.test]))
    sentences = np.searchsorted(offsets, test[0], side="right") - 1
    boot = (int(plan.config.n_bootstrap), int(plan.config.seed))
    neighbour, side = neighbour_baseline(train, test, offsets)
    out: dict = {}
    for name, heads_of in (
        ("score", select_heads(head, states, offsets, test[0], bounds, TREE)[0]),
        ("argmax", select_heads(head, states, offsets, test[0], bounds, ARGMAX)[0]),
        ("offset", offset_baseline(train, test, offsets)),
        (f"{side}_neighbour", neighbour),
    ):
        values = uas_interval(heads_of == test[1], sentences, *boot)
        keys = ("score", "low", "high") if name == "score" else (name, f"{name}_low", f"{name}_high")
        out.update(zip(keys, values, strict=True))
        if name == "score":
            out.update(n=int(len(test[0])), sentences=int(len(np.unique(sentences))))
    return out


def head_test_lines(test: dict) -> list[str]:
    """What featx fit prints of a head selector's test: the UAS of the trees, then that of each word's best head
    on its own (a test of an earlier featx has none), then the baselines."""
    side = "left" if "left_neighbour" in test else "right"
    neighbour = f"{side}_neighbour"

    def shown(key: str) -> str:
        low, high = ("low", "high") if key == "score" else (f"{key}_low", f"{key}_high")
        return f"{test[key]:.4f} [95% CI {test[low]:.4f}, {test[high]:.4f}]"

    argmax = [
        f"the same words' heads without the tree, for comparison (each word's best-scoring candidate on its own, "
        f"which can make cycles and several roots or none): {shown('argmax')}"
    ]
    return [
        f"test UAS: {shown('score')} on {test['n']} test words of {test['sentences']} sentences (each sentence's "
        "heads decoded as its best tree: one word on the root, no cycle; what the bundle predicts)",
        *(argmax if "argmax" in test else []),
        f"baselines fitted on the training words: most frequent head offset {shown('offset')}; nearest word to the "
        f"{side} (the side most heads lie on; the root at the sentence's edge) {shown(neighbour)}",
    ]


__all__ = [
    "C_TIE",
    "arc_margins",
    "attached_in",
    "choose_heads",
    "final_selector",
    "head_baseline_fit",
    "head_test",
    "head_test_lines",
    "neighbour_baseline",
    "neighbour_heads",
    "offset_baseline",
    "offset_heads",
    "pair_reader",
    "select_heads",
    "training_baselines",
    "uas_interval",
]

"""``featx probe --structural distance|depth``: the structural probes of Hewitt & Manning (2019), per layer and
word pooling, on the dependency trees a treebank's features file stores.

A *distance* probe learns ``B`` (rank ``--rank``, default 64, at most the vector size) so that the squared
distance ``||B^T (h_i - h_j)||^2`` between two words of a sentence reads their distance in its tree; it is scored
by UUAS (the minimum spanning tree of the predicted distances against the gold undirected edges) and DSpr (the
Spearman correlation of each word's distances, averaged per sentence length, over the lengths 5 to 50). A
*depth* probe reads ``||B^T h_i||^2`` as word ``i``'s depth: root accuracy (the word of smallest predicted depth
is the root) and NSpr. Beside every result stands its baseline, computed on the same test sentences: the linear
chain (distance ``|i - j|``: each word attached to its neighbour) for distances, and word position (each
word's mean depth at its position in the training sentences) for depths; layer 0 (the embeddings) is a layer
row of its own. The structural probe's control is the same probe on a ``featx extract --random-init`` file.

The run is not a label probe (``--label`` is refused: the gold is the tree, not a label column), so it writes
its own files beside the features file: ``<stem>.<distance|depth>.structural.csv`` and ``.json`` (``-o PREFIX``:
``PREFIX.csv/.json``). The best layer and pooling are chosen on the training sentences held out for early
stopping, never on the test sentences; the best on the test sentences is recorded beside it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...options import keywords_of
from ...selection import parse_poolings
from ..config import ProbeConfig
from ..inputs import open_probed
from ..meta import file_meta
from ..results import json_safe, results_prefix, write_results
from .classification_jobs import torch_threads
from .structural_fit import FittedProbe, fit_probe
from .structural_plan import SentenceFolds, Treebank, read_trees, sentence_folds
from .structural_trees import MIN_SENTENCES, SPEARMAN_LENGTHS, bootstrap_scores, depth_stats, distance_stats, scores
from .word_items import opened_source
from .words import word_layers

DEFAULT_RANK = 64
METRICS = {"distance": ("uuas", "dspr"), "depth": ("root_accuracy", "nspr")}
SHOWN = {"uuas": "UUAS", "dspr": "DSpr", "root_accuracy": "root accuracy", "nspr": "NSpr"}
SELECTED_BY = {"distance": 0, "depth": 1}  # the measure a layer is chosen in: UUAS, NSpr (the steadier of two)
BASELINES = {
    "distance": ("chain", "linear chain: each word attached to its neighbour (distance |i - j|)"),
    "depth": ("position", "word position: each word's mean depth at its position in the training sentences"),
}


@dataclass(frozen=True)
class StructuralInputs:
    """What every job of a structural run needs besides its word vectors."""

    mode: str
    treebank: Treebank
    plan: SentenceFolds
    rank: int
    seed: int
    n_bootstrap: int
    allow_partial: bool = False


@dataclass
class StructuralResult:
    """A structural run: one row per (pooling, layer) beside the baseline row, its metadata and files."""

    table: pd.DataFrame
    meta: dict
    notes: list[str] = field(default_factory=list)
    csv_path: Path | None = None
    json_path: Path | None = None


def sentence_stats(inputs: StructuralInputs, positions: np.ndarray, predict) -> np.ndarray:
    """The stats rows (``structural_trees.STATS``) of the sentences at ``positions``; ``predict(k)`` is
    sentence ``k``'s predicted distances or depths."""
    tree = inputs.treebank
    measure = distance_stats if inputs.mode == "distance" else depth_stats
    rows = [measure(predict(k), tree.sentences.targets[k], tree.keep[k]) for k in positions.tolist()]
    return np.asarray(rows, np.float64).reshape(-1, 5)


def _row(inputs: StructuralInputs, stats: np.ndarray, kind: str, layer: int | None, pooling: str) -> dict:
    """A results row: the two measures with their intervals over resampled test sentences."""
    first, second = METRICS[inputs.mode]
    (a, b), ((a_low, a_high), (b_low, b_high)) = scores(stats), bootstrap_scores(stats, inputs.n_bootstrap, inputs.seed)
    plan = inputs.plan
    return {
        "features": "main",
        "structural": inputs.mode,
        "kind": kind,
        "layer": layer,
        "pooling": pooling,
        "rank": inputs.rank if kind == "probe" else None,
        **{first: a, f"{first}_low": a_low, f"{first}_high": a_high},
        **{second: b, f"{second}_low": b_low, f"{second}_high": b_high},
        "selection_score": float("nan"),
        "epochs": float("nan"),
        "fit_seconds": float("nan"),
        "n_train": int(round(np.mean([len(train) for train, _ in plan.folds]))),
        "n_test": int(len(stats)),
        "evaluation": plan.evaluation,
    }


def baseline_row(inputs: StructuralInputs) -> dict:
    """The chain (distance) or position (depth) baseline on every tested sentence (position fitted per fold on
    its training sentences)."""
    tree, plan = inputs.treebank, inputs.plan
    if inputs.mode == "distance":

        def chain(k: int) -> np.ndarray:
            positions = np.arange(int(tree.sentences.lengths[k]))
            return np.abs(positions[:, None] - positions[None, :]).astype(np.float64)

        stats = sentence_stats(inputs, plan.tested, chain)
    else:
        per_fold = []
        for train, test in plan.folds:
            means = _position_depths([tree.depths[k] for k in train.tolist()])
            per_fold.append((test, sentence_stats(inputs, test, lambda k, m=means: _at_positions(m, tree, k))))
        stats = np.zeros((len(tree.rows), 5))
        for test, rows in per_fold:
            stats[test] = rows
        stats = stats[plan.tested]
    return _row(inputs, stats, BASELINES[inputs.mode][0], None, "")


def _position_depths(depths: list[np.ndarray]) -> np.ndarray:
    """The mean depth at each position (0, 1, ...) over the training sentences ``depths``."""
    longest = max(len(d) for d in depths)
    sums, counts = np.zeros(longest), np.zeros(longest)
    for d in depths:
        sums[: len(d)] += d
        counts[: len(d)] += 1
    return sums / np.maximum(counts, 1)


def _at_positions(means: np.ndarray, tree: Treebank, k: int) -> np.ndarray:
    """Sentence ``k``'s position baseline depths (a position past the training sentences: the last one's)."""
    positions = np.minimum(np.arange(int(tree.sentences.lengths[k])), len(means) - 1)
    return means[positions]


def probe_job(source: Any, layer: int, pooling: str, inputs: StructuralInputs) -> dict:
    """One (layer, pooling): a probe per fold trained on its fit sentences, early-stopped on its held-out ones
    (which also give the selection score), and scored on its test sentences."""
    from threadpoolctl import threadpool_limits

    tree, plan, mode = inputs.treebank, inputs.plan, inputs.mode
    with threadpool_limits(limits=1), opened_source(source, inputs.allow_partial) as opened:
        X = opened.word_features(pooling, layer, dtype=np.float32)
    started = time.perf_counter()
    stats = np.zeros((len(tree.rows), 5))
    selection, epochs = [], []
    with torch_threads(1, True):  # one thread: on these small products faster than two (and beside other jobs)
        for index, ((_, test), (fit, held)) in enumerate(zip(plan.folds, plan.holdouts, strict=True)):
            probe = fit_probe(mode, X, tree.sentences, fit, held, inputs.rank, inputs.seed + 1000 * index)

            def predict(k: int, probe: FittedProbe = probe) -> np.ndarray:
                return probe.predict(mode, tree.sentences.vectors(X, k))

            selection.append(scores(sentence_stats(inputs, held, predict))[SELECTED_BY[mode]])
            stats[test] = sentence_stats(inputs, test, predict)
            epochs.append(probe.epochs)
    row = _row(inputs, stats[plan.tested], "probe", layer, pooling)
    finite = [value for value in selection if np.isfinite(value)]
    row["selection_score"] = float(np.mean(finite)) if finite else float("nan")
    row["epochs"] = float(np.mean(epochs))
    row["fit_seconds"] = round(time.perf_counter() - started, 3)
    return row


def mark_choices(table: pd.DataFrame, mode: str) -> pd.DataFrame:
    """``is_best``: the probe row of the best selection score (held-out training sentences); ``is_best_on_test``:
    that of the best test score in the same measure, to show how optimistic choosing on the test would be."""
    measure = METRICS[mode][SELECTED_BY[mode]]
    probes = table[table.kind == "probe"]
    table["is_best"] = False
    table["is_best_on_test"] = False
    if probes.selection_score.notna().any():
        table.loc[probes.selection_score.idxmax(), "is_best"] = True
    if probes[measure].notna().any():
        table.loc[probes[measure].idxmax(), "is_best_on_test"] = True
    return table


def _scored_counts(inputs: StructuralInputs) -> tuple[int, int]:
    """How many test sentences can score each measure (the gold side of ``structural_trees.scored_sentences``):
    with two scored words (UUAS) or a scored root (root accuracy), and of those, the ones of 5 to 50 words."""
    tree, tested = inputs.treebank, inputs.plan.tested.tolist()
    pairs = [int(tree.keep[k].sum()) >= 2 for k in tested]
    rooted = [bool(tree.keep[k][tree.depths[k] == 0].any()) for k in tested]
    low, high = SPEARMAN_LENGTHS
    spearman = [ok and low <= int(tree.sentences.lengths[k]) <= high for k, ok in zip(tested, pairs, strict=True)]
    return sum(pairs if inputs.mode == "distance" else rooted), sum(spearman)


def measure_notes(table: pd.DataFrame, inputs: StructuralInputs) -> list[str]:
    """Why a measure has no value, or a value without its interval (fewer than ``MIN_SENTENCES`` test sentences
    score it: resamples of one sentence cannot vary), in the rows of ``table``."""
    unit = "two scored (non-punctuation) words" if inputs.mode == "distance" else "a scored (non-punctuation) root"
    low, high = SPEARMAN_LENGTHS
    reasons = (f"has {unit}", f"has {low} to {high} words, the lengths it averages over (Hewitt & Manning 2019)")
    notes = []
    for name, count, reason in zip(METRICS[inputs.mode], _scored_counts(inputs), reasons, strict=True):
        values, lows = table[name], table[f"{name}_low"]
        if values.isna().all():
            notes.append(f"{SHOWN[name]}: no value: no test sentence {reason}")
        elif (values.notna() & lows.isna()).any():
            notes.append(
                f"{SHOWN[name]}: no 95% interval: {count} test sentence{'s' * (count != 1)} {reason.split(',')[0]}, "
                f"and an interval resamples whole sentences (it needs {MIN_SENTENCES})"
            )
    return notes


def _resolve(config: ProbeConfig, source: Any, notes: list[str]) -> tuple[StructuralInputs, list, list, dict]:
    """The inputs, layers, poolings and file records of a run, read from its features file (or ``source``)."""
    mode = str(config.structural)
    path = config.features if source is None else getattr(source, "path", "the source")
    with open_probed(str(path), config) if source is None else opened_source(source) as opened:
        tree = read_trees(opened, mode, notes, path)
        layers = word_layers(opened, config)
        poolings = parse_poolings(config.poolings, opened.word_poolings())
        split = None if opened.split is None else np.asarray(opened.split, dtype=object)[tree.rows]
        dimension = int(opened.word_features(poolings[0], layers[0]).shape[1])
        file = file_meta(getattr(opened, "attrs", {}))
    plan = sentence_folds(split, len(tree.rows), int(config.folds), int(config.seed), notes)
    rank = DEFAULT_RANK if config.rank is None else int(config.rank)
    if rank > dimension:
        notes.append(f"rank {rank} is above the {dimension} dimensions of the word vectors: rank {dimension}")
        rank = dimension
    inputs = StructuralInputs(mode, tree, plan, rank, int(config.seed), int(config.n_bootstrap), config.allow_partial)
    return inputs, layers, poolings, file


@keywords_of(ProbeConfig)
def structural_probe(config: ProbeConfig | str | Path | None = None, source: Any = None, **options: Any):
    """Structural probes of a treebank's features file: ``structural_probe("gum.h5", structural="distance")``.

    Takes a ``ProbeConfig`` (with ``structural`` set) or its fields as keywords; ``source``: an open object with
    ``FeatureFile``'s word methods instead of the file (tests). Returns a ``StructuralResult``, whose table is also
    written as CSV and JSON unless ``write=False``."""
    from ...progress import progress_bar
    from ...state import given_or_last, remember
    from ..inputs import job_workers, run_jobs
    from ..plan import probe_config

    config = probe_config(config, **options)
    if config.structural is None:
        raise InputError("no structural probe asked for", "give structural='distance' or 'depth' (--structural)")
    started, notes = time.perf_counter(), []
    if source is None:
        features, using_last = given_or_last(config.features, "features")
        notes += [using_last] if using_last else []
        config = config.replace(features=features)
    inputs, layers, poolings, file = _resolve(config, source, notes)
    reference = str(config.features) if source is None else source
    jobs = [(reference, layer, pooling, inputs) for pooling in poolings for layer in layers]
    with progress_bar(total=len(jobs), unit="job", disable=not config.progress, desc="probe") as bar:
        rows = run_jobs(probe_job, jobs, job_workers(config.jobs, len(jobs)), done=bar.update)
    table = pd.DataFrame([baseline_row(inputs), *rows])
    table = mark_choices(table.astype({"layer": "Int64", "rank": "Int64"}), inputs.mode)
    notes += measure_notes(table, inputs)
    meta = _meta(config, inputs, file, layers, poolings, table, notes, started)
    result = StructuralResult(table, meta, notes)
    if config.write:
        prefix = results_prefix(Path(str(config.features)), inputs.mode, "structural", config.output)
        result.csv_path, result.json_path = Path(f"{prefix}.csv"), Path(f"{prefix}.json")
        write_results(table, meta, result.csv_path, result.json_path)
        if source is None:
            remember("results", result.csv_path)  # featx plot / featx report with no path draw this run
    return result


def _choice(table: pd.DataFrame, column: str, mode: str) -> dict | None:
    """The row marked in ``column`` (``is_best``, ``is_best_on_test``) as the JSON records it."""
    marked = table[table[column]]
    if marked.empty:
        return None
    row = marked.iloc[0]
    return {key: json_safe(row[key]) for key in ("layer", "pooling", "selection_score", *_measures(mode))}


def _measures(mode: str) -> list[str]:
    return [f"{name}{end}" for name in METRICS[mode] for end in ("", "_low", "_high")]


def _meta(config, inputs: StructuralInputs, file, layers, poolings, table, notes, started) -> dict:
    """The JSON's metadata: the run, its sentences, baseline and choices."""
    from ..meta import package_versions

    tree, mode = inputs.treebank, inputs.mode
    return {
        "structural": mode,
        "features_file": str(Path(str(config.features)).resolve()),
        "file": file,
        "rank": inputs.rank,
        "layers": [int(layer) for layer in layers],
        "poolings": list(poolings),
        "evaluation": inputs.plan.evaluation,
        "folds": None if inputs.plan.evaluation == "split" else int(config.folds),
        "seed": inputs.seed,
        "n_bootstrap": inputs.n_bootstrap,
        "n_sentences": int(len(tree.rows)),
        "n_words": int(tree.sentences.lengths.sum()),
        "punctuation": tree.punctuation,
        "metrics": list(METRICS[mode]),
        "selection_metric": METRICS[mode][SELECTED_BY[mode]],
        "selected_by": f"{SHOWN[METRICS[mode][SELECTED_BY[mode]]]} of the training sentences held out to stop early",
        "baseline": BASELINES[mode][1],
        "selected": _choice(table, "is_best", mode),
        "best_on_test": _choice(table, "is_best_on_test", mode),
        "seconds": round(time.perf_counter() - started, 3),
        "versions": package_versions(),
        "notes": list(notes),
    }

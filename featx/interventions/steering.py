"""The steering dose-response of ``featx intervene --edit steer``: per alpha, the share of rows the bundle, read at
its own layer at or above the edit, moves toward ``--toward`` (predicted that class after, among the rows it did
not predict it for before) and the mean change of that class's score, against a seeded random direction of the same
norm; 95% Wilson and Student-t intervals (with ``--group``, by whole groups, ``stats.py``). The rows measured and
the direction each is steered along are ``steer_rows.py``'s: never a row the direction was computed from. Alpha 0
moves nothing by construction (each part's rows run unedited and at alpha 0 in the same batches)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .edits import run_steered
from .forward import bundle_matrix
from .result import STEER_COLUMNS, InterveneResult
from .stats import mean_interval, share_interval
from .steer_rows import Steering


def _reader(plan, forward, column: int, alpha: float = 0.0):
    """``read(rows, vector)`` for ``Steering.gather``: the bundle's predictions and its score of the class on the pass
    of the file ``rows`` steered along ``alpha`` times ``vector`` (None: unedited)."""
    bundle = plan.bundle

    def read(rows, vector) -> tuple[np.ndarray, np.ndarray]:
        run = forward.run(rows=rows) if vector is None else run_steered(plan, forward, vector, alpha, rows=rows)
        X = bundle_matrix(run, bundle)
        return np.asarray(bundle.predict_features(X)), np.asarray(bundle.scores_features(X))[:, column]

    return read


def steer_meta(plan, steering: Steering, started: float, notes: list[str], reader: dict) -> dict:
    """The JSON settings of a dose-response, read by the bundle or through the answers (``contrast.py``: ``reader``,
    what reads it)."""
    config = plan.config
    return {
        "kind": "steer",
        "features_file": str(plan.features.resolve()),
        "model": plan.provenance.model,
        **reader,
        "toward": str(config.toward),
        "at": plan.at[0],
        "direction_source": steering.source,
        "measured_rows": steering.measured,
        "random_direction": "one unit direction drawn with --seed, the same for every row",
        **({"site": config.site} if config.site else {}),
        "alphas": list(config.alphas),
        "seed": config.seed,
        **(plan.group_meta or {}),  # --group: the folds and the intervals by whole groups
        "n_rows": len(steering.rows),  # the measured rows
        "passes": {"unedited": 1, "steered": 2 * len(config.alphas)},  # each over the measured rows
        "runs_per_pass": len(steering.parts),  # one per fold under cross-fitting, each with its own direction
        "notes": notes,
        "seconds": round(time.perf_counter() - started, 3),
    }


def steer_record(alpha: float, name: str, layer: int, read_at, moved, change, n_rows: int) -> dict:
    """One row of a dose-response (``STEER_COLUMNS``): ``moved`` and ``change`` are (value, low, high)."""
    return {
        "alpha": alpha,
        "direction": name,
        "layer": layer,
        "read_at": read_at,
        **dict(zip(("moved", "moved_low", "moved_high"), moved, strict=True)),
        **dict(zip(("score_change", "score_change_low", "score_change_high"), change, strict=True)),
        "n_rows": n_rows,
    }


def dose_response(plan, forward, steering: Steering, started: float) -> InterveneResult:
    """The dose-response of ``steering`` (``steer_rows.steering_rows``: each part's rows along its direction, and
    the random one) read by the bundle."""
    bundle, config = plan.bundle, plan.config
    toward = str(config.toward)
    column = bundle.classes.index(toward)
    predicted, score = steering.gather(_reader(plan, forward, column))
    groups = steering.groups(plan)
    candidates = predicted != toward
    records = []
    for alpha in config.alphas:
        for name in ("probe", "random"):
            after, after_score = steering.gather(_reader(plan, forward, column, alpha), name)
            held = None if groups is None else groups[candidates]
            moved = share_interval(after[candidates] == toward, groups=held)
            change = mean_interval(after_score - score, groups)
            records.append(
                steer_record(alpha, name, plan.at[0], max(bundle.layers), moved, change, int(candidates.sum()))
            )
    nothing = [] if candidates.any() else [f"the bundle already predicts {toward} for every row: nothing can move"]
    notes = [*plan.notes, *steering.notes, *nothing]
    reader = {"bundle": str(config.bundle), "label": bundle.label, "read_at": max(bundle.layers)}
    meta = steer_meta(plan, steering, started, notes, reader)
    return InterveneResult(pd.DataFrame(records, columns=STEER_COLUMNS), meta, plan.output, notes)


__all__ = ["dose_response", "steer_meta", "steer_record"]

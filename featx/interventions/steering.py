"""The steering dose-response of ``featx intervene --edit steer``: per alpha, the share of rows the bundle, read at
its own layer at or above the edit, moves toward ``--toward`` (predicted that class after, among the rows it did
not predict it for before) and the mean change of that class's score, against a seeded random direction of the same
norm; 95% Wilson and Student-t intervals. Alpha 0 moves nothing by construction."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .edits import run_steered
from .forward import bundle_matrix
from .result import STEER_COLUMNS, InterveneResult
from .stats import mean_interval, share_interval


def _read(bundle, embeddings, column: int) -> tuple[np.ndarray, np.ndarray]:
    X = bundle_matrix(embeddings, bundle)
    return np.asarray(bundle.predict_features(X)), np.asarray(bundle.scores_features(X))[:, column]


def dose_response(plan, forward, directions: tuple, started: float) -> InterveneResult:
    """The dose-response along ``directions`` (``edits.steering_directions``: the direction, the random one and
    where the first came from)."""
    bundle, config = plan.bundle, plan.config
    toward = str(config.toward)
    column = bundle.classes.index(toward)
    direction, random, source = directions
    predicted, score = _read(bundle, forward.run(), column)
    candidates = predicted != toward
    records = []
    for alpha in config.alphas:
        for name, vector in (("probe", direction), ("random", random)):
            after, after_score = _read(bundle, run_steered(plan, forward, vector, alpha), column)
            moved = share_interval(after[candidates] == toward, int(candidates.sum()))
            change = mean_interval(after_score - score)
            records.append(
                {
                    "alpha": alpha,
                    "direction": name,
                    "layer": plan.at[0],
                    "read_at": max(bundle.layers),
                    **dict(zip(("moved", "moved_low", "moved_high"), moved, strict=True)),
                    **dict(zip(("score_change", "score_change_low", "score_change_high"), change, strict=True)),
                    "n_rows": int(candidates.sum()),
                }
            )
    notes = [] if candidates.any() else [f"the bundle already predicts {toward} for every row: nothing can move"]
    meta = {
        "kind": "steer",
        "features_file": str(plan.features.resolve()),
        "model": plan.provenance.model,
        "bundle": str(config.bundle),
        "label": bundle.label,
        "toward": toward,
        "at": plan.at[0],
        "read_at": max(bundle.layers),
        "direction_source": source,
        **({"site": config.site} if config.site else {}),
        "alphas": list(config.alphas),
        "seed": config.seed,
        "n_rows": len(forward.texts),
        "notes": notes,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return InterveneResult(pd.DataFrame(records, columns=STEER_COLUMNS), meta, plan.output, notes)


__all__ = ["dose_response"]

"""A small synthetic study table of the shape featx.study.load returns (two models, one of them with a hostile
name, two tasks, two metrics, two poolings, layers 0..4), built in memory: the study report tests' data."""

from __future__ import annotations

import numpy as np
import pandas as pd

HOSTILE = '</script><script>alert("m")</script><img src=x onerror=alert(1)> $x$'


def study_rows(models=("minilm", HOSTILE), tasks=(("sst2", "label"), ("gum", "upos")), n_layers=4) -> pd.DataFrame:
    """One row per model x task x metric x pooling x layer: accuracy at mean and cls pooling, macro-F1 at mean
    only (so one metric x pooling pair has no rows), a curve that peaks at layer 2, and the accuracy/mean row
    at layer 3 marked chosen."""
    rows = []
    for m, model in enumerate(models):
        for t, (corpus, label) in enumerate(tasks):
            for metric, pooling in (("accuracy", "mean"), ("accuracy", "cls"), ("macro_f1", "mean")):
                for layer in range(n_layers + 1):
                    score = 0.9 - 0.05 * abs(layer - 2) - 0.1 * m - 0.01 * t - (0.02 if pooling == "cls" else 0)
                    rows.append(
                        {
                            "model": model,
                            "corpus": corpus,
                            "label": label,
                            "metric": metric,
                            "layer": layer,
                            "n_layers": n_layers,
                            "relative_depth": layer / n_layers,
                            "pooling": pooling,
                            "classifier": "logreg",
                            "score": score,
                            "ci_low": score - 0.04,
                            "ci_high": score + 0.04,
                            "selection_score": score + (0.1 if layer == 1 else 0.0),
                            "chosen": metric == "accuracy" and pooling == "mean" and layer == 3,
                            "majority": 0.5,
                            "lexical": 0.7,
                            "control": np.nan,
                            "selectivity": np.nan,
                            "random_init": m == 1,
                            "seed": 0 if m == 1 else pd.NA,
                        }
                    )
    return pd.DataFrame(rows)

"""A small structural probe results file in the format ``featx probe --structural`` writes (its ``meta`` and
``results`` records, see ``featx.probing.tasks.structural``), for the plot and report tests: known values, two
poolings, the chosen row and a different best-on-test row. ``tests/probing/tasks/test_structural.py`` checks that
the writer's own files load the same way."""

from __future__ import annotations

import json
from pathlib import Path

MEASURES = {"distance": ("uuas", "dspr"), "depth": ("root_accuracy", "nspr")}
BASELINE = {"distance": "chain", "depth": "position"}


def value(pooling_index: int, layer: int, measure_index: int) -> float:
    """The planted score of a (pooling, layer) in a measure: distinct everywhere, highest at layer 2 of pooling 1."""
    return round(0.30 + 0.1 * (2 - abs(layer - 2)) + 0.05 * pooling_index + 0.01 * measure_index, 3)


def _measures(mode: str, scores: tuple[float, float]) -> dict:
    record = {}
    for name, score in zip(MEASURES[mode], scores, strict=True):
        record.update({name: score, f"{name}_low": round(score - 0.02, 3), f"{name}_high": round(score + 0.02, 3)})
    return record


def structural_payload(
    mode: str = "distance", model: str = "tiny-model", poolings=("mean", "first"), layers: int = 4
) -> dict:
    """The JSON of a run: a baseline row at 0.35/0.45, probe rows of ``value``; the chosen row is layer 1 of the
    first pooling (the highest selection score), the best on test layer 2 of the second."""
    baseline = {"features": "main", "structural": mode, "kind": BASELINE[mode], "layer": None, "pooling": ""}
    baseline.update(_measures(mode, (0.35, 0.45)), selection_score=None, is_best=False, is_best_on_test=False)
    rows = [baseline]
    for p, pooling in enumerate(poolings):
        for layer in range(layers):
            row = {"features": "main", "structural": mode, "kind": "probe", "layer": layer, "pooling": pooling}
            row.update(_measures(mode, (value(p, layer, 0), value(p, layer, 1))))
            chosen, best = (p, layer) == (0, 1), (p, layer) == (1, 2)
            row.update(selection_score=0.9 if chosen else 0.5, is_best=chosen, is_best_on_test=best)
            rows.append(row)
    meta = {
        "structural": mode,
        "features_file": "/data/words.h5",
        "file": {"model": model},
        "rank": 64,
        "layers": list(range(layers)),
        "poolings": list(poolings),
        "evaluation": "5-fold cv",
        "folds": 5,
        "seed": 0,
        "n_bootstrap": 100,
        "n_sentences": 120,
        "n_words": 1500,
        "metrics": list(MEASURES[mode]),
        "baseline": f"the {BASELINE[mode]} baseline",
        "notes": ["a note"],
    }
    return {"meta": meta, "results": rows}


def write_structural(path: Path, payload: dict | None = None, **options) -> Path:
    """Write ``payload`` (default: ``structural_payload(**options)``) as JSON at ``path``."""
    path.write_text(json.dumps(payload if payload is not None else structural_payload(**options)), encoding="utf-8")
    return path

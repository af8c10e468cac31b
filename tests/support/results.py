"""Small synthetic probe results in the results-file format (one row per layer spec x pooling x classifier)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

from support.tiny import WORDS


def synthetic_results(
    label="sentiment",
    names=("neg", "pos"),
    layers=range(3),
    poolings=("cls", "mean"),
    peak=(2, "mean"),
    classifiers=("logreg",),
    baseline=True,
    model="tiny-bert",
    n_train=7,
    n_test=5,
):
    """A results table whose best (layer, pooling) is ``peak``; accuracy = 0.5 + 0.1 * layer (+0.15 at the peak)."""
    rows = [
        dict(
            features="main",
            label=label,
            layer_spec="majority",
            kind="majority",
            layer=None,
            pooling="",
            classifier="majority",
            accuracy=0.5,
            macro_f1=0.33,
            balanced_accuracy=0.5,
            n_train=n_train,
            n_test=n_test,
            evaluation="split",
            is_best=False,
        )
    ]
    for classifier_index, classifier in enumerate(classifiers):
        for pooling_index, pooling in enumerate(poolings):
            for layer in layers:
                accuracy = 0.5 + 0.1 * layer - 0.02 * pooling_index - 0.05 * classifier_index
                if (layer, pooling) == peak and classifier_index == 0:
                    accuracy += 0.15
                accuracy = round(min(accuracy, 0.99), 4)
                rows.append(
                    dict(
                        features="main",
                        label=label,
                        layer_spec=str(layer),
                        kind="single",
                        layer=layer,
                        pooling=pooling,
                        classifier=classifier,
                        accuracy=accuracy,
                        accuracy_low=accuracy - 0.05,
                        accuracy_high=min(1.0, accuracy + 0.05),
                        macro_f1=accuracy - 0.01,
                        macro_f1_low=accuracy - 0.06,
                        macro_f1_high=accuracy + 0.04,
                        balanced_accuracy=accuracy,
                        balanced_accuracy_low=accuracy - 0.05,
                        balanced_accuracy_high=min(1.0, accuracy + 0.05),
                        control_accuracy=0.52 + 0.01 * layer,
                        selectivity=round(accuracy - 0.52 - 0.01 * layer, 4),
                        C=1.0,
                        fit_seconds=0.01,
                        n_train=n_train,
                        n_test=n_test,
                        evaluation="split",
                        per_class_f1=json.dumps({name: round(accuracy - 0.1 * i, 4) for i, name in enumerate(names)}),
                        is_best=False,
                    )
                )
    last = max(layers)
    rows.append(
        dict(
            features="main",
            label=label,
            layer_spec=f"cat({last - 1},{last})",
            kind="cat",
            layer=None,
            pooling=poolings[0],
            classifier=classifiers[0],
            accuracy=0.6,
            n_train=n_train,
            n_test=n_test,
            evaluation="split",
            is_best=False,
        )
    )
    if baseline:
        for layer in layers:
            rows.append(
                dict(
                    features="baseline",
                    label=label,
                    layer_spec=str(layer),
                    kind="single",
                    layer=layer,
                    pooling=poolings[0],
                    classifier=classifiers[0],
                    accuracy=0.55 + 0.01 * layer,
                    n_train=n_train,
                    n_test=n_test,
                    evaluation="split",
                    is_best=False,
                )
            )
    frame = pd.DataFrame(rows)
    single = frame[(frame["kind"] == "single") & (frame["features"] == "main")]
    frame.loc[single["accuracy"].idxmax(), "is_best"] = True
    meta = {
        "features": "tiny.features.h5",
        "model": model,
        "label": label,
        "label_names": list(names),
        "n_rows": n_train + n_test,
        "evaluation": "split",
        "classifiers": list(classifiers),
    }
    return frame, meta


def write_results(frame: pd.DataFrame, meta: dict, stem: Path) -> tuple[Path, Path]:
    """Write ``<stem>.csv`` and ``<stem>.json`` the way featx probe does."""
    csv_path, json_path = Path(f"{stem}.csv"), Path(f"{stem}.json")
    frame.to_csv(csv_path, index=False)
    records = json.loads(frame.to_json(orient="records"))
    json_path.write_text(json.dumps({"meta": meta, "results": records}, indent=1))
    return csv_path, json_path


def tiny_rows(n: int = 60, seed: int = 3):
    """(text, sentiment, split) rows in the tiny model's vocabulary: enough rows for a real probe to run."""
    rng = random.Random(seed)
    words = [word for word in WORDS if word.isalpha()]
    return [
        (
            " ".join(rng.choice(words) for _ in range(rng.randint(3, 8))),
            ("neg", "pos")[i % 2],
            "test" if i % 4 == 0 else "train",
        )
        for i in range(n)
    ]

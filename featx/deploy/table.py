"""The predictions table of ``featx predict``: the id, the prediction and each class's probability (margins
for svm; the value for regression), or the top k classes; how it is written (CSV with formula-safe cells,
TSV, JSON Lines) atomically; and the score against a label column of the corpus (``--label``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..extraction import Corpus
from ..io import STDOUT, write_csv
from ..probing import regression_metrics as rm
from ..safe_files import atomic_write_text
from .probe import Probe


def check_scoring(corpus: Corpus, label: str | None, probe: Probe) -> np.ndarray | None:
    """The true values of the ``--label`` column (class codes into the probe's classes, -1 missing; or
    floats, NaN missing); a class the probe never saw is refused. A word probe scores against a word label
    column of a word input (one value per word)."""
    if label is None:
        return None
    words = probe.level == "word"
    columns = dict(getattr(corpus.words, "labels", None) or {}) if words else corpus.labels
    if label not in columns:
        found = ", ".join(columns) or "none"
        kind = "word label column" if words else "label column"
        raise InputError(
            f"the corpus has no {kind} '{label}' to score against ({kind}s: {found})",
            "word labels come with word inputs (CoNLL-U, --columns, JSON Lines of tokens)" if words else None,
        )
    column = columns[label]
    codes = np.asarray(column.codes)
    if probe.classes is None:
        try:
            values = np.array([float(column.names[c]) if c >= 0 else np.nan for c in codes])
        except ValueError:
            raise InputError(f"label column '{label}' is not numeric; this probe predicts numbers") from None
        return values
    classes = probe.classes

    def refuse(unseen: list[str]) -> InputError:
        shown = ", ".join(f"'{name}'" for name in unseen[:5])
        return InputError(
            f"label column '{label}' holds label(s) {shown} that the probe never saw when it was fitted "
            f"(its classes: {', '.join(classes[:10])})",
            "score only rows of the fitted classes, or fit again with these labels",
        )

    return fitted_codes(column, codes, classes, refuse)


def fitted_codes(column, codes: np.ndarray, classes: list[str], refuse) -> np.ndarray:
    """``codes`` of a label ``column`` as positions in a probe's ``classes`` (-1 missing); the names it never saw,
    sorted, are refused with the ``InputError`` that ``refuse(unseen)`` gives."""
    index = {name: position for position, name in enumerate(classes)}
    unseen = sorted({column.names[c] for c in codes if c >= 0} - set(index))
    if unseen:
        raise refuse(unseen)
    return np.array([index[column.names[c]] if c >= 0 else -1 for c in codes], dtype=np.int64)


def output_frame(probe: Probe, index: dict[str, list], scores: np.ndarray, top_k: int | None, threshold: float | None):
    """One row per corpus row (word probes: per word): the ``index`` columns (``id``; for words also ``word``, its
    position from 1, and ``form``), the prediction, then the class columns (or the top k)."""
    frame = pd.DataFrame({name: list(values) for name, values in index.items()})
    if probe.classes is None:
        frame["prediction"] = scores[:, 0]
        return frame
    classes = np.asarray(probe.classes, dtype=object)
    codes = np.argmax(scores, axis=1)
    if threshold is not None:
        codes = (scores[:, 1] >= threshold).astype(np.int64)
    frame["prediction"] = classes[codes]
    prefix = "p" if probe.head.has_proba else "score"
    if top_k is not None:
        order = np.argsort(-scores, axis=1, kind="stable")[:, : min(top_k, len(classes))]
        for rank in range(order.shape[1]):
            frame[f"top_{rank + 1}"] = classes[order[:, rank]]
            frame[f"{prefix}_top_{rank + 1}"] = scores[np.arange(len(scores)), order[:, rank]]
        return frame
    for position, name in enumerate(probe.classes):
        frame[f"{prefix}_{name}"] = scores[:, position]
    return frame


def write_frame(frame: pd.DataFrame, path: Path) -> None:
    """CSV (formula-safe cells), TSV (``.tsv``) or JSON Lines (``.jsonl``), through a temporary file; CSV to
    standard output for the path ``-``."""
    if str(path) == STDOUT or path.suffix.lower() != ".jsonl":
        write_csv(frame, path, sep="\t" if path.suffix.lower() == ".tsv" else ",")
        return
    text = frame.to_json(orient="records", lines=True, force_ascii=False)
    atomic_write_text(path, text if text.endswith("\n") else text + "\n")


def score_line(probe: Probe, frame: pd.DataFrame, truth: np.ndarray | None) -> str | None:
    """Accuracy (or R²) of the predictions on the rows whose ``--label`` is present."""
    if truth is None:
        return None
    if probe.classes is None:
        known = np.isfinite(truth)
        predicted = frame["prediction"].to_numpy(dtype=np.float64)[known]
        r2 = float(rm.metrics(truth[known], predicted)["r2"]) if known.any() else float("nan")
        return f"R² {r2:.4f} on {int(known.sum())} labelled rows"
    items = {"word": "words", "arc": "arcs"}.get(probe.level, "rows")
    known = truth >= 0
    index = {name: position for position, name in enumerate(probe.classes)}
    predicted = np.array([index[name] for name in frame["prediction"]], dtype=np.int64)
    accuracy = float(np.mean(predicted[known] == truth[known])) if known.any() else float("nan")
    return f"accuracy {accuracy:.4f} on {int(known.sum())} labelled {items}"


__all__ = ["STDOUT", "check_scoring", "fitted_codes", "output_frame", "score_line", "write_frame"]

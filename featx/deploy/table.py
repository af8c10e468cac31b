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
from ..options import spoken
from ..probing import regression_metrics as rm
from ..probing import split_parts
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
            "word labels come with word inputs (CoNLL-U, --columns, JSON Lines of tokens)"
            if words
            else f"name one of them with {spoken(None, 'label', '--label')}, or leave it out (no score)",
        )
    column = columns[label]
    codes = np.asarray(column.codes)
    if probe.classes is None:
        try:
            values = np.array([float(column.names[c]) if c >= 0 else np.nan for c in codes])
        except ValueError:
            raise InputError(
                f"label column '{label}' is not numeric; this probe predicts numbers",
                f"score against a column of numbers, or leave {spoken(None, 'label', '--label')} out",
            ) from None
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
    atomic_write_text(path, json_lines(frame))


def json_lines(frame: pd.DataFrame) -> str:
    """One JSON object a row, every float exactly as the CSV has it (``frame.to_json`` rounds to 10 decimal places:
    a probability of 3e-12 was 0, one of 2.6e-05 kept 6 digits), a missing or infinite value as null."""
    import json
    import math

    records = frame.to_dict(orient="records")
    return "".join(
        json.dumps({k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()},
                   ensure_ascii=False, separators=(",", ":")) + "\n"
        for r in records
    )  # fmt: skip


def score_line(probe: Probe, frame: pd.DataFrame, truth: np.ndarray | None) -> str | None:
    """Accuracy (or R²) of the predictions on the items whose ``--label`` is present, beside a constant
    prediction's: the most frequent class among them (R²: 0 is their own mean)."""
    if truth is None:
        return None
    return _score(probe, frame, truth, np.arange(len(truth)))


def _score(probe: Probe, frame: pd.DataFrame, truth: np.ndarray, rows: np.ndarray) -> str:
    """``score_line`` of the items ``rows`` (positions in ``frame`` and ``truth``)."""
    items = {"word": "words", "arc": "arcs"}.get(probe.level, "rows")
    truth = truth[rows]
    if probe.classes is None:
        known = np.isfinite(truth)
        predicted = frame["prediction"].to_numpy(dtype=np.float64)[rows][known]
        r2 = float(rm.metrics(truth[known], predicted)["r2"]) if known.any() else float("nan")
        return f"R² {r2:.4f} on {int(known.sum())} labelled {items} (0: predicting their own mean)"
    known = truth >= 0
    index = {name: position for position, name in enumerate(probe.classes)}
    predicted = np.array([index[name] for name in frame["prediction"]], dtype=np.int64)[rows]
    if not known.any():
        return f"accuracy nan on 0 labelled {items}"
    accuracy = float(np.mean(predicted[known] == truth[known]))
    counts = np.bincount(truth[known], minlength=len(probe.classes))
    top = int(np.argmax(counts))  # the first class on a tie
    return (
        f"accuracy {accuracy:.4f} on {int(known.sum())} labelled {items}; most frequent class among them "
        f"({probe.classes[top]!r}): {counts[top] / known.sum():.4f}"
    )


def fitted_corpus_note(probe: Probe, corpus: Corpus, frame: pd.DataFrame, truth: np.ndarray | None) -> str | None:
    """A note under the score when ``corpus`` is the very corpus file the probe was fitted on (its sha256 is the
    one the bundle's features file recorded): the score then mixes the rows that trained the probe with held-out
    ones. A sentence probe's corpus with a test split also gets the score of its test-split rows alone, which is
    featx fit's test score; otherwise the note points to featx fit's cross-validated score. A probe fitted on
    another file of the same rows cannot be told apart (nothing is said then)."""
    if truth is None or fitted_corpus_sha256(probe) != corpus.sha256:
        return None
    fitted = "the probe was fitted (featx fit) on this corpus"
    labelled = np.isfinite(truth) if probe.classes is None else truth >= 0
    if probe.level == "sentence" and corpus.split is not None:
        train, test, dev = split_parts(np.asarray(corpus.split, dtype=object))
        trained = int(labelled[np.union1d(train, dev)].sum())
        tested = test[labelled[test]]
        if len(tested):
            return (
                f"{fitted}: {trained} of these {int(labelled.sum())} labelled rows trained it, so the score above is "
                f"not held out; its {len(tested)} test-split rows alone: {_score(probe, frame, truth, tested)}"
            )
    selection = probe.info.get("selection") or {}
    cv = selection.get("cv_score")
    told = f"; featx fit's cross-validated {selection.get('metric')}: {cv:.4f}" if isinstance(cv, float) else ""
    items = {"word": "words", "arc": "words" if probe.arcs == "head" else "arcs"}.get(probe.level, "rows")
    return f"{fitted}: its training {items} are among the scored ones, so the score above is not held out{told}"


def fitted_corpus_sha256(probe: Probe) -> str | None:
    """The sha256 of the corpus file whose features the probe was fitted on, as its bundle records it."""
    from ..safe_files import loads_json

    try:
        recorded = loads_json((probe.info.get("features_file") or {}).get("fingerprint") or "")
    except (TypeError, ValueError):
        return None
    return recorded.get("corpus_sha256") if isinstance(recorded, dict) else None


__all__ = [
    "STDOUT",
    "check_scoring",
    "fitted_codes",
    "fitted_corpus_note",
    "fitted_corpus_sha256",
    "output_frame",
    "score_line",
    "write_frame",
]

"""Reading the results of ``featx probe --structural distance|depth`` back for ``featx plot`` and ``featx report``.

The run writes ``<stem>.<mode>.structural.csv`` and ``.json`` (or ``PREFIX.csv``/``.json``); the JSON holds the same
records as the CSV plus the run's ``meta``, so both names are read from the JSON. A results file is untrusted input
(it may come from anyone): ``load_structural`` checks its whole shape (the mode, one baseline row of the mode's kind,
probe rows with a whole layer, a pooling name and each measure a finite number between -1 and 1 or missing, at most
one chosen row) and refuses anything else with one ``InputError`` naming the file and what is wrong, before a figure
or a page is drawn from it. What it returns is a ``StructuralResults``: the probe rows, the baseline row, the
chosen and best-on-test rows and the meta.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError, StoreError
from ..json_fields import shown
from ..options import on_command_line
from ..safe_files import loads_json

MEASURES = {"distance": ("uuas", "dspr"), "depth": ("root_accuracy", "nspr")}
SELECTED_BY = {"distance": "uuas", "depth": "nspr"}  # the measure a run chooses its layer in
BASELINES = {"distance": ("chain", "linear chain"), "depth": ("position", "word position")}
MEASURE_NAMES = {"uuas": "UUAS", "dspr": "DSpr", "root_accuracy": "root accuracy", "nspr": "NSpr"}
NO_CHOICE = {  # why no layer was chosen (no held-out training sentence scores the selection measure), and what to do
    "distance": "no held-out training sentence has two scored (non-punctuation) words, which UUAS needs; give "
    "sentences of two words or more",
    "depth": "NSpr, the measure a depth probe is chosen in, averages over sentences of 5 to 50 words (Hewitt & "
    "Manning 2019), and no held-out training sentence has 5 to 50 words; give a treebank with sentences of 5 to 50 "
    "words, or use --structural distance (chosen in UUAS, which needs two words)",
}
LONGEST_NAME = 200  # a pooling name longer than this is not one featx wrote


def _structural_run() -> str:
    """What writes structural probe results, as the caller runs it."""
    return "featx probe --structural" if on_command_line() else "featx.probe(..., structural='distance' or 'depth')"


def _hint() -> str:
    return f"give the .structural.json (or .csv) written by {_structural_run()}, or run it again to rewrite it"


@dataclass(frozen=True)
class StructuralResults:
    """A structural run read back: ``probes`` (one row per pooling and layer, in the file's order of poolings, by
    layer; columns ``pooling``, ``layer``, each measure with ``_low``/``_high``, ``selection_score``, ``is_best``,
    ``is_best_on_test``), the ``baseline`` row, the run's ``meta`` and the file read (``source``)."""

    mode: str
    probes: pd.DataFrame
    baseline: pd.Series
    meta: dict
    source: Path

    @property
    def measures(self) -> tuple[str, str]:
        """The run's two measures: ``("uuas", "dspr")`` or ``("root_accuracy", "nspr")``."""
        return MEASURES[self.mode]

    @property
    def selection_measure(self) -> str:
        """The measure the layer was chosen in on the held-out training sentences (UUAS, or NSpr)."""
        return SELECTED_BY[self.mode]

    @property
    def baseline_name(self) -> str:
        """``linear chain`` (distance) or ``word position`` (depth)."""
        return BASELINES[self.mode][1]

    @property
    def chosen(self) -> pd.Series | None:
        """The row chosen on the training sentences (``is_best``); None when no held-out sentence was scored."""
        return _marked(self.probes, "is_best")

    @property
    def best_on_test(self) -> pd.Series | None:
        """The row of the best test score in the selection measure (for comparison only: not a fair choice)."""
        return _marked(self.probes, "is_best_on_test")

    @property
    def model(self) -> str:
        """The model the features came from, as the run's meta records it (``file.model``)."""
        file = self.meta.get("file")
        model = file.get("model") if isinstance(file, dict) else None
        return str(model if model is not None else self.meta.get("model") or "model")


def no_choice_reason(mode: str) -> str:
    """Why a structural run of ``mode`` chose no layer, and what to do, for the printout and the report."""
    return f"no layer could be chosen: {NO_CHOICE.get(mode, 'no held-out training sentence was scored')}"


def _marked(rows: pd.DataFrame, column: str) -> pd.Series | None:
    marked = rows[rows[column]]
    return None if marked.empty else marked.iloc[0]


def json_of(path: Path) -> Path:
    """The JSON a structural results path is read from: itself, or the JSON beside its CSV."""
    return path if path.suffix == ".json" else path.with_suffix(".json")


def is_structural(path: str | os.PathLike) -> bool:
    """Whether ``path`` names structural results: the writer's name (``*.structural.csv``/``.json``), or a JSON
    (beside it) whose ``meta`` records a ``structural`` mode (``-o PREFIX``). A file that cannot be read is not."""
    path = Path(path)
    if path.name.endswith((".structural.json", ".structural.csv")):
        return True
    target = json_of(path)
    if path.suffix not in (".json", ".csv") or not target.is_file():
        return False
    try:
        payload = loads_json(target.read_text(encoding="utf-8"))
    except (ValueError, OSError, RecursionError):
        return False
    return isinstance(payload, dict) and isinstance(payload.get("meta"), dict) and "structural" in payload["meta"]


def _refuse(path: Path, why: str) -> InputError:
    return InputError(f"{path} is not featx structural probe results: {why}", _hint())


def _payload(path: Path) -> tuple[dict, list]:
    """The JSON's ``meta`` and ``results``, each of the right type."""
    target = json_of(path)
    if not target.is_file():
        if path != target and path.exists():
            raise StoreError(f"{target.name}, the JSON beside {path.name}, does not exist", _hint())
        raise StoreError(f"results file {path} does not exist", f"create it with {_structural_run()}")
    try:
        payload = loads_json(target.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as err:
        raise _refuse(target, f"not valid JSON ({type(err).__name__})") from None
    except OSError as err:
        raise StoreError(f"cannot read {target}: {err.strerror or err}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("meta"), dict):
        raise _refuse(target, "no 'meta' object")
    results = payload.get("results")
    if not isinstance(results, list) or not all(isinstance(row, dict) for row in results):
        raise _refuse(target, "'results' is not a list of rows")
    return payload["meta"], results


def _number(value: Any, where: str, path: Path, bound: float | None = 1.0) -> float:
    """A measure's value: a finite number (within ``[-bound, bound]``) or missing (NaN)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _refuse(path, f"{where} is {shown(value)}, not a number")
    if bound is not None and abs(value) > bound:
        raise _refuse(path, f"{where} is {value}, outside -{bound:g} to {bound:g}")
    return float(value)


def _row(record: dict, index: int, mode: str, path: Path) -> dict:
    """One checked results row (``index``: its place in the file, for the message)."""
    where = f"results row {index + 1}"
    kind = record.get("kind")
    if kind not in ("probe", BASELINES[mode][0]):
        raise _refuse(path, f"{where} has kind {shown(kind)}; a {mode} run has 'probe' and {BASELINES[mode][0]!r}")
    row: dict[str, Any] = {"kind": kind, "layer": None, "pooling": ""}
    if kind == "probe":
        layer, pooling = record.get("layer"), record.get("pooling")
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < 10_000:
            raise _refuse(path, f"{where} has layer {shown(layer)}, not a layer number")
        if not isinstance(pooling, str) or not pooling or len(pooling) > LONGEST_NAME:
            raise _refuse(path, f"{where} has no pooling name (a string of 1 to {LONGEST_NAME} characters)")
        row.update(layer=layer, pooling=pooling)
    for name in MEASURES[mode]:
        for column in (name, f"{name}_low", f"{name}_high"):
            row[column] = _number(record.get(column), f"{column} of {where}", path)
    row["selection_score"] = _number(record.get("selection_score"), f"selection_score of {where}", path)
    for column in ("is_best", "is_best_on_test"):
        flag = record.get(column, False)
        if not isinstance(flag, bool) or (flag and kind != "probe"):
            raise _refuse(path, f"{column} of {where} is {shown(flag)}, not true or false on a probe row")
        row[column] = flag
    return row


def _table(records: list, mode: str, path: Path) -> tuple[pd.DataFrame, pd.Series]:
    """The probe rows (checked: one per pooling and layer, at most one marked per column) and the baseline row."""
    rows = [_row(record, index, mode, path) for index, record in enumerate(records)]
    baselines = [row for row in rows if row["kind"] != "probe"]
    probes = pd.DataFrame([row for row in rows if row["kind"] == "probe"])
    if len(baselines) != 1:
        raise _refuse(path, f"{len(baselines)} {BASELINES[mode][0]!r} baseline rows, not one")
    if probes.empty:
        raise _refuse(path, "no probe rows")
    if probes.duplicated(["pooling", "layer"]).any():
        raise _refuse(path, "a pooling and layer appear in more than one row")
    for column in ("is_best", "is_best_on_test"):
        if int(probes[column].sum()) > 1:
            raise _refuse(path, f"{int(probes[column].sum())} rows are marked {column}, not one")
    order = {pooling: index for index, pooling in enumerate(dict.fromkeys(probes["pooling"]))}
    probes = probes.sort_values(["pooling", "layer"], key=lambda c: c.map(order) if c.name == "pooling" else c)
    return probes.reset_index(drop=True).drop(columns="kind"), pd.Series(baselines[0])


def load_structural(path: str | os.PathLike) -> StructuralResults:
    """The structural results at ``path`` (the ``.json``, or the ``.csv`` with its JSON beside it), checked."""
    path = Path(path)
    meta, records = _payload(path)
    mode = meta.get("structural")
    if mode not in MEASURES:
        raise _refuse(json_of(path), f"its mode {shown(mode)} is not distance or depth")
    probes, baseline = _table(records, mode, json_of(path))
    return StructuralResults(mode, probes, baseline, meta, path)


__all__ = [
    "BASELINES",
    "MEASURES",
    "MEASURE_NAMES",
    "StructuralResults",
    "is_structural",
    "json_of",
    "load_structural",
]

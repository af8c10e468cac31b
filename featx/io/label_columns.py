"""A column of label values typed once: integer codes per row (-1 = missing), class names (numeric ones in
numeric order), which values were read as missing, and whether the column looks like a continuous score."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

# ``--missing-labels pandas``: the markers pandas reads as missing by default (the empty cell always is).
PANDAS_MISSING = frozenset({"nan", "NaN", "NAN", "NA", "N/A", "n/a", "null", "NULL", "None", "<NA>", "-NaN", "-nan"})
MISSING_VALUES = PANDAS_MISSING | {""}  # kept for callers of 0.x
MISSING_PRESETS = {"empty": frozenset(), "pandas": PANDAS_MISSING}
CONTINUOUS_MIN_DISTINCT = 20  # a numeric label column with more distinct values than this (and
CONTINUOUS_MIN_FRACTION = 0.05  # than this fraction of its rows, or with decimals) looks continuous
NUMBER = re.compile(r"^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$")  # a cell that reads as a number


def looks_continuous(names: list[str], present: int) -> bool:
    """Numeric class names that look like a score: more than 20 distinct values, with decimals or
    more distinct values than 5% of the labelled rows."""
    if len(names) <= CONTINUOUS_MIN_DISTINCT or not all(NUMBER.match(name) for name in names):
        return False
    decimals = any("." in name or "e" in name.lower() for name in names)
    return decimals or len(names) > CONTINUOUS_MIN_FRACTION * present


NEARLY_NUMERIC_SHARE = 0.05  # non-number cells in at most this share of a score's labelled rows: a typo, not classes


def odd_cells(names: list[str], codes: np.ndarray) -> list[tuple[str, int]]:
    """The values (and their rows) that keep a score from being numbers: non-empty only when the other values
    look continuous and these fill at most ``NEARLY_NUMERIC_SHARE`` of the labelled rows (``inf``, ``?``, a typo);
    read as classes, such a column would make one class per distinct number."""
    others = [code for code, name in enumerate(names) if not NUMBER.match(name)]
    if not others or len(others) == len(names):
        return []
    counts = np.bincount(codes[codes >= 0], minlength=len(names))
    odd_rows, labelled = int(counts[others].sum()), int(counts.sum())
    numbers = sorted((name for name in names if NUMBER.match(name)), key=float)
    if odd_rows > NEARLY_NUMERIC_SHARE * labelled or not looks_continuous(numbers, labelled - odd_rows):
        return []
    return [(names[code], int(counts[code])) for code in others]


@dataclass
class LabelColumn:
    """A candidate label: integer codes per row (-1 = missing) and the class names."""

    name: str
    codes: np.ndarray
    names: list[str]
    missing: dict[str, int] = field(default_factory=dict)  # value read as missing -> rows ("" = empty cell)
    numeric: bool = False  # every present value is a number

    @property
    def n_missing(self) -> int:
        return int((self.codes < 0).sum())

    @property
    def looks_continuous(self) -> bool:
        """Numeric with many distinct values (a score, not classes)."""
        return self.numeric and looks_continuous(self.names, int((self.codes >= 0).sum()))

    def values(self) -> np.ndarray:
        """Each row's value as a float (NaN where missing); for numeric columns only."""
        table = np.array([float(name) for name in self.names] + [np.nan])
        return table[np.where(self.codes >= 0, self.codes, len(self.names))]


def missing_markers(option: str | None) -> frozenset[str]:
    """The label values read as missing besides the empty cell: ``empty`` (none), ``pandas``, or a comma list."""
    if option is None or str(option).strip().lower() in ("", "empty"):
        return frozenset()
    if str(option).strip().lower() == "pandas":
        return PANDAS_MISSING
    return frozenset(value.strip() for value in str(option).split(",") if value.strip())


def label_column(name: str, values: list[str], markers: frozenset[str] = frozenset()) -> LabelColumn:
    """The ``LabelColumn`` of one column's cells: stripped, empty cells and ``markers`` missing, the rest classes."""
    stripped = [value.strip() for value in values]
    missing: dict[str, int] = {}
    for value in stripped:
        if not value or value in markers:
            missing[value] = missing.get(value, 0) + 1
    present = sorted({value for value in stripped if value and value not in markers})
    numeric = bool(present) and all(NUMBER.match(value) for value in present)
    if numeric:
        present.sort(key=float)
    index = {value: code for code, value in enumerate(present)}
    codes = np.fromiter((index.get(value, -1) for value in stripped), dtype=np.int32, count=len(values))
    return LabelColumn(name=name, codes=codes, names=present, missing=missing, numeric=numeric)

"""The reference pages name what the code writes, no more and no less: every column of ``featx probe``'s results
table and learning curves, and every key of its JSON meta, in ``results-columns.md``; every dataset path and
attribute name of the features file's layout (``featx/store/schema.py``) in ``hdf5-schema.md``."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from featx.probing import meta
from featx.probing.results import COLUMNS, CURVE_COLUMNS
from featx.probing.tasks.regression import CURVE_COLUMNS as REGRESSION_CURVE_COLUMNS
from featx.probing.tasks.regression import REGRESSION_COLUMNS
from featx.probing.tasks.words import WORD_COLUMNS
from featx.store import schema

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"


def sections(page: str) -> dict[str, str]:
    """Each ``## `` section's body by its heading."""
    text = (REFERENCE / page).read_text(encoding="utf-8")
    return dict(re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, re.S | re.M))


def first_cells(body: str) -> set[str]:
    """The names in the first cell of every table row of ``body``; ``x`` listed 'each with `_low` and `_high`'
    stands for ``x``, ``x_low`` and ``x_high``."""
    names: set[str] = set()
    for line in body.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split(" | ")[0]
        found = [name for name in re.findall(r"`([^`]+)`", cell) if not name.startswith("_")]
        if "`_low`" in cell:
            found += [name + suffix for name in found for suffix in ("_low", "_high")]
        names |= set(found)
    return names


def test_first_cells_reads_names_and_their_interval_columns():
    body = "| column | what |\n|---|---|\n| `r2`, `mae`, each with `_low` and `_high` | scores |\n| `C` | C |\n"
    assert first_cells(body) == {"r2", "mae", "r2_low", "r2_high", "mae_low", "mae_high", "C"}


def test_every_results_column_is_documented_and_every_documented_one_is_written():
    documented = first_cells(sections("results-columns.md")["The results table"])
    written = set(COLUMNS) | set(REGRESSION_COLUMNS) | set(WORD_COLUMNS)
    assert sorted(written - documented) == [], "columns featx probe writes that results-columns.md lacks"
    assert sorted(documented - written) == [], "columns results-columns.md lists that featx probe no longer writes"


def test_every_learning_curve_column_is_documented():
    documented = set(re.findall(r"`([a-z_0-9]+)`", sections("results-columns.md")["Learning curves"]))
    assert documented == set(CURVE_COLUMNS) | set(REGRESSION_CURVE_COLUMNS)


def test_every_json_meta_key_is_documented_and_every_documented_one_can_be_written():
    grouped = {"file", "versions", "solver", "pairs", "extra"}  # written as the keys below, not by their own name
    fields = {field.name for field in dataclasses.fields(meta.ProbeMeta)} - grouped
    versions = {name + meta.VERSION_SUFFIX for name in meta.package_versions()}
    keys = fields | set(meta.FILE_KEYS) | set(meta.PAIR_KEYS) | set(meta.SOLVER_KEYS) | versions
    documented = first_cells(sections("results-columns.md")["The JSON metadata"])
    assert sorted(keys - documented) == [], "meta keys a results JSON can hold that results-columns.md lacks"
    assert sorted(documented - keys) == [], "meta keys results-columns.md lists that featx probe never writes"


LAYOUT_NAMES = sorted(
    (name, value)
    for name, value in vars(schema).items()
    if name.isupper() and isinstance(value, str) and not name.endswith("_SUFFIX")
)


@pytest.mark.parametrize(("constant", "name"), LAYOUT_NAMES, ids=[constant for constant, _ in LAYOUT_NAMES])
def test_every_name_of_the_features_file_layout_is_in_the_schema_page(constant, name):
    page = (REFERENCE / "hdf5-schema.md").read_text(encoding="utf-8")
    quoted = set(re.findall(r"`([^`]+)`", page))
    paths = {segment for item in quoted if item.startswith("/") for segment in _prefixes(item)}
    assert name in quoted or name in paths, f"schema.{constant} = {name!r} is not in hdf5-schema.md"


def _prefixes(path: str) -> set[str]:
    """``/a/b/c`` -> ``a``, ``a/b``, ``a/b/c`` and each single segment (``b``, ``c``)."""
    parts = path.strip("/").split("/")
    return {"/".join(parts[: index + 1]) for index in range(len(parts))} | set(parts)

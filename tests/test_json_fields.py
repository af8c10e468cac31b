"""The one checker of the JSON type of each field of an untrusted file (``featx.json_fields``) and the two tables it
checks: a bundle's manifest (``featx.bundle_fields.FIELDS``) and a results file's meta
(``featx.probing.meta.META_FIELDS``). The readers' end-to-end refusals are in tests/test_bundle_fields.py and
tests/robustness/test_hostile_results.py."""

from __future__ import annotations

import pytest

from featx.bundle_fields import FIELDS
from featx.errors import InputError, StoreError
from featx.json_fields import (
    ANY,
    FLAG,
    LIST,
    NUMBER,
    OBJECT,
    TEXT,
    WHOLE,
    Field,
    FieldTable,
    fields,
    json_kind,
    rows_with,
    shown,
)
from featx.probing.meta import META_FIELDS, checked_meta

TABLES = {"bundle": FIELDS, "meta": META_FIELDS}
VALUES = [3, 1.5, "x", True, ["x"], {"a": 1}, [{"pooling": "mean", "layer": 1}]]
ROWS = rows_with("pooling", "layer")
# The values of ``VALUES`` each kind takes (by index).
TAKES = {TEXT: {2}, WHOLE: {0}, NUMBER: {0, 1}, FLAG: {3}, OBJECT: {5}, LIST: {4, 6}, ROWS: {6}}


@pytest.mark.parametrize("kind", list(TAKES), ids=[kind.name for kind in TAKES])
def test_each_kind_takes_its_json_values_only(kind):
    assert {index for index, value in enumerate(VALUES) if kind.test(value)} == TAKES[kind]
    assert not kind.test(None)


def test_a_value_is_named_by_its_json_kind_and_shown_short():
    names = [json_kind(value) for value in (None, True, 3, 1.5, "x", {}, [])]
    assert names == ["null", "true or false", "a number", "a number", "a text", "an object", "a list"]
    assert ROWS.name == "a list of rows with a pooling and a layer"
    assert shown("x" * 10) == repr("x" * 10)
    assert shown("x" * 100) == repr("x" * 100)[:37] + "..." and len(shown("x" * 100)) == 40


SECTIONED = FieldTable(
    (
        *fields(TEXT, "label", "name"),
        Field(("size",), WHOLE, nullable=True),
        Field(("rows",), LIST),
        Field(("rows", ANY), OBJECT),
        Field(("rows", ANY, "score"), NUMBER),
        Field(("files", ANY, "bytes"), WHOLE),
    ),
    sections=("files",),
)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"label": ["a"]}, "its field 'label' is ['a'] (a list), not a text"),
        ({"label": None}, "its field 'label' is None (null), not a text"),
        ({"rows": [{"score": 1}, {"score": "x"}]}, "its field 'rows.1.score' is 'x' (a text), not a number"),
        ({"rows": [3]}, "its field 'rows.0' is 3 (a number), not an object"),
        ({"files": {"w": {"bytes": True}}}, "its files field 'w.bytes' is True (true or false), not a whole number"),
        ({"label": 1, "name": 2}, "its field 'label' is 1 (a number), not a text"),  # the table's first rule
    ],
)
def test_a_field_of_another_kind_is_one_error_naming_it(document, message):
    with pytest.raises(InputError) as refusal:
        SECTIONED.check(document, "doc", "write it again")
    assert refusal.value.message == f"doc: {message}" and refusal.value.hint == "write it again"


def test_absent_nullable_unknown_and_other_parents_are_left_alone():
    """Absent fields are the reader's; null where the rule allows it; unknown fields ignored; an item rule finds
    nothing under a parent of another kind (the parent's own rule refuses it)."""
    for document in ({}, {"size": None}, {"other": [1, {"x": None}]}, {"rows": [], "files": {}}, {"files": 3}):
        SECTIONED.check(document, "doc", "hint")
    with pytest.raises(InputError, match=r"its field 'rows' is 'ab' \(a text\), not a list"):
        SECTIONED.check({"rows": "ab"}, "doc", "hint")


def test_a_table_names_its_document_and_raises_the_error_asked():
    table = FieldTable(fields(WHOLE, "n_rows"), name="meta")
    with pytest.raises(StoreError) as refusal:
        table.check({"n_rows": "many"}, "r.json", "hint", StoreError)
    assert refusal.value.message == "r.json: its meta field 'n_rows' is 'many' (a text), not a whole number"


def _planted(table, path, value):
    """A document holding ``value`` at ``path`` (an ``ANY`` is item 0 of a list or key ``k`` of an object, as the
    parent's rule says) and the place it is at."""
    kinds = {rule.path: rule.kind for rule in table.rules}
    place = tuple(
        ("0" if kinds.get(path[:depth]) is LIST else "k") if key == ANY else key for depth, key in enumerate(path)
    )
    document = value
    for depth in range(len(path) - 1, -1, -1):
        document = [document] if place[depth] == "0" and path[depth] == ANY else {place[depth]: document}
    return document, place


def _rules():
    return [(name, rule) for name, table in TABLES.items() for rule in table.rules]


@pytest.mark.parametrize(("table", "rule"), _rules(), ids=[f"{name}:{'.'.join(rule.path)}" for name, rule in _rules()])
def test_every_field_of_both_tables_is_checked(table, rule):
    """A value of another kind at each field of both tables is refused, naming the field and its kind; null is
    refused exactly where the rule does not allow it."""
    table = TABLES[table]
    hostile = next(value for value in VALUES if not rule.kind.test(value))
    document, place = _planted(table, rule.path, hostile)
    section = place[0] in table.sections and len(place) > 1
    name = f"{place[0]} field '{'.'.join(place[1:])}'" if section else f"field '{'.'.join(place)}'"
    with pytest.raises(InputError) as refusal:
        table.check(document, "doc", "hint")
    assert refusal.value.message.startswith(f"doc: its {'meta ' if table is META_FIELDS else ''}{name} is ")
    assert refusal.value.message.endswith(f", not {rule.kind.name}")
    document, _ = _planted(table, rule.path, None)
    if rule.nullable:
        table.check(document, "doc", "hint")
    else:
        with pytest.raises(InputError, match=f"{name} is None \\(null\\)"):
            table.check(document, "doc", "hint")


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"classifiers": ["logreg", 3]}, "its meta field 'classifiers.1' is 3 (a number), not a text"),
        (
            {"cosine_baseline": [{"layer": 1}]},
            "its meta field 'cosine_baseline' is [{'layer': 1}] (a list), not a list",
        ),
        ({"seed": True}, "its meta field 'seed' is True (true or false), not a whole number"),
    ],
)
def test_checked_meta_refuses_a_field_of_another_kind(meta, message):
    with pytest.raises(StoreError) as refusal:
        checked_meta(meta, "r.json")
    assert refusal.value.message.startswith(f"r.json: {message}")
    assert refusal.value.hint == "write it again with featx probe, or correct that field"


def test_checked_meta_passes_a_written_meta_and_refuses_a_meta_that_is_no_object():
    from support.results import synthetic_results

    _, meta = synthetic_results()
    assert checked_meta(meta, "r.json") is meta
    with pytest.raises(StoreError, match=r"r\.json: its meta is \[1, 2\], not an object"):
        checked_meta([1, 2], "r.json")

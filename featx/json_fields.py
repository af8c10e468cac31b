"""The JSON type of each field of a file featx reads but may not have written, in one declarative facility: the type
vocabulary (``TEXT``, ``WHOLE``, ``NUMBER``, ``FLAG``, ``OBJECT``, ``LIST``, ``rows_with``), a table of fields
(``FieldTable``, declared beside what it describes) and its one checker, whose error names the field, shows its
value and that value's JSON type, and says what it should be: ``bundle B: its selection field 'metric' is 3 (a
number), not a text``.

The tables: ``featx.bundle_fields.FIELDS`` (a bundle's ``manifest.json``, read by ``featx.load`` and the directions
reader) and ``featx.probing.meta.META_FIELDS`` (a results file's ``meta``, read by report, plot, compare and
explain). Such a file is untrusted input: a label that is a number or a list must be one clear error, never a
traceback or a list printed as a label.

A rule says only what kind a field is; values that need more than a type (a known classifier, a layer in range)
are the readers' own checks. A field that is absent is left to the reader (an earlier featx wrote fewer); ``null``
is refused unless the rule allows it. Fields a table does not name are ignored."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from .errors import FeatxError, InputError


@dataclass(frozen=True)
class Kind:
    """A JSON type as a message says it (``"a text"``) and the test of a parsed JSON value for it."""

    name: str
    test: Callable[[Any], bool]


TEXT = Kind("a text", lambda value: isinstance(value, str))
WHOLE = Kind("a whole number", lambda value: isinstance(value, int) and not isinstance(value, bool))
NUMBER = Kind("a number", lambda value: isinstance(value, (int, float)) and not isinstance(value, bool))
FLAG = Kind("true or false", lambda value: isinstance(value, bool))
OBJECT = Kind("an object", lambda value: isinstance(value, dict))
LIST = Kind("a list", lambda value: isinstance(value, list))
ANY = "*"  # in a field's path: every key of an object, or every item of a list


def rows_with(*keys: str) -> Kind:
    """A list of objects that each hold ``keys`` (``"a list of rows with a pooling and a layer"``)."""
    return Kind(
        f"a list of rows with {' and '.join(f'a {key}' for key in keys)}",
        lambda value: isinstance(value, list) and all(isinstance(row, dict) and set(keys) <= set(row) for row in value),
    )


def json_kind(value: Any) -> str:
    """What JSON type ``value`` is, in the vocabulary's words (a whole number is ``"a number"`` here)."""
    if value is None:
        return "null"
    kind = next((kind for kind in (FLAG, NUMBER, TEXT, OBJECT, LIST) if kind.test(value)), None)
    return kind.name if kind is not None else type(value).__name__


def shown(value: Any) -> str:
    """``repr(value)``, cut to 40 characters for a message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Field(NamedTuple):
    """One rule: the keys from the document's top to the field (``ANY`` for every key or item there), its kind, and
    whether ``null`` is allowed."""

    path: tuple[str, ...]
    kind: Kind
    nullable: bool = False


def fields(kind: Kind, *names: str, under: tuple[str, ...] = (), nullable: bool = False) -> tuple[Field, ...]:
    """The rules of the fields ``names`` (under the path ``under``), all of ``kind``."""
    return tuple(Field((*under, name), kind, nullable) for name in names)


def _found(value: Any, path: tuple[str, ...], where: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every ``(place, value)`` at ``path`` under ``value`` (nothing where a key is absent or a parent is of another
    kind: the parent's own rule refuses that); a list item's place is its index as text."""
    if not path:
        yield where, value
        return
    key, rest = path[0], path[1:]
    if isinstance(value, dict):
        items = list(value.items()) if key == ANY else ([(key, value[key])] if key in value else [])
    elif isinstance(value, list) and key == ANY:
        items = [(str(index), item) for index, item in enumerate(value)]
    else:
        items = []
    for name, item in items:
        yield from _found(item, rest, (*where, str(name)))


@dataclass(frozen=True)
class FieldTable:
    """The rules of one kind of JSON document, and how its messages name a field: ``"field 'label'"``, ``"meta
    field 'label'"`` (``name``), or ``"extraction field 'model'"`` for a field inside one of the ``sections``."""

    rules: tuple[Field, ...]
    name: str = ""
    sections: tuple[str, ...] = ()

    def named(self, place: tuple[str, ...]) -> str:
        """How a message names the field at ``place`` (``candidates.0.score``: item 0's ``score``)."""
        if len(place) > 1 and place[0] in self.sections:
            return f"{place[0]} field '{'.'.join(place[1:])}'"
        return f"{self.name} field '{'.'.join(place)}'".lstrip()

    def check(self, document: Any, where: str, hint: str, error: type[FeatxError] = InputError) -> None:
        """Each field of ``document`` a rule names is of its kind, else one ``error``: ``{where}: its field 'x' is 3
        (a number), not a text`` with ``hint``; the first failing rule in the table's order is the one reported."""
        for rule in self.rules:
            for place, value in _found(document, rule.path):
                if (value is None and rule.nullable) or (value is not None and rule.kind.test(value)):
                    continue
                message = (
                    f"{where}: its {self.named(place)} is {shown(value)} ({json_kind(value)}), not {rule.kind.name}"
                )
                raise error(message, hint)


__all__ = [
    "ANY",
    "FLAG",
    "LIST",
    "NUMBER",
    "OBJECT",
    "TEXT",
    "WHOLE",
    "Field",
    "FieldTable",
    "Kind",
    "fields",
    "json_kind",
    "rows_with",
    "shown",
]

"""The check builders of a config's ``CONSTRAINTS`` table (``featx.options``): each makes a check that raises
``InputError(message, hint)`` naming the option as the user gave it (``--size 0`` on the command line, ``size=0``
from Python: ``featx.options.spoken_value``; ``flag`` is the field's own when it has one), with one wording for
each kind of option (a whole
number, a number, a choice, names, a path...); a check that normalises a value (``"LogReg"`` -> ``"logreg"``,
numpy's ``int64`` -> ``int``) does so once, with ``normalise``, inside construction."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from typing import Any

from .errors import InputError
from .options import Check, flag_of, normalise, on_command_line, spoken, spoken_value

# A check's hint: text, or made from the config when the check fails, so that it names options as the caller wrote
# them (``lambda config: f"use {spoken_value(config, 'join', 'id')}"``: ``--join id``, ``join='id'``).
Hint = str | Callable[[Any], str] | None


def _hint(hint: Hint, config: Any) -> str | None:
    return hint(config) if callable(hint) else hint


def _is_whole(value: Any) -> bool:  # numpy's integers too (stored as int), never a bool
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:  # numpy's numbers too (stored as float)
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


_DIGITS, _SIGNED_DIGITS = re.compile("[0-9]+"), re.compile("-?[0-9]+")
MAX_DIGITS = 18  # parse_whole's longest number: any int64


def parse_whole(text: Any, *, signed: bool = False) -> int | None:
    """``text`` as a whole number when it is spelt in ASCII digits (after one ``-`` when ``signed``), else None.
    What featx reads from files others made (a features file's layer names, tensor names, CSV columns, a study's
    summary) and from options goes through here, never ``str.isdigit``: that takes superscripts (``'²'``), which
    ``int`` refuses with a traceback, and other scripts' digits (``'٣'``), which no featx file writes."""
    if not isinstance(text, str) or not (_SIGNED_DIGITS if signed else _DIGITS).fullmatch(text):
        return None
    if len(text.lstrip("-")) > MAX_DIGITS:  # no count or index featx takes is this long; int() refuses past 4,300
        return None
    return int(text)


def whole(
    name: str,
    flag: str,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    optional: bool = False,
    hint: Hint = None,
) -> Check:
    """``name`` is a whole number of at least ``minimum`` and at most ``maximum`` (or None, when ``optional``)."""

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is None and optional:
            return
        named, given = spoken(config, name, flag), spoken_value(config, name, value, flag)
        if not _is_whole(value) or value < minimum:
            default = f"give {named} a whole number of at least {minimum}"
            default += ", or leave it out for the default" if optional else ""
            raise InputError(f"{given} must be a whole number of at least {minimum}", _hint(hint, config) or default)
        if maximum is not None and value > maximum:
            raise InputError(
                f"{given} is too large: at most {maximum}",
                f"give {named} a whole number from {minimum} to {maximum}",
            )
        normalise(config, name, int(value))  # numpy's int64 as Python's int

    return check


def spelled(name: str, flag: str, *, example: str) -> Check:
    """``name`` as the text its flag takes: a str as it is, a whole number (``layer=3``) or a list or tuple of
    whole numbers and names (``layers=[1, 2]``) joined with commas; anything else is an ``InputError``."""

    def part(value: Any) -> str | None:
        return value if isinstance(value, str) else str(int(value)) if _is_whole(value) else None

    def check(config: Any) -> None:
        value = getattr(config, name)
        if isinstance(value, str):
            return
        parts = [part(item) for item in value] if isinstance(value, (list, tuple)) else [part(value)]
        if not parts or any(item is None for item in parts):
            given = spoken_value(config, name, value, flag, shown=repr(value))
            raise InputError(f"{given} is not understood: give it as text or whole numbers", example)
        normalise(config, name, ",".join(str(item) for item in parts))

    return check


def text(name: str, flag: str, *, optional: bool = False, example: str) -> Check:
    """``name`` is a str (a name: a label column, say), or None when ``optional``."""

    def check(config: Any) -> None:
        value = getattr(config, name)
        if (value is None and optional) or isinstance(value, str):
            return
        raise InputError(
            f"{spoken_value(config, name, value, flag, shown=repr(value))} is not a name: give it as text", example
        )

    return check


def number(
    name: str,
    flag: str,
    *,
    low: float = 0.0,
    high: float | None = None,
    low_open: bool = True,
    optional: bool = False,
    hint: Hint = None,
) -> Check:
    """``name`` is a finite number above ``low`` (at least ``low`` unless ``low_open``), at most ``high``."""

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is None and optional:
            return
        too_low = _is_number(value) and (value <= low if low_open else value < low)
        too_high = _is_number(value) and high is not None and value > high
        if not _is_number(value) or too_low or too_high:
            bound = f"{'above' if low_open else 'at least'} {low:g}" + (
                f" and at most {high:g}" if high is not None else ""
            )
            named, given = spoken(config, name, flag), spoken_value(config, name, value, flag)
            raise InputError(
                f"{given} must be a number {bound}", _hint(hint, config) or f"give {named} a number {bound}"
            )
        if not isinstance(value, (int, float)):
            normalise(config, name, float(value))  # numpy's float32 as Python's float

    return check


def numbers(name: str, flag: str | None, *, hint: Hint = None) -> Check:
    """``name`` is a non-empty sequence of finite positive numbers (a grid of C or alpha). ``flag`` None: a field
    no command has a flag for (probe's and fit's C and alpha grids), which outside Python only a study file's
    table sets: named by its key there, never by a flag that does not exist."""

    def check(config: Any) -> None:
        values = getattr(config, name)
        try:
            good = len(values) > 0 and all(_is_number(float(v)) and float(v) > 0 for v in values)
        except (TypeError, ValueError):
            good = False
        if not good:
            named = spoken(config, name, flag)
            if not on_command_line():
                example = f"e.g. {name}=(0.1, 1, 10)"
            else:
                example = f"e.g. {named} 0.1,1,10" if named.startswith("-") else f"e.g. {name} = [0.1, 1, 10]"
            raise InputError(f"{named} must hold positive numbers (got {values!r})", _hint(hint, config) or example)
        normalise(config, name, tuple(float(v) for v in values))

    return check


def one_of(name: str, flag: str, choices: Iterable[str], *, optional: bool = False, hint: Hint = None) -> Check:
    """``name`` is one of ``choices`` (case-insensitive, spaces around ignored; stored lower-case)."""
    allowed = tuple(choices)

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is None and optional:
            return
        spelled = str(value).strip().lower()
        if spelled not in allowed:
            given = spoken_value(config, name, value, flag, shown=f"'{value}'")
            raise InputError(
                f"{given} is not understood", _hint(hint, config) or f"choose one of: {', '.join(allowed)}"
            )
        normalise(config, name, spelled)

    return check


def names(name: str, flag: str, *, choices: Iterable[str] | None = None, example: str = "") -> Check:
    """``name`` is a comma-separated string or a sequence of names, stored as a tuple without repeats;
    each one of ``choices`` when given."""
    allowed = tuple(choices) if choices is not None else None

    def check(config: Any) -> None:
        value = getattr(config, name)
        parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
        chosen = tuple(dict.fromkeys(str(part).strip() for part in parts if str(part).strip()))
        if allowed is not None:
            chosen = tuple(dict.fromkeys(part.lower() for part in chosen))
            unknown = [part for part in chosen if part not in allowed]
            if unknown:
                given = spoken_value(config, name, unknown[0], flag, shown=f"'{unknown[0]}'")
                raise InputError(f"{given} is not available", f"choose from {', '.join(allowed)}")
        if not chosen:
            named = spoken(config, name, flag)
            raise InputError(f"{named} selects nothing", example or f"choose from {', '.join(allowed or ())}")
        normalise(config, name, chosen)

    return check


def requires(name: str, flag: str, other: str, other_flag: str, *, default: Any = None, hint: Hint = None) -> Check:
    """``name`` differs from ``default`` only together with ``other`` (e.g. ``--join`` needs ``--labels``)."""

    def check(config: Any) -> None:
        if getattr(config, name) != default and getattr(config, other) is None:
            named, needed = spoken(config, name, flag), spoken(config, other, other_flag)
            raise InputError(
                f"{named} applies to {needed} only", _hint(hint, config) or f"add {needed}, or leave {named} out"
            )

    return check


def path_like(*fields: str, what: str | None = None, hint: str | None = None) -> Check:
    """Each of ``fields`` is a path (a ``str`` or ``os.PathLike``) or None: a list, a number or a DataFrame is refused
    before any file is read, naming the flag (the Python keyword of a field without one), or saying ``what`` (e.g.
    "featx.probe takes a features file path") with ``hint``."""

    def check(config: Any) -> None:
        for item in dataclasses.fields(config):
            value, required = (
                getattr(config, item.name),
                item.default is dataclasses.MISSING and "None" not in str(item.type),
            )
            if item.name in fields and (value is not None or required) and not isinstance(value, (str, os.PathLike)):
                named = spoken(config, item.name) if flag_of(item) is not None else item.name
                kind = type(value).__name__
                message = f"{what}, not a {kind}" if what else f"{named} takes a path, not a {kind} ({value!r:.60})"
                raise InputError(message, hint or f"give {named} one path, as a str or a pathlib.Path")

    return check


__all__ = [
    "names",
    "number",
    "numbers",
    "one_of",
    "parse_whole",
    "path_like",
    "requires",
    "spelled",
    "text",
    "whole",
]

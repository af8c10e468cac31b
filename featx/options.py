"""One way to declare and check a command's options: a frozen dataclass checked at construction from a
constraints table (as ``ExtractConfig`` started it).

A command's config subclasses ``Options`` and lists its checks in ``CONSTRAINTS``; each check takes the
config and raises ``InputError(message, hint)`` naming the flag the user typed. The helpers below build the
common checks with one wording; a check that normalises a value (``"LogReg"`` -> ``"logreg"``) does so once,
with ``normalise``, inside construction. ``dataclasses.replace`` (or ``Options.replace``) makes a checked copy.

Each option is declared once, as its config field: ``option(default, flag="--max-length", help=..., group=...)``
keeps the flag, help and help group in the field's metadata (``Flag``); the command line's options
(``featx.cli.generate``), the Python keywords and their documentation (``keyword_doc``) come from the fields.
A renamed option lists its old spellings (``old=("--seed",)``): they keep working, with a deprecation warning,
until ``REMOVED_IN``; the old Python keyword is the old flag's name (``seed``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .errors import FeatxWarning, InputError

Check = Callable[[Any], None]
MAX_SEED = 2**32 - 1  # the largest seed numpy and scikit-learn take
O = TypeVar("O", bound="Options")  # noqa: E741
OPTION = "featx.option"  # the key of a field's ``Flag`` in its metadata
REMOVED_IN = "0.3.0"  # the release that drops the old spellings of renamed options (0.2.0 is out)


class FeatxDeprecationWarning(FeatxWarning, FutureWarning):
    """An old spelling of a renamed option: it still works until ``REMOVED_IN`` (shown by default, as a
    ``FutureWarning``; the CLI prints it as ``featx: warning: ...``)."""


@dataclass(frozen=True)
class Flag:
    """How a config field shows on the command line: its flags (the first long one names it in messages), help,
    help group, ``kind`` (flag, int, float, path, str; None: from the field's default and type), fixed
    ``choices``, ``negate`` (a flag that sets the field to False: ``--quiet`` for ``progress``) and ``old``
    spellings still accepted with a warning."""

    flags: tuple[str, ...]
    help: str
    group: str | None = None
    kind: str | None = None
    choices: tuple[str, ...] | None = None
    negate: bool = False
    old: tuple[str, ...] = ()
    cli_default: Any = None  # the command line's own default, where it differs from the field's (None: the same)

    @property
    def name(self) -> str:
        """The flag messages name: the first long spelling."""
        return next(flag for flag in self.flags if flag.startswith("--"))

    @property
    def old_keywords(self) -> tuple[str, ...]:
        """The Python keywords of the old spellings (``--batch-rows`` -> ``batch_rows``)."""
        return tuple(keyword_of(flag) for flag in self.old)


def keyword_of(flag: str) -> str:
    """The Python keyword of a long flag: ``--batch-rows`` -> ``batch_rows``."""
    return flag.lstrip("-").replace("-", "_")


def option(
    default: Any = dataclasses.MISSING,
    *,
    flag: str | tuple[str, ...] | None = None,
    help: str = "",  # noqa: A002 - click's word for it
    group: str | None = None,
    kind: str | None = None,
    choices: Iterable[str] | None = None,
    negate: bool = False,
    old: tuple[str, ...] = (),
    cli_default: Any = None,
) -> Any:
    """A config field declared once: its default, and (with ``flag``) how the command line shows it."""
    if flag is None:
        return dataclasses.field(default=default)
    flags = (flag,) if isinstance(flag, str) else tuple(flag)
    spec = Flag(flags, help, group, kind, tuple(choices) if choices is not None else None, negate, old, cli_default)
    return dataclasses.field(default=default, metadata={OPTION: spec})


def flag_of(item: dataclasses.Field) -> Flag | None:
    """The ``Flag`` of a config field, or None for a field the command line does not show."""
    return item.metadata.get(OPTION)


def flagged(cls: type) -> list[tuple[dataclasses.Field, Flag]]:
    """The fields of a config that have a flag, in field order, with their ``Flag``."""
    return [(item, spec) for item in dataclasses.fields(cls) if (spec := flag_of(item)) is not None]


def deprecation(old: str, new: str) -> str:
    """The message of an old spelling: ``--seed is deprecated, use --init-seed; --seed will be removed in 0.3.0``."""
    return f"{old} is deprecated, use {new}; {old} will be removed in {REMOVED_IN}"


def renamed(cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with each old Python keyword of ``cls`` replaced by its new one, with a deprecation warning."""
    import warnings

    options = dict(options)
    for item, spec in flagged(cls):
        for old in spec.old_keywords:
            if old in options and old not in {field.name for field in dataclasses.fields(cls)}:
                if item.name in options:
                    raise InputError(f"{old} and {item.name} are the same option", f"give only {item.name}")
                warnings.warn(deprecation(old, item.name), FeatxDeprecationWarning, stacklevel=3)
                options[item.name] = options.pop(old)
    return options


def recorded(config: Any) -> dict[str, Any]:
    """``config``'s fields as a dict, a renamed field under its first old name: what files record (the
    options attribute of a features file, the up-to-date key) keeps the keys that 0.2.0 wrote."""
    names = {item.name: spec.old_keywords[0] for item, spec in flagged(type(config)) if spec.old}
    return {names.get(name, name): value for name, value in dataclasses.asdict(config).items()}


def keyword_doc(cls: type, names: Iterable[str] | None = None, defaults: dict[str, Any] | None = None) -> str:
    """The documented keyword list of a config's fields (``names``, or every field with a flag): one line each,
    ``name`` (``--flag``, default): help, made from the fields so that it is never typed twice."""
    chosen = set(names) if names is not None else None
    defaults = defaults or {}
    lines = []
    for item, spec in flagged(cls):
        if chosen is not None and item.name not in chosen:
            continue
        default = defaults.get(item.name, item.default)
        lines.append(f"    {item.name} ({spec.name}, default {default!r}): {spec.help}")
    return "\n".join(lines)


class _Renaming(type):
    """Makes a config from an old keyword of a renamed option too (``ExtractConfig(corpus, seed=1)``), with a
    deprecation warning, as ``Options.build`` and the command line do."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs and any(spec.old for _, spec in flagged(cls)):
            kwargs = renamed(cls, kwargs)
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class Options(metaclass=_Renaming):
    """Base of every command's config: frozen, and checked by its ``CONSTRAINTS`` when made."""

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = ()

    def __post_init__(self) -> None:
        for check in type(self).CONSTRAINTS:
            check(self)

    def replace(self: O, **changes: Any) -> O:
        """A copy with ``changes``, checked again."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def build(cls: type[O], config: Any = None, **options: Any) -> O:
        """The config a command's Python function takes: ``config`` itself (with ``options`` replaced), or
        one made from ``options`` with ``config`` as its first field (``erase("x.h5", label="pos")``).
        An option the config does not have is an ``InputError`` naming the known ones; an old keyword of a
        renamed option is taken with a deprecation warning."""
        options = renamed(cls, options)
        known = [item.name for item in dataclasses.fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise InputError(
                f"unknown option(s) of {cls.__name__}: {', '.join(unknown)}",
                f"the options are: {', '.join(known)}",
            )
        if isinstance(config, cls):
            return config.replace(**options) if options else config
        return cls(**{known[0]: config, **options})


def normalise(config: Options, name: str, value: Any) -> None:
    """Set ``name`` on a frozen config while it is being checked (its canonical spelling, say)."""
    object.__setattr__(config, name, value)


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def whole(
    name: str,
    flag: str,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    optional: bool = False,
    hint: str | None = None,
) -> Check:
    """``name`` is a whole number of at least ``minimum`` and at most ``maximum`` (or None, when ``optional``)."""

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is None and optional:
            return
        if not _is_whole(value) or value < minimum:
            default = f"give {flag} a whole number of at least {minimum}" + (
                ", or leave it out for the default" if optional else ""
            )
            raise InputError(f"{flag} {value} must be a whole number of at least {minimum}", hint or default)
        if maximum is not None and value > maximum:
            raise InputError(
                f"{flag} {value} is too large: at most {maximum}",
                f"give {flag} a whole number from {minimum} to {maximum}",
            )

    return check


def spelled(name: str, flag: str, *, example: str) -> Check:
    """``name`` as the text its flag takes: a str as it is, a whole number (``layer=3``) or a list or tuple of
    whole numbers and names (``layers=[1, 2]``) joined with commas; anything else is an ``InputError``."""

    def part(value: Any) -> str | None:
        if isinstance(value, str):
            return value
        return str(value) if _is_whole(value) else None

    def check(config: Any) -> None:
        value = getattr(config, name)
        if isinstance(value, str):
            return
        parts = [part(item) for item in value] if isinstance(value, (list, tuple)) else [part(value)]
        if not parts or any(item is None for item in parts):
            raise InputError(f"{flag} {value!r} is not understood: give it as text or whole numbers", example)
        normalise(config, name, ",".join(str(item) for item in parts))

    return check


def text(name: str, flag: str, *, optional: bool = False, example: str) -> Check:
    """``name`` is a str (a name: a label column, say), or None when ``optional``."""

    def check(config: Any) -> None:
        value = getattr(config, name)
        if (value is None and optional) or isinstance(value, str):
            return
        raise InputError(f"{flag} {value!r} is not a name: give it as text", example)

    return check


def number(
    name: str,
    flag: str,
    *,
    low: float = 0.0,
    high: float | None = None,
    low_open: bool = True,
    optional: bool = False,
    hint: str | None = None,
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
            raise InputError(f"{flag} {value} must be a number {bound}", hint or f"give {flag} a number {bound}")

    return check


def numbers(name: str, flag: str, *, hint: str | None = None) -> Check:
    """``name`` is a non-empty sequence of finite positive numbers (a grid of C or alpha)."""

    def check(config: Any) -> None:
        values = getattr(config, name)
        try:
            good = len(values) > 0 and all(_is_number(float(v)) and float(v) > 0 for v in values)
        except (TypeError, ValueError):
            good = False
        if not good:
            raise InputError(f"{flag} must hold positive numbers (got {values!r})", hint or f"e.g. {flag} 0.1,1,10")
        normalise(config, name, tuple(float(v) for v in values))

    return check


def one_of(name: str, flag: str, choices: Iterable[str], *, optional: bool = False, hint: str | None = None) -> Check:
    """``name`` is one of ``choices`` (case-insensitive, spaces around ignored; stored lower-case)."""
    allowed = tuple(choices)

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is None and optional:
            return
        spelled = str(value).strip().lower()
        if spelled not in allowed:
            raise InputError(f"{flag} '{value}' is not understood", hint or f"choose one of: {', '.join(allowed)}")
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
                raise InputError(f"{flag} '{unknown[0]}' is not available", f"choose from {', '.join(allowed)}")
        if not chosen:
            raise InputError(f"{flag} selects nothing", example or f"choose from {', '.join(allowed or ())}")
        normalise(config, name, chosen)

    return check


def requires(
    name: str, flag: str, other: str, other_flag: str, *, default: Any = None, hint: str | None = None
) -> Check:
    """``name`` differs from ``default`` only together with ``other`` (e.g. ``--join`` needs ``--labels``)."""

    def check(config: Any) -> None:
        if getattr(config, name) != default and getattr(config, other) is None:
            raise InputError(f"{flag} applies to {other_flag} only", hint or f"add {other_flag}, or leave {flag} out")

    return check


def path_like(name: str, what: str, hint: str) -> Check:
    """``name`` is a path (a ``str`` or ``os.PathLike``) or None: ``what`` says who takes which file, e.g.
    "featx.probe takes a features file path" (a list or a DataFrame given instead is refused, with ``hint``)."""
    import os

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise InputError(f"{what}, not a {type(value).__name__}", hint)

    return check


__all__ = [
    "MAX_SEED",
    "OPTION",
    "REMOVED_IN",
    "Check",
    "FeatxDeprecationWarning",
    "Flag",
    "Options",
    "deprecation",
    "flag_of",
    "flagged",
    "keyword_doc",
    "keyword_of",
    "option",
    "recorded",
    "renamed",
    "names",
    "normalise",
    "number",
    "numbers",
    "one_of",
    "path_like",
    "requires",
    "spelled",
    "text",
    "whole",
]

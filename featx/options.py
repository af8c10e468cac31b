"""One way to declare and check a command's options: a frozen dataclass checked at construction from a
constraints table (as ``ExtractConfig`` started it).

A command's config subclasses ``Options`` and lists its checks in ``CONSTRAINTS``; each check takes the
config and raises ``InputError(message, hint)`` naming the flag the user typed. ``featx.checks`` builds the
common checks with one wording; a check that normalises a value (``"LogReg"`` -> ``"logreg"``) does so once,
with ``normalise``, inside construction. ``dataclasses.replace`` (or ``Options.replace``) makes a checked copy.
A keyword that is not a field, or a field without a default left out, is an ``InputError`` naming them.

Each option is declared once, as its config field: ``option(default, flag="--max-length", help=..., group=...)``
keeps the flag, help and help group in the field's metadata (``Flag``); the command line's options
(``featx.cli.generate``), the Python keywords and their documentation (``keyword_doc``) come from the fields.
A renamed option lists its old spellings (``old=("--seed",)``): they keep working, with a deprecation warning,
until ``REMOVED_IN``; the old Python keyword is the old flag's name (``seed``).

A violation names the option as its caller wrote it: the flag on the command line (``--batch-size 0``), the
keyword from Python (``batch_size=0``). The CLI runs its commands inside ``command_line()``, featx's Python entry
points (``featx.embed``, ``featx.extract``, ``featx.probe``, ``featx.fit``...) inside ``keywords_of(Config)`` (a
``with`` block, or a decorator); a check phrases an option with ``spoken`` and ``spoken_value`` (several together
with ``joined``, a whole call with ``spoken_command``), and whatever flag of the config a message still names (a
hint written as text, a check deeper in the package, an error found while running) is reworded for the Python
caller by ``for_caller``: a bare flag only, so a flag with its value (``--folds 1``, which would read ``folds 1``)
or a command line (``featx fit FEATURES --label head``) is phrased with those instead. Each option is still
declared once, as its field. A caller that says neither (a config made directly) reads flags.

A list-like option (layers, poolings, sites, classifiers, label columns... given as a comma list) is declared
``listed=True``; one rule, checked before any config's ``CONSTRAINTS`` (``refuse_empty_lists``), refuses its empty
value (``--layer ''``, ``layers=[]``) on every command instead of reading it as a default: None, or leaving the
option out, is how to ask for the default. A path option's empty value (``-o ''``, which reads as '.') is refused
alike (``refuse_empty_paths``).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .errors import FeatxError, FeatxWarning, InputError

Check = Callable[[Any], None]
MAX_SEED = 2**32 - 1  # the largest seed numpy and scikit-learn take
O = TypeVar("O", bound="Options")  # noqa: E741
OPTION = "featx.option"  # the key of a field's ``Flag`` in its metadata
REMOVED_IN = "0.3.0"  # the release that drops the old spellings of renamed options (0.2.0 is out)
_CALLER: ContextVar[str | None] = ContextVar("featx_caller", default=None)  # "cli" or "python" (keywords_of)


class FeatxDeprecationWarning(FeatxWarning, FutureWarning):
    """An old spelling of a renamed option: it still works until ``REMOVED_IN`` (shown by default, as a
    ``FutureWarning``; the CLI prints it as ``featx: warning: ...``)."""


@dataclass(frozen=True)
class Flag:
    """How a config field shows on the command line: its flags (the first long one names it in messages), help,
    help group, ``kind`` (flag, int, float, path, str; None: from the field's default and type), fixed ``choices``,
    ``negate`` (a flag setting the field to False: ``--quiet`` for ``progress``), ``old`` spellings (warned)."""

    flags: tuple[str, ...]
    help: str
    group: str | None = None
    kind: str | None = None
    choices: tuple[str, ...] | None = None
    negate: bool = False
    old: tuple[str, ...] = ()
    cli_default: Any = None  # the command line's own default, where it differs from the field's (None: the same)
    listed: bool = False  # a comma list (or a Python list): an empty one is refused (``refuse_empty_lists``)

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
    listed: bool = False,
) -> Any:
    """A config field declared once: its default, and (with ``flag``) how the command line shows it."""
    if flag is None:
        return dataclasses.field(default=default)
    flags = (flag,) if isinstance(flag, str) else tuple(flag)
    spec = Flag(
        flags, help, group, kind, tuple(choices) if choices is not None else None, negate, old, cli_default, listed
    )
    return dataclasses.field(default=default, metadata={OPTION: spec})


def flag_of(item: dataclasses.Field) -> Flag | None:
    """The ``Flag`` of a config field, or None for a field the command line does not show."""
    return item.metadata.get(OPTION)


def flagged(cls: type) -> list[tuple[dataclasses.Field, Flag]]:
    """The fields of a config that have a flag, in field order, with their ``Flag``."""
    return [(item, spec) for item in dataclasses.fields(cls) if (spec := flag_of(item)) is not None]


@contextmanager
def command_line() -> Iterator[None]:
    """Messages raised inside name options as flags (``--batch-size``): the CLI runs each command in it, and a
    Python entry point called by a command (``featx extract`` calls ``featx.extract``) keeps it."""
    token = _CALLER.set("cli")
    try:
        yield
    finally:
        _CALLER.reset(token)


def on_command_line() -> bool:
    """Whether messages name flags: not inside a Python entry point (``keywords_of``) called from Python."""
    return _CALLER.get() != "python"


def _field(config: Any, name: str) -> dataclasses.Field | None:
    if not dataclasses.is_dataclass(config):
        return None
    return next((item for item in dataclasses.fields(config) if item.name == name), None)


def spoken(config: Any, name: str, flag: str | None = None) -> str:
    """How the caller names option ``name`` of ``config`` (a config or its class): on the command line its flag
    (the field's, else ``flag``: ``--batch-size``), from Python its keyword (the field's name: ``batch_size``)."""
    if not on_command_line():
        return name
    spec = flag_of(item) if (item := _field(config, name)) is not None else None
    return spec.name if spec is not None else flag or name


def spoken_value(config: Any, name: str, value: Any, flag: str | None = None, *, shown: str | None = None) -> str:
    """Option ``name`` with ``value`` as the caller gave it: ``--batch-size 0`` on the command line (``shown``: the
    value as the message shows it there, ``'x'`` say), ``batch_size=0`` from Python. An on/off option (a field
    whose default is a bool) is its flag alone on the command line: ``--tokens`` for ``tokens=True``."""
    if not on_command_line():
        plain = value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value
        return f"{name}={plain!r}"  # numpy's True_ or int64(3) as Python spells them
    if isinstance(value, bool) and shown is None and isinstance(getattr(_field(config, name), "default", None), bool):
        return spoken(config, name, flag)
    return f"{spoken(config, name, flag)} {value if shown is None else shown}"


class Placeholder(str):
    """A value a message leaves for the caller to choose, written bare both ways: ``--bins N``, ``bins=N`` (a
    ``str`` would read ``bins='N'``)."""

    def __repr__(self) -> str:
        return str(self)


def joined(*phrases: str) -> str:
    """Several options as the caller writes them together: side by side on the command line (``--label head
    --arcs``), a keyword list from Python (``label='head', arcs=True``); each phrased by ``spoken_value``."""
    return (" " if on_command_line() else ", ").join(phrases)


def spoken_command(command: str, argument: str | Path, *phrases: str) -> str:
    """A whole call as its caller would type it: ``featx fit FEATURES --label head --arcs`` on the command line,
    ``featx.fit(features, label='head', arcs=True)`` from Python (``argument``: a placeholder, lower-cased as its
    parameter, or a ``Path``, the file itself: ``featx.probe('x.h5', label='pos')``)."""
    if on_command_line():
        return " ".join((f"featx {command}", str(argument), *phrases))
    first = repr(str(argument)) if isinstance(argument, Path) else argument.lower()
    return f"featx.{command}({', '.join((first, *phrases))})"


def _keywords(cls: type) -> dict[str, str]:
    """Each long flag of ``cls`` (old spellings too) and the Python keyword it stands for (an on/off flag with its
    value: ``--random-init``: ``random_init=True``, ``--quiet``: ``progress=False``)."""
    table = {}
    for item, spec in flagged(cls):
        switch = f"={not spec.negate}" if isinstance(item.default, bool) else ""
        for flag in spec.flags:
            if flag.startswith("--"):
                table[flag] = item.name + switch
        table.update({old: keyword_of(old) for old in spec.old})
    return table


def for_caller(error: FeatxError, cls: type) -> FeatxError:
    """``error`` as its caller reads it: as it is on the command line; from Python, each flag of ``cls`` its message
    and hint still name replaced by the keyword (``--stride applies to --long window`` -> ``stride applies to long
    window``). Reworded in place (its type and traceback kept) and returned."""
    table = _keywords(cls) if dataclasses.is_dataclass(cls) and not on_command_line() else {}
    if not table:
        return error
    flags = "|".join(re.escape(flag) for flag in sorted(table, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w-])({flags})(?![\w-])")

    def reword(text: str) -> str:
        return pattern.sub(lambda found: table[found.group(1)], text)

    error.message, error.hint = reword(error.message), None if error.hint is None else reword(error.hint)
    error.args = (error.message if error.hint is None else f"{error.message}\n  hint: {error.hint}",)
    return error


@contextmanager
def keywords_of(cls: type) -> Iterator[None]:
    """A Python entry point (``featx.embed``) of config ``cls``: errors raised inside name its keywords instead of
    its flags (``spoken``, ``for_caller``), what a run finds wrong after its config was made (a column the corpus
    lacks) as well; called by the command line (inside ``command_line()``), they keep the flags."""
    token = _CALLER.set(_CALLER.get() or "python")
    try:
        yield
    except FeatxError as error:
        for_caller(error, cls)
        raise
    finally:
        _CALLER.reset(token)


def deprecation(old: str, new: str) -> str:
    """The message of an old spelling: ``--seed is deprecated, use --init-seed; --seed will be removed in 0.3.0``."""
    return f"{old} is deprecated, use {new}; {old} will be removed in {REMOVED_IN}"


def renamed(cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with each old Python keyword of ``cls`` replaced by its new one, with a deprecation warning."""
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
    return "\n".join(
        f"    {item.name} ({spec.name}, default {defaults.get(item.name, item.default)!r}): {spec.help}"
        for item, spec in flagged(cls)
        if chosen is None or item.name in chosen
    )


def refuse_unknown(cls: type, options: dict[str, Any], positional: int = 0) -> list[str]:
    """The field names of ``cls``; an option not among them, or a field without a default left out (after
    ``positional`` arguments), is an ``InputError`` naming them."""
    known = [item.name for item in dataclasses.fields(cls)]
    needed = [
        item.name for item in dataclasses.fields(cls) if item.default is item.default_factory is dataclasses.MISSING
    ]
    if unknown := sorted(set(options) - set(known)):
        raise InputError(
            f"unknown option(s) of {cls.__name__}: {', '.join(unknown)}", f"the options are: {', '.join(known)}"
        )
    if missing := [name for name in needed[positional:] if name not in options]:
        raise InputError(f"{cls.__name__} needs {', '.join(missing)}", f"give {missing[0]} as well")
    return known


def _empty(value: Any) -> bool:
    """A list-like option's value that names nothing: blank text or commas only, or an empty list or tuple."""
    if isinstance(value, str):
        return not any(part.strip() for part in value.split(","))
    return isinstance(value, (list, tuple)) and not value


def refuse_empty_lists(config: Any) -> None:
    """The one rule of every ``listed`` option: an empty value is an ``InputError`` naming the flag, on every
    command alike (an empty ``--layer`` had meant all layers, an empty ``--site`` hidden, an empty ``--pooling``
    was refused). None (the option left out) keeps the default."""
    for item, spec in flagged(type(config)):
        if spec.listed and _empty(getattr(config, item.name)):
            default = spec.cli_default if spec.cli_default is not None else item.default
            shown = f" ({default})" if isinstance(default, str) else ""
            value, named = getattr(config, item.name), spoken(config, item.name)
            raise InputError(
                f"{spoken_value(config, item.name, value, shown=repr(value))} is empty: it takes one value or a "
                "comma list",
                f"give {named} at least one value, or leave it out for its default{shown}",
            )


def refuse_empty_paths(config: Any) -> None:
    """The one rule of every path option (``kind="path"``, or a field typed ``Path``): an empty value (``-o ''``,
    which click and ``pathlib`` read as '.', the current folder) is an ``InputError`` naming all its flags."""
    for item, spec in flagged(type(config)):
        value = getattr(config, item.name)
        if isinstance(value, str) and not value.strip() and (spec.kind == "path" or "Path" in str(item.type)):
            named = "/".join(spec.flags) if on_command_line() else f"{item.name}={value!r}"
            hint = f"give {spoken(config, item.name)} a path, or leave it out for its default, if it has one"
            raise InputError(f"{named} is empty: give a file path (empty reads as '.', the current folder)", hint)


class _Renaming(type):
    """Makes a config from an old keyword of a renamed option too (``ExtractConfig(corpus, seed=1)``), with a
    deprecation warning, as ``Options.build`` and the command line do; an unknown keyword is an ``InputError``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs and any(spec.old for _, spec in flagged(cls)):
            kwargs = renamed(cls, kwargs)
        refuse_unknown(cls, kwargs, len(args))
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class Options(metaclass=_Renaming):
    """Base of every command's config: frozen, and checked by its ``CONSTRAINTS`` when made."""

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = ()

    def __post_init__(self) -> None:
        try:
            refuse_empty_lists(self)
            refuse_empty_paths(self)
            for check in type(self).CONSTRAINTS:
                check(self)
        except FeatxError as error:
            for_caller(error, type(self))  # a flag a check's text names: the keyword, for a Python caller
            raise

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
        known = refuse_unknown(cls, options, positional=len(dataclasses.fields(cls)))  # a field left out: when made
        if isinstance(config, cls):
            return config.replace(**options) if options else config
        return cls(**{known[0]: config, **options})


def normalise(config: Options, name: str, value: Any) -> None:
    """Set ``name`` on a frozen config while it is being checked (its canonical spelling, say)."""
    object.__setattr__(config, name, value)


__all__ = [
    "MAX_SEED",
    "OPTION",
    "REMOVED_IN",
    "Check",
    "FeatxDeprecationWarning",
    "Flag",
    "Options",
    "Placeholder",
    "command_line",
    "deprecation",
    "flag_of",
    "flagged",
    "for_caller",
    "joined",
    "keyword_doc",
    "keyword_of",
    "keywords_of",
    "on_command_line",
    "option",
    "recorded",
    "refuse_empty_lists",
    "refuse_empty_paths",
    "refuse_unknown",
    "renamed",
    "normalise",
    "spoken",
    "spoken_command",
    "spoken_value",
]

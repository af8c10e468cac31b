"""One way to declare and check a command's options: a frozen dataclass checked at construction from a
constraints table (as ``ExtractConfig`` started it).

A command's config subclasses ``Options`` and lists its checks in ``CONSTRAINTS``; each check takes the
config and raises ``InputError(message, hint)`` naming the flag the user typed. ``featx.checks`` builds the
common checks with one wording; a check that normalises a value (``"LogReg"`` -> ``"logreg"``) does so once,
with ``normalise``, inside construction. ``dataclasses.replace`` (or ``Options.replace``) makes a checked copy.
A keyword that is not a field, or a field without a default left out, is an ``InputError`` naming them.

Each option is declared once, as its config field (``option(...)``, ``featx.flags``); the command line's
options, the Python keywords and their documentation (``keyword_doc``) come from the fields. A renamed option
lists its old spellings (``old=("--seed",)``): they keep working, with a deprecation warning, until
``REMOVED_IN``; the old Python keyword is the old flag's name (``seed``). A violation names the option as its
caller wrote it (``featx.caller``: the flag on the command line, the keyword from Python).

A list-like option (layers, poolings, sites, classifiers, label columns... given as a comma list) is declared
``listed=True``; one rule, checked before any config's ``CONSTRAINTS`` (``refuse_empty_lists``), refuses its empty
value (``--layer ''``, ``layers=[]``) on every command instead of reading it as a default: None, or leaving the
option out, is how to ask for the default. A path option's empty value (``-o ''``, which reads as '.') is refused
alike (``refuse_empty_paths``), and so is an empty path argument (``featx fit ''``, ``featx.fit('')``: the
positional fields in ``ARGUMENTS``; ``empty_argument``), both in one shape (``empty_path``). The command line's
options reach this rule through their config; its arguments refuse an empty value as click reads it (with
``empty_argument``), as a command may use its argument before making a config, or make none (the last results
remembered in the folder, ``featx study status``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .caller import (
    Placeholder,
    command_line,
    for_caller,
    joined,
    keywords_of,
    on_command_line,
    spoken,
    spoken_command,
    spoken_value,
)
from .errors import FeatxError, FeatxWarning, InputError
from .flags import OPTION, Flag, flag_of, flagged, keyword_of, option, option_of

Check = Callable[[Any], None]
MAX_SEED = 2**32 - 1  # the largest seed numpy and scikit-learn take
O = TypeVar("O", bound="Options")  # noqa: E741
REMOVED_IN = "0.3.0"  # the release that drops the old spellings of renamed options (0.2.0 is out)


class FeatxDeprecationWarning(FeatxWarning, FutureWarning):
    """An old spelling of a renamed option: it still works until ``REMOVED_IN`` (shown by default, as a
    ``FutureWarning``; the CLI prints it as ``featx: warning: ...``)."""


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


# Each path argument (a command's positional field, no flag) and what it names: ``empty_argument``'s words.
ARGUMENTS = {
    "features": "a features file",
    "other": "a second features file",
    "corpus": "a corpus file",
    "more_corpora": "a corpus file",
    "bundle": "a probe bundle folder",
    "output": "the merged features file",
    "label_file": "a label file",
    "results": "a results file",
    "study": "a study file",
}


def _blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()


def empty_path(named: str, give: str) -> InputError:
    """The one refusal of an empty path, an argument's or an option's: ``named`` (as its caller wrote it) is empty,
    and what to ``give``; the hint says why (click and ``pathlib`` would read it as '.', the current folder)."""
    return InputError(f"{named} is empty: give {give}", "an empty path would read as '.', the current folder")


def empty_argument(name: str, value: Any = "", metavar: str | None = None) -> InputError:
    """The ``empty_path`` of path argument ``name`` (``ARGUMENTS``): its metavar on the command line (``FEATURES
    is empty: give a features file``), its keyword and value from Python (``features='' is empty: ...``)."""
    named = (metavar or name.upper()) if on_command_line() else f"{name}={value!r}"
    return empty_path(named, ARGUMENTS.get(name, "a path"))


def refuse_empty_paths(config: Any) -> None:
    """The one rule of every path option (``kind="path"``, or a field typed ``Path``): an empty value (``-o ''``,
    which click and ``pathlib`` read as '.', the current folder) is an ``empty_path`` naming all its flags
    (``-o/--output is empty: give a path, or leave it out``; ``output='' is ...`` from Python); and of every path
    argument (a field without a flag named in ``ARGUMENTS``, or an item of its tuple): an
    ``empty_argument``. The arguments are the config's first fields (``features``; ``bundle``, ``corpus``), so
    that a later field of the same name without a flag is not one. A config that takes another command's options
    (``SweepConfig``, ``featx probe --sweep``) declares them with that command's flags (``option_of``), so that
    the rule sees them."""
    for item in dataclasses.fields(config):
        if item.name not in ARGUMENTS or flag_of(item) is not None:
            break
        value = getattr(config, item.name)
        blank = [part for part in (value if isinstance(value, tuple) else (value,)) if _blank(part)]
        if blank:
            raise empty_argument(item.name, blank[0])
    for item, spec in flagged(type(config)):
        value = getattr(config, item.name)
        if _blank(value) and (spec.kind == "path" or "Path" in str(item.type)):
            named = "/".join(spec.flags) if on_command_line() else f"{item.name}={value!r}"
            raise empty_path(named, "a path, or leave it out")


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


def overwrite_option(group: str | None = None, what: str = "an existing output file") -> Any:
    """``--overwrite``, declared once for every command that refuses an existing output without it (``featx erase``,
    ``featx neurons``, ``featx predict``, ``featx fit``: ``safe_files.refuse_existing``); ``what``: what it replaces."""
    return option(False, flag="--overwrite", group=group, help=f"Replace {what}.")


def quiet_option(group: str | None = None, help: str = "No progress bar (as extract -q).") -> Any:  # noqa: A002
    """``-q``/``--quiet``, declared once for the long commands' ``progress`` field (``featx probe``, ``erase``,
    ``neurons``, ``intervene``, ``lens``): a flag setting it to False; from Python ``progress=False``."""
    return option(True, flag=("--quiet", "-q"), negate=True, group=group, help=help)


def encoding_option(group: str | None = None, what: str = "the corpus file") -> Any:
    """``--encoding``, declared once for the commands that read a corpus (``featx extract``, ``predict``, ``lens``):
    a codec name (checked by ``codecs.lookup``, as ``featx.extraction`` checks it)."""
    return option("utf-8", flag="--encoding", group=group, help=f"Text encoding of {what}.")


def sep_option(group: str | None = None, what: str = "Corpus delimiter") -> Any:
    """``--sep``, declared once for the commands that read a delimited corpus (``featx extract``, ``predict``,
    ``lens``) or label file (``probe --labels``): a delimiter or its name (``featx.io.parse_sep``), None to sniff."""
    return option(
        None,
        flag="--sep",
        group=group,
        help=f"{what}: comma, tab, semicolon or pipe (default: sniffed from the first lines).",
    )


def normalise(config: Options, name: str, value: Any) -> None:
    """Set ``name`` on a frozen config while it is being checked (its canonical spelling, say)."""
    object.__setattr__(config, name, value)


__all__ = [
    "ARGUMENTS",
    "encoding_option",
    "sep_option",
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
    "empty_argument",
    "empty_path",
    "flag_of",
    "flagged",
    "for_caller",
    "joined",
    "keyword_doc",
    "keyword_of",
    "keywords_of",
    "on_command_line",
    "option",
    "option_of",
    "overwrite_option",
    "quiet_option",
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

"""How a config field shows on the command line, declared once with the field: ``option(default,
flag="--max-length", help=..., group=...)`` keeps the flag, help and help group in the field's metadata
(``Flag``), from which the command line's options (``featx.cli.generate``), the Python keywords and their
documentation come. ``featx.options`` builds the configs on it and re-exports it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

OPTION = "featx.option"  # the key of a field's ``Flag`` in its metadata


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


def option_of(config: type, name: str, default: Any = dataclasses.MISSING) -> Any:
    """Field ``name`` of ``config`` declared again for a config that takes the same option from the same command
    line (``featx probe --sweep``'s ``SweepConfig`` takes ``ProbeConfig``'s): the same ``Flag``, still declared
    once, so that the shared rules (``refuse_empty_paths``, ``refuse_empty_lists``) and messages see the option;
    ``default``: the field's own, where it differs."""
    item = next(field for field in dataclasses.fields(config) if field.name == name)
    own = item.default if default is dataclasses.MISSING else default
    return dataclasses.field(default=own, metadata=item.metadata)


def flag_of(item: dataclasses.Field) -> Flag | None:
    """The ``Flag`` of a config field, or None for a field the command line does not show."""
    return item.metadata.get(OPTION)


def flagged(cls: type) -> list[tuple[dataclasses.Field, Flag]]:
    """The fields of a config that have a flag, in field order, with their ``Flag``."""
    return [(item, spec) for item in dataclasses.fields(cls) if (spec := flag_of(item)) is not None]


__all__ = ["OPTION", "Flag", "flag_of", "flagged", "keyword_of", "option", "option_of"]

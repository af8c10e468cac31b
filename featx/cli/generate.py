"""The options of a command, generated from its config's fields (``featx.options.option``): one click option per
field with a flag (its flags, type, default, help and help group), a hidden one per old spelling of a renamed
option (accepted with ``featx: warning: --old is deprecated, ...``), and ``--help`` listing them by group.

The options are made when the command is first parsed or its help shown, not when ``featx`` starts, so that
``featx --help`` imports neither the config modules nor cloup. cloup lays out the groups (one aligned table of
titled sections); click still parses.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import click

from ..options import ARGUMENTS, FeatxDeprecationWarning, Flag, deprecation, empty_argument, flagged, keyword_of

OLD = "featx_old"  # the attribute of a hidden option holding an old spelling: (field name, new flag)
GROUP = "featx_group"  # the attribute holding an option's help group


def grouped_option(group: str, *flags: str, **settings: Any) -> Any:
    """An option a command has besides its config's fields (``--dry-run``), listed under ``group`` in ``--help``;
    ``settings`` as ``click.option`` takes them."""

    def decorate(function: Any) -> Any:
        function = click.option(*flags, **settings)(function)
        setattr(function.__click_params__[-1], GROUP, group)
        return function

    return decorate


class _PathValue(click.Path):
    """A path option's value as a ``Path``, but an empty one left ``""`` (click would make it ``Path('.')``, the
    current folder) for the config to refuse (``featx.options.refuse_empty_paths``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            return value
        return super().convert(value, param, ctx)


class ArgumentPath(click.Path):
    """Every command's path argument (``FEATURES``, ``CORPUS``, ``BUNDLE``...), as a ``Path``; an empty one, which
    click would make ``Path('.')``, the current folder, is refused as it is read: ``FEATURES is empty: give a
    features file`` (``featx.options.empty_argument``, as the config refuses it from Python)."""

    def __init__(self) -> None:
        super().__init__(path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            metavar = param.human_readable_name if param is not None else None
            name = next((word for word in (param and param.name, metavar and metavar.lower()) if word in ARGUMENTS), "")
            raise empty_argument(name, value, metavar)
        return super().convert(value, param, ctx)


PATH_ARGUMENT = ArgumentPath()


def _type(item: dataclasses.Field, spec: Flag) -> Any:
    kind = spec.kind
    if kind is None:
        default, annotation = item.default, str(item.type)
        kind = "flag" if isinstance(default, bool) else type(default).__name__ if default is not None else ""
        if kind not in ("flag", "int", "float"):
            kind = next((k for k, word in _KINDS if word in annotation), "str")
    if spec.choices is not None:
        return click.Choice(spec.choices, case_sensitive=False)
    return {"int": int, "float": float, "path": _PathValue(path_type=Path), "str": str, "flag": None}[kind]


_KINDS = (("path", "Path"), ("int", "int"), ("float", "float"))


def _option(item: dataclasses.Field, spec: Flag) -> click.Option:
    kind = _type(item, spec)
    default = item.default if item.default is not dataclasses.MISSING else None
    default = spec.cli_default if spec.cli_default is not None else default
    if kind is None:  # a flag: on when given (``negate``: the field is then False)
        made = click.Option([*spec.flags, item.name], is_flag=True, help=spec.help)
    else:
        shown = default is not None and default is not False
        made = click.Option([*spec.flags, item.name], type=kind, default=default, show_default=shown, help=spec.help)
    setattr(made, GROUP, spec.group)
    return made


def _old_name(name: str, old: str) -> str:
    return f"old_{name}_{keyword_of(old)}"


def _old_option(item: dataclasses.Field, spec: Flag, old: str) -> click.Option:
    kind = _type(item, spec)
    decls = [old, _old_name(item.name, old)]
    made = click.Option(decls, hidden=True, type=kind) if kind is not None else None
    if made is None:
        made = click.Option(decls, hidden=True, is_flag=True, default=None)
    setattr(made, OLD, (item.name, spec.name))
    return made


def generate(config: type) -> list[click.Option]:
    """The click options of ``config``'s fields with a flag, then the hidden old spellings."""
    fields = flagged(config)
    return [_option(item, spec) for item, spec in fields] + [
        _old_option(item, spec, old) for item, spec in fields for old in spec.old
    ]


def field_values(config: type, params: dict[str, Any]) -> dict[str, Any]:
    """The parsed ``params`` as ``config``'s field values: a ``negate`` flag turned into its field's value, and
    an old spelling given moved to its field (with a deprecation warning)."""
    values = dict(params)
    for item, spec in flagged(config):
        for old in spec.old:
            given = values.pop(_old_name(item.name, old), None)
            if given is not None:
                warnings.warn(deprecation(old, spec.name), FeatxDeprecationWarning, stacklevel=2)
                values[item.name] = given
        if spec.negate and item.name in values:
            values[item.name] = not values[item.name]
    return values


def _on_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (a closed or missing stream is not)."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


class ConfigCommand(click.Command):
    """A command whose options are its config's fields (``config``: ``"module:Class"``, imported on first use),
    after the parameters written by hand (its arguments). The callback gets the config's field values."""

    def __init__(self, *args: Any, config: str, **kwargs: Any) -> None:
        self.config_path = config
        self.generated: list[click.Parameter] | None = None  # the config's options, once made
        self._params: list[click.Parameter] = []
        super().__init__(*args, **kwargs)

    @property
    def config(self) -> type:
        module, name = self.config_path.split(":")
        return getattr(importlib.import_module(module), name)

    @property  # type: ignore[override]
    def params(self) -> list[click.Parameter]:
        """The parameters written by hand, then the config's options (made on first use; one list, which click
        may append to)."""
        if self.generated is None:
            made: list[click.Parameter] = list(generate(self.config))
            self.generated = made
            self._params.extend(made)
        return self._params

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        """The parameters written by hand; the config's options, if already made, stay after them."""
        self._params = [param for param in value if param not in (self.generated or ())]
        self._params.extend(self.generated or ())

    def invoke(self, ctx: click.Context) -> Any:
        ctx.params = field_values(self.config, ctx.params)
        if ctx.params.get("progress") and not _on_terminal(sys.stderr):
            ctx.params["progress"] = False  # a bar only where someone watches: never into a pipe or a log file
        return super().invoke(ctx)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The options by help group, in the order the config's fields name the groups (an option written by hand
        last in its group); ungrouped ones, and ``--help``, last."""
        from cloup import HelpFormatter, HelpSection

        params = self.get_params(ctx)
        ordered = sorted(params, key=lambda param: param not in (self.generated or ()))
        sections: dict[str | None, list[tuple[str, str]]] = {}
        for param in ordered:
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None:
                sections.setdefault(getattr(param, GROUP, None), []).append(record)
        if list(sections) == [None]:
            return super().format_options(ctx, formatter)
        other = sections.pop(None, [])
        layout = HelpFormatter(width=formatter.width, max_width=formatter.width)
        layout.current_indent = formatter.current_indent
        listed = [HelpSection(title, records) for title, records in sections.items() if title is not None]
        layout.write_many_sections([*listed, HelpSection("Other options", other)], aligned=True)
        formatter.write(layout.getvalue())


__all__ = ["GROUP", "OLD", "ConfigCommand", "field_values", "generate", "grouped_option"]

"""Messages in their caller's words: a violation names the option as its caller wrote it, the flag on the
command line (``--batch-size 0``), the keyword from Python (``batch_size=0``).

The CLI runs its commands inside ``command_line()``, featx's Python entry points (``featx.embed``,
``featx.extract``, ``featx.probe``, ``featx.fit``...) inside ``keywords_of(Config)`` (a ``with`` block, or a
decorator); a check phrases an option with ``spoken`` and ``spoken_value`` (several together with ``joined``, a
whole call with ``spoken_command``), and whatever flag of the config a message still names (a hint written as
text, a check deeper in the package, an error found while running) is reworded for the Python caller by
``for_caller``: a bare flag only, so a flag with its value (``--folds 1``, which would read ``folds 1``) or a
command line (``featx fit FEATURES --label head``) is phrased with those instead. A caller that says neither (a
config made directly) reads flags. ``featx.options`` re-exports all of it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Any, TypeVar, cast

from .errors import FeatxError
from .flags import flag_of, flagged, keyword_of

F = TypeVar("F", bound=Callable[..., Any])
_CALLER: ContextVar[str | None] = ContextVar("featx_caller", default=None)  # "cli" or "python" (keywords_of)


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


class keywords_of:  # noqa: N801 - a context manager and decorator, used as a function: keywords_of(ProbeConfig)
    """A Python entry point (``featx.embed``) of config ``cls``: errors raised inside name its keywords instead of
    its flags (``spoken``, ``for_caller``), what a run finds wrong after its config was made (a column the corpus
    lacks) as well; called by the command line (inside ``command_line()``), they keep the flags. A ``with`` block,
    or a decorator: of a generator function (``featx.report.plot_files``), each step of the iteration it returns
    runs inside (the body runs only as it is iterated, after the call has returned). ``cls`` None: an entry point
    without options of its own (``featx.study.load``), whose messages are phrased for their caller as they are
    made."""

    def __init__(self, cls: type | None) -> None:
        self.cls = cls
        self._tokens: list[Token[str | None]] = []

    def __enter__(self) -> None:
        self._tokens.append(_CALLER.set(_CALLER.get() or "python"))

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        try:
            if isinstance(error, FeatxError) and self.cls is not None:
                for_caller(error, self.cls)  # while the caller is still known
        finally:
            _CALLER.reset(self._tokens.pop())

    def __call__(self, function: F) -> F:
        cls = self.cls
        if inspect.isgeneratorfunction(function):

            @functools.wraps(function)
            def steps(*args: Any, **kwargs: Any) -> Iterator[Any]:
                iterator = function(*args, **kwargs)
                try:
                    while True:
                        with keywords_of(cls):  # each step in its caller's words, never across a yield
                            try:
                                item = next(iterator)
                            except StopIteration:
                                return
                        yield item
                finally:
                    iterator.close()

            return cast(F, steps)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            with keywords_of(cls):  # one per call: a decorated function may run in several threads at once
                return function(*args, **kwargs)

        return cast(F, call)


__all__ = [
    "Placeholder",
    "command_line",
    "for_caller",
    "joined",
    "keywords_of",
    "on_command_line",
    "spoken",
    "spoken_command",
    "spoken_value",
]

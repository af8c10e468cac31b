"""Reading a study file: TOML through the standard library's ``tomllib``, and errors that name the file, the
key, its line and the nearest known key; and ``study_toml``, a study dict written as such a file.

``tomllib`` gives no line numbers for the values it reads, so ``KeyLines`` finds each key's line in the text:
a key is named by its place (``("models", 1, "seeds")``: the ``seeds`` key of the second ``[[models]]``
table), found under its table header. A study given as a dict has no file and no lines; its errors name the
key only.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from ..errors import InputError
from ..options import empty_argument
from ..safe_files import NotARegularFile, read_small_text, refuse_unsafe_target

MAX_STUDY_BYTES = 4 << 20  # a study file is a few hundred lines; anything larger is not one
Place = tuple[Any, ...]  # ("study", "output"), ("models", 0, "name"), ("probe", "layer")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)\s*=""")


def _bare(name: str) -> str:
    name = name.strip()
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] and name[0] in "\"'" else name


@dataclass(frozen=True)
class KeyLines:
    """The line (1-based) of every ``key = value`` of a TOML text, by its place."""

    lines: dict[Place, int] = field(default_factory=dict)

    @classmethod
    def of(cls, text: str) -> KeyLines:
        lines: dict[Place, int] = {}
        counts: dict[str, int] = {}
        table: Place = ()
        for number, line in enumerate(text.splitlines(), 1):
            header = _HEADER.match(line)
            if header:
                name = _bare(header.group(2))
                if header.group(1) == "[[":
                    counts[name] = counts.get(name, -1) + 1
                    table = (name, counts[name])
                else:
                    table = (name,)
                lines.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key:
                lines.setdefault((*table, _bare(key.group(1))), number)
        return cls(lines)

    def keys_under(self, table: Place) -> list[str]:
        """The keys written in ``table``, in file order."""
        return [str(place[-1]) for place in self.lines if len(place) == len(table) + 1 and place[:-1] == table]

    def line(self, place: Place) -> int | None:
        """The line of ``place``, else of the nearest table holding it (None: not found, or no file)."""
        for end in range(len(place), 0, -1):
            if place[:end] in self.lines:
                return self.lines[place[:end]]
        return None


def where(place: Place) -> str:
    """How a message names a key: ``[study] output``, ``[[models]] #2 seeds``, ``[probe] layer``."""
    if not place:
        return "the study"
    head = f"[[{place[0]}]] #{place[1] + 1}" if len(place) > 1 and isinstance(place[1], int) else f"[{place[0]}]"
    rest = place[2:] if len(place) > 1 and isinstance(place[1], int) else place[1:]
    return " ".join([head, *(str(part) for part in rest)])


@dataclass(frozen=True)
class Source:
    """Where a study came from: its file (None for a dict), the folder its relative paths start from, and the
    lines of its keys."""

    path: Path | None
    folder: Path
    lines: KeyLines = field(default_factory=KeyLines)

    def error(self, place: Place, message: str, hint: str | None = None) -> InputError:
        """One ``InputError`` naming the file, the key and its line."""
        line = self.lines.line(place)
        at = f"{self.path}" + (f", line {line}" if line is not None else "") if self.path is not None else "study"
        return InputError(f"{at}: {where(place)}: {message}", hint)

    def unknown(self, place: Place, known: Iterable[str], what: str = "key", name: str | None = None) -> InputError:
        """An unknown key (or ``name``: a value of the key at ``place``), with the nearest known one (``difflib``)
        as the hint."""
        key = str(place[-1]) if name is None else name
        known = sorted(set(known))
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"did you mean '{near[0]}'?" if near else f"the known {what}s: {', '.join(known)}"
        return self.error(place, f"unknown {what} '{key}'", hint)

    def resolve(self, value: str | Path, place: Place = ()) -> Path:
        """A path of the study (the key at ``place``), relative to the study file's folder (a dict's: the current
        folder); one no file can have (a NUL character, an unknown user's ``~``) is an ``InputError``."""
        if "\0" in str(value):
            raise self.error(place, f"path {str(value)!r} holds a NUL character", "no path can hold one: remove it")
        try:
            path = Path(value).expanduser()
        except RuntimeError:  # ~name of a user this machine does not know
            raise self.error(place, f"path {value}: no home folder is known for its '~'", "spell it out") from None
        return path if path.is_absolute() else self.folder / path


def read_study(path: str | Path) -> tuple[dict[str, Any], Source]:
    """The TOML of a study file as a dict, and its ``Source``; an unreadable or invalid file is an
    ``InputError`` naming it (and the line ``tomllib`` stopped at)."""
    if isinstance(path, str) and not path.strip():  # '' would read as '.', the current folder
        raise empty_argument("study", path)
    path = Path(path)
    try:
        text = read_small_text(path, MAX_STUDY_BYTES)
    except FileNotFoundError:
        raise InputError(f"study file {path} does not exist", "give the path of a STUDY.toml file") from None
    except NotARegularFile as err:
        raise InputError(f"study file {path} cannot be used: {err}", "give a regular TOML file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"study file {path} cannot be read ({err})", "give a readable UTF-8 TOML file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: not valid TOML: {err}", "see docs/study.md for the study file's layout") from None
    return data, Source(path, path.resolve().parent, KeyLines.of(text))


def dict_source(data: dict[str, Any]) -> Source:
    """The ``Source`` of a study given as a dict: relative paths from the current folder, no lines."""
    if not isinstance(data, dict):
        raise InputError("a study is a path to a TOML file or a dict", "e.g. featx.study.run('study.toml')")
    return Source(None, Path.cwd())


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")  # a TOML basic string


def study_toml(study: dict[str, Any]) -> str:
    """A study given as a dict (``featx.study.run``'s) as the text of a study file: its tables (``[study]``,
    ``[probe]``...) and arrays of tables (``[[models]]``, ``[[corpora]]``) of plain values (strings, numbers,
    booleans and lists of them), which ``featx study run`` reads back as the same dict."""
    lines: list[str] = []
    for name, table in study.items():
        for entry in table if isinstance(table, list) else [table]:
            lines.append(f"[[{name}]]" if isinstance(table, list) else f"[{name}]")
            lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
            lines.append("")
    return "\n".join(lines)


def check_keys(source: Source, table: dict[str, Any], place: Place, known: Sequence[str]) -> None:
    """Every key of ``table`` is one of ``known`` (else an unknown-key error with the nearest one)."""
    for key in table:
        if key not in known:
            raise source.unknown((*place, key), known)


def check_output(source: Source, value: str) -> Path:
    """The ``[study] output`` folder, resolved from the file's folder: not a link (nothing is written through
    one: OUTPUT is named as the folder itself), not a file, not a filesystem root, the current folder or one
    above it, nor the study file's own folder or one above it."""
    where, own = ("study", "output"), "name a folder of its own, e.g. out/study"
    output = source.resolve(value, where)
    if output.is_symlink():
        link = f"{output} is a symbolic link; featx refuses to write through it"
        raise source.error(where, link, f"name the folder it points to instead: output = {str(output.resolve())!r}")
    if output.exists() and not output.is_dir():
        raise source.error(where, f"{output} is a file, not a folder", "name a new or study folder")
    try:
        refuse_unsafe_target(output)  # a filesystem root, the current folder or one above it
    except InputError as err:
        raise source.error(where, err.message, own) from None
    if source.path is not None and source.folder.resolve().is_relative_to(output.resolve()):
        raise source.error(where, f"the output path {output} is the study file's own folder or a folder above it", own)
    return output

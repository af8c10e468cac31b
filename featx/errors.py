"""Errors featx reports to users: a message saying what is wrong and what to do."""

from __future__ import annotations

import re

# What is never shown as it is: control characters but newline and tab (an escape sequence could rewrite the terminal;
# an SVG or XML file holding one is not well-formed), line and paragraph separators, the bidirectional overrides
# and isolates (they reorder what is shown), halves of a surrogate pair (not text: no file can hold them, matplotlib
# cannot measure them) and the two noncharacters XML refuses.
_UNSHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


def printable(text: object) -> str:
    """``text`` with every character of ``_UNSHOWN`` written as its escape (``\\x1b``, ``\\ud800``...): model names,
    label names and texts come from files other people made, and are shown on the terminal, in figures and pages."""
    return _UNSHOWN.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), str(text))


class FeatxError(Exception):
    """A problem with the user's input or environment, reported without a traceback.

    The CLI prints ``featx: error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  hint: {hint}")


class FeatxWarning(UserWarning):
    """Something the user should know before the work starts, which does not stop it (a slow precision on this
    CPU, say). Raised with ``warnings.warn``; the CLI prints ``featx: warning: <message>`` on stderr."""


class InputError(FeatxError):
    """The corpus, an option or a features file cannot be used as given."""


def require_whole(value, flag: str, minimum: int = 1) -> int:
    """``value`` as a whole number of at least ``minimum``, else an ``InputError`` naming ``flag``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(
            f"{flag} {value} must be a whole number of at least {minimum}", f"give {flag} a value of at least {minimum}"
        )
    return value


class ModelError(FeatxError):
    """The model cannot be loaded safely or offline."""


class StoreError(FeatxError):
    """A features or results file is missing, stale, incomplete or not featx's."""


class NonFiniteError(StoreError):
    """A forward pass gave inf or NaN features (float16 overflow; an edit too large for the model's arithmetic)."""


class IncompleteError(StoreError):
    """The features file has not been written to the end (yet)."""


class Interrupted(FeatxError):
    """The user stopped a run (Ctrl-C, SIGTERM, SIGHUP); committed work is kept. Exit code 128 + signal."""

    exit_code = 130

    def __init__(self, message: str, hint: str | None = None, signum: int = 2):
        super().__init__(message, hint)
        self.exit_code = 128 + signum


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP turned into an interrupt, handled everywhere like Ctrl-C (``signals.py``)."""

    def __init__(self, signum: int, name: str):
        super().__init__(name)
        self.signum, self.name = signum, name


def signal_of(interrupt: BaseException) -> tuple[int, str]:
    """(signal number, name) of a KeyboardInterrupt: SIGINT unless it is a ``Terminated``."""
    if isinstance(interrupt, Terminated):
        return interrupt.signum, interrupt.name
    return 2, "Ctrl-C"

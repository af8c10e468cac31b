"""Errors featx reports to users: a message saying what is wrong and what to do."""

from __future__ import annotations


class FeatxError(Exception):
    """A problem with the user's input or environment, reported without a traceback.

    The CLI prints ``featx: error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  hint: {hint}")


class InputError(FeatxError):
    """The corpus, an option or a features file cannot be used as given."""


class ModelError(FeatxError):
    """The model cannot be loaded safely or offline."""


class StoreError(FeatxError):
    """A features or results file is missing, stale, incomplete or not featx's."""


class IncompleteError(StoreError):
    """The features file has not been written to the end (yet)."""


class Interrupted(FeatxError):
    """The user stopped a run (Ctrl-C); committed work is kept."""

    exit_code = 130

"""HDF5's failures on a damaged features file, reported as featx's ``StoreError``, never a traceback.

h5py turns each HDF5 failure into a Python exception by the error's codes (its ``_errors`` table): ``OSError``
(a read, a seek, a truncated file, a bad address), ``KeyError`` (an object that cannot be opened or found),
``ValueError`` and ``TypeError`` (a bad value, range or type read from the file), ``NotImplementedError`` (an
unsupported message or version, a ``RuntimeError``) and ``RuntimeError`` for every other code (a bad heap, a
symbol table, an attribute message that cannot be decoded). So ``HDF5_ERRORS`` is those five, caught where a
file is checked at open (everything there reads the file) and around every read of an open ``FeatureFile``
(``damage_reported``), where only one raised inside h5py is the file's: the same kinds raised by featx's own code
are its bugs, and go on as they are.

A truncated file, flipped bytes in the superblock, an object header or a dataset's chunk index are each refused
at open or on the read that meets them (``tests/store/test_damaged.py``, with seeded byte flips). Left: HDF5 itself
loops forever, or crashes, reading a variable-length string from a global heap collection whose object records are
damaged; nothing above it can refuse that file without parsing HDF5's heap.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import TypeVar

from ..errors import StoreError

HDF5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)
HINT = "the file is damaged: run featx extract again with --overwrite"
Reader = TypeVar("Reader", bound=type)


def damaged(path, err: BaseException, hint: str = HINT) -> StoreError:
    """The error of a file HDF5 failed to read: ``err``'s text says where; ``hint`` how to make it again."""
    detail = err.args[0] if isinstance(err, KeyError) and len(err.args) == 1 else err  # a KeyError's str is a repr
    return StoreError(f"{path} cannot be read; it looks damaged ({detail})", hint)


def raised_by_h5py(err: BaseException) -> bool:
    """Whether ``err`` came out of h5py (its innermost frame is h5py's), not out of featx's own code."""
    trace = err.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    return trace is not None and "h5py" in Path(trace.tb_frame.f_code.co_filename).parts


def _reported(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except HDF5_ERRORS as err:
            if not raised_by_h5py(err) or not self._file.id.valid:  # featx's own, or a read after close()
                raise
            raise damaged(self._file.filename, err) from None  # the file read: a .partial one too

    return wrapper


def damage_reported(cls: Reader) -> Reader:
    """``cls`` (``FeatureFile``) with every public method and property, its bases' too, reporting an HDF5 failure
    raised inside it as ``damaged``: a damaged part of a file is met by the read that reads it, not at open."""
    for name in dir(cls):
        member = inspect.getattr_static(cls, name)
        if name.startswith("_") or name == "close":
            continue
        if isinstance(member, property) and member.fget is not None:
            setattr(cls, name, property(_reported(member.fget), member.fset, member.fdel, member.__doc__))
        elif inspect.isfunction(member):
            setattr(cls, name, _reported(member))
    return cls

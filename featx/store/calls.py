"""The arguments of ``FeatureFile``'s reads checked before anything is read: ``features('mean', 3, 5)``,
``features(3, 'mean')`` or ``token_states(0, 4)`` (arguments in another order, or one too many, whose extra value
lands on the dtype) are an ``InputError`` naming the call and the expected one, never numpy's raw ``TypeError``; a
label column the file lacks is one naming those it has (``no_label_column``)."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..options import on_command_line

_ORDINALS = ("first", "second", "third")
_CALLS = {  # call: (its parameters before dtype, the expected call, what it returns)
    "features": (
        ("pooling", "layer"),
        "features(pooling, layer, dtype=numpy.float32, site='hidden'), e.g. features('mean', -1)",
        "features",
        "one pooling's (n_rows, width) features at one layer",
    ),
    "concatenated": (
        ("pooling", "layers"),
        "concatenated(pooling, layers, dtype=numpy.float32, site='hidden'), e.g. concatenated('mean', [-2, -1])",
        "features",
        "one pooling's features of those layers side by side, (n_rows, width * len(layers))",
    ),
    "token_states": (
        ("layer",),
        "token_states(layer, dtype=numpy.float32, site='hidden')",
        "states",
        "it returns every committed row's tokens of that layer; "
        "row r's are states[token_offsets[r]:token_offsets[r + 1]]",
    ),
}
_KINDS = {
    "pooling": "a stored pooling's name such as 'mean'",
    "layer": "a whole layer number such as 2 or -1",
    "layers": "a list of whole layer numbers such as [-2, -1]",
}


def _is_layer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _fits(name: str, value) -> bool:
    if name == "pooling":
        return isinstance(value, str)
    if name == "layer":
        return _is_layer(value)
    return isinstance(value, (list, tuple, range, np.ndarray)) and all(_is_layer(layer) for layer in value)


def _float_dtype(dtype) -> np.dtype | None:
    try:
        checked = np.dtype(dtype)
    except TypeError:
        return None
    return None if checked.kind != "f" or isinstance(dtype, (bool, int, float)) else checked


def checked_call(call: str, dtype, *args) -> np.dtype:
    """``dtype`` of ``FeatureFile.<call>(*args, dtype)`` as a numpy float dtype, once each of ``args`` (a pooling's
    name, a whole layer number, a list of them) is what the call takes; anything else an ``InputError``."""
    names, expected, returned, what = _CALLS[call]
    checked = _float_dtype(dtype)
    shown = ", ".join(repr(value) for value in (*args, *((dtype,) if dtype is not np.float32 else ())))
    for position, (name, value) in enumerate(zip(names, args, strict=True)):
        if not _fits(name, value):
            message = f"the {_ORDINALS[position]} argument is the {name} ({_KINDS[name]}), not {value!r}"
            raise InputError(f"{call}({shown}): {message}", f"call {expected}: {what}")
    if checked is None:
        raise InputError(
            f"{call}({shown}): the {_ORDINALS[len(names)]} argument is the dtype of the {returned} returned (a float "
            f"type such as numpy.float32), not {dtype!r}",
            f"call {expected}: {what}",
        )
    return checked


def no_label_column(path, column: str, columns: list[str], word_columns: list[str] | None) -> InputError:
    """The error of a label column ``path`` lacks, naming its label columns (and word label columns: None for a
    file of sentences). Its hint holds for every command that reads labels (``featx fit`` has no ``--labels``):
    store the columns in the file for good, or (``featx probe`` alone) join them for one run."""
    words = f"; word label columns: {', '.join(word_columns) or '(none)'}" if word_columns is not None else ""
    message = f"{path} has no label column '{column}'; label columns: {', '.join(columns) or '(none)'}{words}"
    if on_command_line():
        more = f"featx labels add {path} FILE.csv (featx probe joins one for a single run: --labels FILE.csv)"
    else:
        more = (
            f"featx.probing.add_labels({str(path)!r}, 'FILE.csv') (featx.probe joins one for a single run: labels=...)"
        )
    return InputError(message, f"use one of these, or store more from a file of label columns: {more}")

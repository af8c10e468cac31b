"""The checks of a bundle's extraction settings (``manifest["extraction"]``), which ``featx predict`` passes on to
the model: each one featx writes, of the kind it writes, a bad one named as the bundle's field (never as an option
the user did not give)."""

from __future__ import annotations

from pathlib import Path

from ..bundle_fields import REFIT_HINT
from ..errors import InputError
from ..json_fields import shown


def bad(folder: Path, what: str) -> InputError:
    return InputError(f"bundle {folder}: {what}", REFIT_HINT)


def _is_whole(value, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


# The extraction settings predict reuses, each with what it may hold (None too: an older bundle lacks some).
DTYPE_NAMES = ("auto", "float32", "fp32", "float16", "fp16", "half", "bfloat16", "bf16")
EXTRACTION_CHOICES = {
    "store_dtype": ("float16", "float32"),
    "compute_dtype": DTYPE_NAMES,
    "option_dtype": DTYPE_NAMES,
    "long_inputs": ("truncate", "window"),
    "pair_mode": ("cross", "separate"),
}
EXTRACTION_WHOLE = {"max_length": (2, 1 << 20), "stride": (0, 1 << 20), "option_seed": (0, (1 << 32) - 1)}


def check_extraction(extraction: dict, folder: Path) -> None:
    """Each extraction setting predict passes on is one featx writes: a bad one is named as the bundle's field,
    never as an option the user did not give (each field's JSON type is checked before, ``featx.bundle_fields``)."""
    for name, choices in EXTRACTION_CHOICES.items():
        value = extraction.get(name)
        if value is not None and value not in choices:
            raise bad(folder, f"its extraction field '{name}' is {shown(value)}, not one of {', '.join(choices)}")
    for name, (low, high) in EXTRACTION_WHOLE.items():
        value = extraction.get(name)
        if value is not None and not _is_whole(value, low, high):
            raise bad(folder, f"its extraction field '{name}' is {shown(value)}, not a whole number in {low}..{high:,}")
    _check_template(extraction, folder)


def _check_template(extraction: dict, folder: Path) -> None:
    """A recorded template renders a text alone (its text field, and the answer of ``--contrast``): ``featx fit``
    refuses any other, so one naming other columns was edited in."""
    from ..extraction import ANSWER_FIELD, TEXT_FIELD, parse_template

    template = extraction.get("option_template")
    if not template:
        return
    try:
        fields = parse_template(str(template), str(extraction.get("text_col") or TEXT_FIELD)).fields
    except InputError as error:
        raise bad(folder, f"its extraction field 'option_template' is not a template: {error.message}") from None
    others = [name for name in fields if name not in (TEXT_FIELD, ANSWER_FIELD)]
    if others:
        raise bad(
            folder,
            f"its extraction field 'option_template' names column(s) {shown(others)} besides the text "
            "(a bundle predicts from a text alone)",
        )


__all__ = [
    "DTYPE_NAMES",
    "EXTRACTION_CHOICES",
    "EXTRACTION_WHOLE",
    "check_extraction",
]

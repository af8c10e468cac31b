"""``--answers``: the answer strings the lens reads, the label value each stands for, and their token ids.

Two spellings, both split on commas (an answer cannot hold a comma), every other character kept as typed, so
that a leading space (GPT-2's ``" yes"`` is one token, ``"yes"`` another) stays part of the answer:

- **by order**, ``" yes, no"``: answer ``i`` stands for the label's ``i``-th class in the order featx lists
  classes (the label column's values sorted: numbers numerically, other values as text; ``featx probe`` and
  the lens table print them); there must be exactly as many answers as classes;
- **by mapping**, ``"positive= great,negative= awful"``: ``LABEL=ANSWER`` items; the label value is the text
  before the first ``=`` (stripped of spaces), the answer everything after it. Every class of the label
  must be named, and every name must be a class.

Each answer must be one token of the model's tokenizer (encoded without special tokens), and answers must be
distinct tokens: the lens compares the logits of exactly these tokens.

Torch-free: the config's checks import it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..options import spoken_value


def _hint() -> str:
    """How to write the answers, as the caller writes the option (``--answers ' yes, no'``, ``answers=' yes, no'``)."""
    return f"write {_answers(' yes, no')} (answer i for the label's i-th class) or 'positive= great,negative= awful'"


def _answers(spec: object) -> str:
    return spoken_value(None, "answers", spec, "--answers", shown=repr(spec))


@dataclass(frozen=True)
class Answers:
    """The parsed ``--answers``: the answer strings, and the label value of each (None: by order)."""

    texts: tuple[str, ...]
    labels: tuple[str, ...] | None = None

    def classes_to_answers(self, class_names: list[str], label: str) -> list[int]:
        """For each class (in ``class_names`` order), the index of its answer; a clear error on a mismatch."""
        if self.labels is None:
            if len(self.texts) != len(class_names):
                raise InputError(
                    f"--answers gives {len(self.texts)} answer(s) by order, and label '{label}' has "
                    f"{len(class_names)} class(es) ({_shown(class_names)})",
                    "give one answer per class, in this order, or map them: "
                    + ",".join(f"{name}=ANSWER" for name in class_names[:4]),
                )
            return list(range(len(class_names)))
        unknown = [name for name in self.labels if name not in class_names]
        missing = [name for name in class_names if name not in self.labels]
        if unknown or missing:
            said = (f"names {_shown(unknown)}, not a class of it" if unknown else "") + (
                ("; " if unknown else "") + f"leaves out class(es) {_shown(missing)}" if missing else ""
            )
            raise InputError(
                f"--answers does not match label '{label}' ({_shown(class_names)}): it {said}",
                "map every class of the label to one answer, e.g. " + ",".join(f"{n}=ANSWER" for n in class_names[:4]),
            )
        return [self.labels.index(name) for name in class_names]

    def describe(self, class_names: list[str], label: str) -> str:
        """``label=value -> 'answer'`` for every class: what the table's accuracy counts as correct."""
        order = self.classes_to_answers(class_names, label)
        return ", ".join(f"{name} -> {self.texts[index]!r}" for name, index in zip(class_names, order, strict=True))


def _shown(names: list[str]) -> str:
    return ", ".join(repr(name) for name in names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def parse_answers(spec: str | None) -> Answers:
    """``--answers`` parsed; refused when empty, with an empty answer, a repeat, or mixed spellings."""
    if not isinstance(spec, str) or not spec.strip(","):
        raise InputError("--answers is empty", _hint())
    items = spec.split(",")
    mapped = ["=" in item for item in items]
    if any(mapped) and not all(mapped):
        raise InputError(f"{_answers(spec)} mixes LABEL=ANSWER items and plain answers", _hint())
    if all(mapped):
        pairs = [item.split("=", 1) for item in items]
        labels, texts = tuple(name.strip() for name, _ in pairs), tuple(text for _, text in pairs)
    else:
        labels, texts = None, tuple(items)
    if any(not text for text in texts) or (labels is not None and any(not name for name in labels)):
        raise InputError(f"{_answers(spec)} has an empty answer or label", _hint())
    for what, values in (("answer", texts), ("label", labels or ())):
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            raise InputError(f"{_answers(spec)} repeats the {what} {repeated[0]!r}", _hint())
    if len(texts) < 2:
        raise InputError(f"{_answers(spec)} gives one answer; the lens compares at least two", _hint())
    return Answers(texts, labels)


def answer_token_ids(answers: Answers, tokenizer, model: str) -> list[int]:
    """The one token id of every answer (encoded without special tokens), or an error naming the answer
    and the tokens it is made of."""
    ids = []
    for text in answers.texts:
        encoded = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        if len(encoded) != 1:
            pieces = tokenizer.convert_ids_to_tokens(encoded)
            raise InputError(
                f"--answers: {text!r} is {len(encoded)} tokens of the {model} tokenizer ({pieces}), not one",
                "choose answers that are single tokens (mind the leading space: ' yes' and 'yes' differ)",
            )
        ids.append(int(encoded[0]))
    if len(set(ids)) < len(ids):
        raise InputError(f"--answers: two answers are the same token of {model}", "choose distinct answers")
    return ids

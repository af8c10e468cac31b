"""Options declared once and shared by several commands: ``--join`` (``featx probe --labels``, ``featx labels
add``), ``--group`` (probe, its ``--sweep``, fit, erase, neurons, intervene), ``--n-bootstrap`` (probe, its
``--sweep``, erase, neurons, fit, lens, intervene), ``--folds`` (the same but intervene) and ``--seed`` (all seven),
with their checks (``check_bootstrap`` is the probe config's)."""

from __future__ import annotations

from numbers import Integral
from typing import Any

from ..checks import one_of, requires, text, whole
from ..errors import InputError
from ..options import MAX_SEED, option, spoken, spoken_value

JOINS = ("id", "row")  # how a file of label columns matches the stored rows


def join_option(group: str | None = None) -> Any:
    """``--join``, declared once for ``featx probe --labels`` and ``featx labels add``."""
    return option(
        "id",
        flag="--join",
        group=group,
        help="How the label file's rows match the stored rows: id (its id column) or row (its data row numbers).",
    )


check_join = one_of(
    "join",
    "--join",
    JOINS,
    hint=lambda config: (
        f"use {spoken_value(config, 'join', 'id', '--join')} or {spoken_value(config, 'join', 'row', '--join')}"
    ),
)
check_join_needs_labels = requires(
    "join",
    "--join",
    "labels",
    "--labels",
    default="id",
    hint=lambda config: (
        f"add {spoken_value(config, 'labels', 'FILE', '--labels')}, or leave {spoken(config, 'join', '--join')} out"
    ),
)


# ``--group``'s reserved names: the rows' stored texts, never a label column's (tasks/groups.py reads them).
TEXT_GROUPS = ("@text", "@text_pair", "@texts")


def group_option(group: str | None = None) -> Any:
    """``--group``, declared once for ``featx probe`` (and its ``--sweep``), ``featx fit``, ``featx erase``,
    ``featx neurons`` and ``featx intervene``."""
    return option(
        None,
        flag="--group",
        group=group,
        help="A label column naming groups of rows to keep together (a document, a speaker), or the stored texts: "
        "@text (rows with the same text), @text_pair (pairs with the same second text), @texts (pairs sharing any "
        "sentence, as text a or b, linked in chains; on single texts as @text). These names always mean the "
        "texts, even beside a label column of that name. The folds, the holdouts that choose C and the bootstrap "
        "resamples take whole groups, and a train/test split with a group on both sides is refused.",
    )


DEFAULT_BOOTSTRAP = 1000  # --n-bootstrap's default in every command
# What cross-validation gives in place of a split's bootstrap, said after --n-bootstrap's common help.
FOLDS_TAKE_T = "cross-validation takes a t interval over the folds instead"


def bootstrap_option(group: str | None = None, also: str = "", folds: str = FOLDS_TAKE_T) -> Any:
    """``--n-bootstrap``, declared once for ``featx probe`` (and its ``--sweep``), ``featx erase``, ``featx
    neurons``, ``featx fit``, ``featx lens`` and ``featx intervene`` (checked by ``config.check_bootstrap``: 1 to
    ``MAX_BOOTSTRAP``, in every one); ``folds``: what the command's intervals are without a split; ``also``: what
    else it sets in that command, said after the common help."""
    return option(
        DEFAULT_BOOTSTRAP,
        flag="--n-bootstrap",
        group=group,
        help="Bootstrap resamples of the test rows (whole sentences or groups where the probes keep them "
        f"together) behind each 95% interval of a train/test split, 1 to 100000; {folds}."
        + (f" {also}" if also else ""),
    )


DEFAULT_FOLDS, MIN_FOLDS = 5, 2  # --folds: its default and least value in every command
FOLDS_HINT = f"use at least {MIN_FOLDS} folds (default {DEFAULT_FOLDS})"
NO_SPLIT = "when there is no train/test split"  # when most commands cross-validate, said in --folds' help


def folds_option(group: str | None = None, used: str = NO_SPLIT) -> Any:
    """``--folds``, declared once for ``featx probe`` (and its ``--sweep``), ``featx erase``, ``featx neurons``,
    ``featx fit`` and ``featx lens`` (checked by ``check_folds``, alike in every one); ``used``: when (or what
    for) the command cross-validates."""
    return option(
        DEFAULT_FOLDS,
        flag="--folds",
        group=group,
        help=f"Cross-validation folds {used}; at least {MIN_FOLDS}.",
    )


def control_option(group: str | None = None) -> Any:
    """``--no-control``, declared once for ``featx probe`` and ``featx fit``: the control task (permuted labels,
    or a random class per word type) beside each score, on unless skipped."""
    return option(True, flag="--no-control", negate=True, group=group, help="Skip the control task (permuted labels).")


def few_folds(given: str) -> InputError:
    """The one refusal of too few folds: ``given`` (``--folds 1``, ``folds=1``) is too small, with ``FOLDS_HINT``."""
    return InputError(f"{given} is too small", FOLDS_HINT)


_whole_folds = whole("folds", "--folds", minimum=MIN_FOLDS, hint=FOLDS_HINT)


def check_folds(config) -> None:
    """``--folds`` is a whole number of at least ``MIN_FOLDS`` (every command that takes it): a smaller one is
    ``few_folds``; anything else that is not a whole number (``2.5``, ``'x'``, ``True``) is refused as such."""
    value = config.folds
    if isinstance(value, Integral) and not isinstance(value, bool) and value < MIN_FOLDS:
        raise few_folds(spoken_value(config, "folds", value, "--folds"))
    _whole_folds(config)  # numpy's int64 stored as int


def seed_option(group: str | None = None, *seeds: str) -> Any:
    """``--seed``, declared once for ``featx probe`` (and its ``--sweep``), ``featx erase``, ``featx neurons``,
    ``featx fit``, ``featx lens`` and ``featx intervene`` (checked by ``check_seed``: 0 to ``MAX_SEED``, in every
    one); ``seeds``: what else it seeds in the command, after the folds and the bootstrap resamples every one has
    (``featx extract --init-seed``, once ``--seed``, is another option)."""
    *rest, last = ("the folds", "the bootstrap resamples", *seeds)
    return option(0, flag="--seed", group=group, help=f"Seed of {', '.join(rest)} and {last}; 0 to {MAX_SEED}.")


check_seed = whole(
    "seed",
    "--seed",
    minimum=0,
    maximum=MAX_SEED,
    hint=lambda config: f"give {spoken(config, 'seed', '--seed')} a whole number from 0 to {MAX_SEED}",
)


def check_group(config) -> None:
    """``--group`` is a name, not empty, and another column than the label (shared by probe, the sweep, fit,
    erase, neurons and intervene)."""
    text("group", "--group", optional=True, example="name a label column of groups, e.g. group='doc'")(config)
    if config.group is None:
        return
    if not str(config.group).strip():
        raise InputError(
            f"{spoken(config, 'group', '--group')} is empty",
            f"name a label column whose values are the groups, e.g. {spoken_value(config, 'group', 'doc', '--group')}",
        )
    if config.label is not None and config.group == config.label and config.group not in TEXT_GROUPS:
        refuse_group_label(config.group)


def refuse_group_label(group: str) -> None:
    """``--group`` naming the label itself: every group would hold one class."""
    raise InputError(
        f"{spoken_value(None, 'group', group, '--group')} is the label probed: every group would hold one class",
        "group by another column (a document, a speaker, a shared sentence), or leave out --group",
    )


def refuse_word_group(label: object) -> None:
    """``--group`` with a word label: word probes group by sentence already."""
    raise InputError(
        f"--group applies to sentence labels, and '{label}' is a word label: word probes "
        "already fold, hold out and resample by whole sentence",
        "leave out --group",
    )

"""``InterveneConfig``: every option of ``featx intervene``, declared once, checked once when made, frozen.

What needs only the options is checked here (``CONSTRAINTS``); what needs the features file, the bundle or the
model's config (a label, a layer, a class) is checked by ``plan.make_plan``: every bad input is refused with one
line before any model is loaded, let alone run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..checks import one_of, parse_whole, path_like
from ..errors import InputError
from ..options import (
    Check,
    Options,
    Placeholder,
    joined,
    normalise,
    option,
    overwrite_option,
    quiet_option,
    spoken,
    spoken_value,
)
from ..probing import (
    DEFAULT_BOOTSTRAP,
    bootstrap_option,
    check_bootstrap,
    check_group,
    check_seed,
    group_option,
    seed_option,
)

WHAT, EDIT, OUTPUTS, RUN = "Label and layers", "The edit", "The model's outputs", "Run and output"
EDITS = ("erase", "project", "mean", "steer")
METHODS = ("leace", "inlp")
LOSS = ("auto", "yes", "no")
SITES = ("attn_out", "ffn", "pre_ln")  # featx extract --site's activations inside a layer
FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32
MASK_RATE = 0.15  # the share of tokens masked for the masked-token loss (BERT's)
DEFAULT_ALPHAS = "0,1,2,4,8"  # --edit steer's dose-response; another --alphas without --edit steer is refused


def parse_layers(value: Any, flag: str = "--at") -> tuple[int, ...]:
    """``--at 1,3`` (or a whole number, or a list of them) as a tuple of stored layer numbers."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    layers = []
    for item in items:
        spelled = str(item).strip()
        layer = parse_whole(spelled)
        if layer is None:
            given = spoken_value(None, "at", value, flag, shown=repr(value))
            raise InputError(f"{given}: '{spelled}' is not a layer number", f"e.g. {_layers(flag)} (0 the embeddings)")
        layers.append(layer)
    if not layers:
        raise InputError(f"{spoken(None, 'at', flag)} is empty", f"e.g. {_layers(flag)}")
    return tuple(dict.fromkeys(layers))


def _layers(flag: str = "--at") -> str:
    """An example of layers to edit: ``--at 1,3``, ``at='1,3'``."""
    return spoken_value(None, "at", "1,3", flag, shown="1,3")


def _alphas() -> str:
    """An example of steering amounts: ``--alphas 0,1,2,4,8``, ``alphas='0,1,2,4,8'``."""
    return spoken_value(None, "alphas", DEFAULT_ALPHAS, "--alphas", shown=DEFAULT_ALPHAS)


def said(name: str, value: Any) -> str:
    """Option ``name`` of ``featx intervene`` with ``value`` as the caller gives it: ``--at 2`` on the command line,
    ``at=2`` from Python (``options.spoken_value``)."""
    return spoken_value(None, name, value, f"--{name}")


def _edit(config: Any, edit: str) -> str:
    """``--edit steer``, ``edit='steer'``."""
    return spoken_value(config, "edit", edit)


def parse_alphas(value: Any) -> tuple[float, ...]:
    """``--alphas 0,1,2,4,8``: finite numbers (NaN and infinity refused)."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    alphas = []
    for item in items:
        try:
            alpha = float(item)
        except (TypeError, ValueError):
            given = spoken_value(None, "alphas", value, "--alphas", shown=repr(value))
            raise InputError(f"{given}: '{item}' is not a number", f"e.g. {_alphas()}") from None
        if not math.isfinite(alpha):
            raise InputError(f"--alphas: {item} is not a finite number", f"give finite amounts, e.g. {_alphas()}")
        if abs(alpha) > FLOAT32_MAX:  # the shift is added to float32 states: it would be inf there
            raise InputError(
                f"--alphas: {item} is beyond float32's range (±{FLOAT32_MAX:.3g}), the states it is added to",
                f"give smaller amounts, e.g. {_alphas()}",
            )
        alphas.append(alpha)
    if not alphas:
        raise InputError("--alphas is empty", f"e.g. {_alphas()}")
    return tuple(alphas)


def _check_at(config: InterveneConfig) -> None:
    if config.at is None:
        raise InputError("--at is missing: which layers to edit", f"e.g. {_layers()} (0 the embeddings)")
    normalise(config, "at", parse_layers(config.at))


def _check_alphas(config: InterveneConfig) -> None:
    normalise(config, "alphas", parse_alphas(config.alphas))


def _check_edit(config: InterveneConfig) -> None:
    steer, bundle = _edit(config, "steer"), spoken_value(config, "bundle", "B.featx")
    steered_by_answers = config.edit == "steer" and config.answers is not None  # the class-mean direction
    if config.edit == "steer" and config.bundle is None and not steered_by_answers:
        raise InputError(
            f"{steer} reads its dose-response through a bundle's predictions (--bundle, missing) or, on a decoder, "
            "through the answers of --template and --answers",
            f"give {bundle} (featx fit), or --template and --answers",
        )
    if config.edit in ("project", "mean") and config.bundle is None:
        raise InputError(
            f"{_edit(config, config.edit)} edits along a bundle's directions: --bundle is missing",
            f"give {bundle} (featx fit)",
        )
    if config.edit == "steer":
        if config.toward is None:
            raise InputError(
                f"{steer} needs {spoken_value(config, 'toward', Placeholder('CLASS'))}",
                f"name the class to steer toward, e.g. {spoken_value(config, 'toward', 'pos')}",
            )
        if len(config.at) != 1:
            raise InputError(
                f"{steer} edits one layer, not {len(config.at)}",
                f"give one layer, e.g. {spoken_value(config, 'at', 2)}",
            )
        if config.n_bootstrap != DEFAULT_BOOTSTRAP:  # given, not ignored: the dose-response resamples nothing
            resamples = spoken(config, "n_bootstrap")
            raise InputError(
                f"{resamples} sets the probe rows' intervals, and {steer} has none (Student-t and Wilson intervals)",
                f"leave {resamples} out with {steer}",
            )
    elif config.toward is not None:
        raise InputError(f"--toward applies to {steer} only", f"leave --toward out, or use {steer}")
    elif config.alphas != parse_alphas(DEFAULT_ALPHAS):
        raise InputError(f"--alphas applies to {steer} only", f"leave --alphas out, or use {steer}")
    if config.edit != "erase" and config.method != "leace":
        raise InputError(
            f"--method applies to {_edit(config, 'erase')} only: {_edit(config, config.edit)} fits no eraser",
            f"leave --method out, or use {_edit(config, 'erase')}",
        )


def _check_answers(config: InterveneConfig) -> None:
    if config.answers is None and config.template is None:
        return
    if config.edit != "steer":
        steer = _edit(config, "steer")
        raise InputError(
            f"--answers and --template read a steering dose-response through the decoder: they apply to {steer}",
            f"add {joined(steer, spoken_value(config, 'toward', Placeholder('CLASS')))}, or leave them out",
        )
    if config.answers is None or config.template is None:
        raise InputError(
            "--answers and --template go together: the answers are read at the end of the template's prompt",
            "give both, e.g. "
            + joined(
                spoken_value(config, "template", "Review: {text} Sentiment:", shown="'Review: {text} Sentiment:'"),
                spoken_value(config, "answers", " good, bad", shown="' good, bad'"),
            ),
        )
    from ..logit_lens import parse_answers

    parse_answers(config.answers)


def _check_site(config: InterveneConfig) -> None:
    if config.site is None:
        return
    site = spoken_value(config, "site", config.site)
    if config.site not in SITES:
        raise InputError(f"{site}: not a site inside a layer", f"choose from {', '.join(SITES)}")
    if config.edit in ("project", "mean"):
        raise InputError(
            f"{joined(_edit(config, config.edit), site)}: a bundle's directions are of the layers' outputs, not of a "
            "site inside them",
            f"use {_edit(config, 'erase')} (fitted on the stored site) or leave --site out",
        )
    if 0 in config.at:
        raise InputError(
            f"{joined(site, spoken_value(config, 'at', 0))}: a site is inside a layer, and layer 0 is the embeddings' "
            "output",
            "edit at layers from 1",
        )


@dataclass(frozen=True)
class InterveneConfig(Options):
    """Options of ``featx intervene`` (docs/intervene.md); frozen, checked when made."""

    features: str | Path | None = None
    label: str | None = option(
        None, flag="--label", group=WHAT, help="Label column to erase (default: 'label', else the first one)."
    )
    at: Any = option(
        None, flag="--at", listed=True, group=WHAT, help="Layers to edit, e.g. 1,3 (0 the embeddings' output)."
    )
    edit: str = option(
        "erase",
        flag="--edit",
        group=EDIT,
        choices=EDITS,
        help="erase (an eraser of the label fitted on the training rows; without a split, one per fold on its "
        "training rows for the probes), project or mean (the span of --bundle's "
        "directions removed or set to its training mean), or steer (add alpha times the direction toward --toward: "
        "the bundle's, or a class-mean difference measured only on rows it was not computed from).",
    )
    method: str = option("leace", flag="--method", group=EDIT, choices=METHODS, help="--edit erase: LEACE or INLP.")
    site: str | None = option(
        None,
        flag="--site",
        group=EDIT,
        help="Edit this activation inside each --at layer (attn_out, ffn or pre_ln, as featx extract --site stores "
        "it) rather than the layer's output; erase and steer fit on the file's stored site vectors.",
    )
    amnesic: str = option(
        "all",
        flag="--amnesic",
        listed=True,
        group=WHAT,
        help="Other label columns probed the same way: all, a list, or none.",
    )
    pooling: str | None = option(
        None, flag="--pooling", group=WHAT, help="Pooling the eraser is fitted on and the probes read (default: mean)."
    )
    bundle: str | Path | None = option(
        None,
        flag="--bundle",
        group=EDIT,
        kind="path",
        help="A featx fit bundle of this file's model: its "
        "directions for project, mean and steer; its predictions read before and after the edit.",
    )
    alphas: Any = option(
        DEFAULT_ALPHAS, flag="--alphas", listed=True, group=EDIT, help="--edit steer: the amounts of the dose-response."
    )
    toward: str | None = option(None, flag="--toward", group=EDIT, help="--edit steer: the class steered toward.")
    template: str | None = option(
        None,
        flag="--template",
        group=OUTPUTS,
        help="--edit steer on a decoder: the prompt around each row's text (e.g. 'Review: {text} Sentiment:') at "
        "whose end --answers are read; as featx extract reads it (\\n a newline, @FILE read from FILE).",
    )
    answers: str | None = option(
        None,
        flag="--answers",
        group=OUTPUTS,
        help="--edit steer on a decoder: one single-token answer per class of the label (' good, bad', in the "
        "label's class order, or 'pos= good,neg= bad'); the dose-response reads their logit difference.",
    )
    loss: str = option(
        "auto",
        flag="--loss",
        group=OUTPUTS,
        choices=LOSS,
        help="The masked-token (encoders) or next-token (decoders) loss change: auto (where the checkpoint has an "
        "LM head), yes (refuse a checkpoint without one) or no.",
    )
    seed: int = seed_option(RUN, "the random control", "the masked-token loss's masks", "INLP's holdout")
    group: str | None = group_option(RUN)  # the probes' folds and C holdouts, INLP's holdout
    device: str = option("auto", flag="--device", group=RUN, help="Device of the forward passes: auto, cpu, cuda ...")
    output: str | Path | None = option(
        None,
        flag=("-o", "--output"),
        group=RUN,
        kind="path",
        help="Prefix of the table, JSON and figure (default: FEATURES less .features.h5, + .intervene-LABEL or "
        ".steer-CLASS).",
    )
    n_bootstrap: int = bootstrap_option(
        RUN,
        also="The probe rows' intervals (before, after, control); the other rows, and --edit steer's, take Student-t "
        "or Wilson intervals.",
    )
    overwrite: bool = overwrite_option(RUN, "existing results (PREFIX.csv, .json and .png)")
    write: bool = True  # the table's CSV and JSON beside the prefix
    progress: bool = quiet_option(RUN, "No progress bar over each forward pass's rows (as extract -q).")

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("features", "bundle", "output"),
        one_of("edit", "--edit", EDITS),
        one_of("method", "--method", METHODS),
        one_of("loss", "--loss", LOSS),
        _check_at,
        _check_alphas,
        check_bootstrap,  # --n-bootstrap as featx probe's: 1 to 100000 (before _check_edit, which reads it)
        _check_edit,
        _check_answers,
        _check_site,
        check_group,  # --group as probe's: the probes', erasers' and steering directions' folds, the intervals
        check_seed,  # --seed as featx probe's: 0 to MAX_SEED
    )


__all__ = ["EDITS", "MASK_RATE", "SITES", "InterveneConfig", "parse_alphas", "parse_layers", "said"]

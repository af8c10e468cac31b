"""The options of ``featx erase`` (``EraseConfig``): every option declared once, checked when made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ...checks import path_like
from ...errors import InputError
from ...options import Check, Options, option, overwrite_option, quiet_option, spoken_value
from ..config import check_bootstrap, check_jobs
from ..shared_options import (
    bootstrap_option,
    check_folds,
    check_group,
    check_seed,
    folds_option,
    group_option,
    seed_option,
)
from .erasure import METHODS
from .target import positive

WHAT, ERASURE, EVALUATION, OUTPUT = "Label, layers and poolings", "Erasure", "Evaluation", "Output"


def _check_method(config: EraseConfig) -> None:
    if config.method not in METHODS:
        leace, inlp = (spoken_value(config, "method", method) for method in METHODS)
        raise InputError(
            f"{spoken_value(config, 'method', config.method)} is not available: choose from {', '.join(METHODS)}",
            f"{leace} (closed form) or {inlp} (iterative nullspace projection)",
        )


@dataclass(frozen=True)
class EraseConfig(Options):
    """Options of ``featx erase`` (see the README's "Beyond accuracy"); frozen, checked when made."""

    features: str | Path
    label: str | None = option(
        None, flag="--label", group=WHAT, help="Label column to erase (default: 'label', else the first one)."
    )
    layers: str = option("all", flag="--layer", listed=True, group=WHAT, help="Layers: all, 0,3,6, -4: ...")
    poolings: str = option("mean", flag="--pooling", listed=True, group=WHAT, help="Poolings: mean, or a list, or all.")
    method: str = option(
        "leace",
        flag="--method",
        group=ERASURE,
        choices=METHODS,
        help="LEACE (closed form, least-squares optimal) or INLP (iterative nullspace projection).",
    )
    iterations: int = option(50, flag="--iterations", group=ERASURE, help="INLP: the most rounds.")
    amnesic: str | None = option(  # None: none
        "all",
        flag="--amnesic",
        listed=True,
        group=ERASURE,
        help="Other label columns probed before/after the erasure: all, a list, or none.",
    )
    folds: int = folds_option(EVALUATION)
    seed: int = seed_option(EVALUATION, "INLP's holdout", "the control's random directions")
    group: str | None = group_option(EVALUATION)  # also INLP's holdout, of every eraser fitted inside a fold
    output: str | Path | None = option(
        None,
        flag=("-o", "--output"),
        group=OUTPUT,
        kind="path",
        help="Erased features file (default: FEATURES stem + .erased-LABEL-METHOD.h5).",
    )
    overwrite: bool = overwrite_option(OUTPUT)
    n_bootstrap: int = bootstrap_option(EVALUATION)
    jobs: int | None = option(
        None, flag="--jobs", group=EVALUATION, help="Parallel (layer x pooling) jobs (default: one per core)."
    )
    write: bool = True
    progress: bool = quiet_option(OUTPUT)

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("features", "output"),
        _check_method,
        positive("iterations", "--iterations", hint="give --iterations a whole number of rounds, e.g. 50"),
        check_folds,
        check_seed,
        check_bootstrap,
        check_jobs,
        check_group,
    )


__all__ = ["EraseConfig"]

"""The checks of ``featx probe --structural`` on a ``ProbeConfig`` (its constraints table calls
``check_structural``): the mode, the rank, and the refusal of every probe option a structural probe does not use,
so that none is ignored silently."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ...checks import one_of, whole
from ...errors import InputError
from ...options import flag_of, spoken, spoken_value

STRUCTURAL_MODES = ("distance", "depth")
# What a structural probe takes of featx probe's options; any other set to a value of its own is refused.
TAKEN = (
    *("features", "structural", "rank", "layers", "poolings", "folds", "seed", "jobs", "output"),
    *("allow_partial", "n_bootstrap", "write", "progress", "device", "classifiers", "sites"),
)
_mode = one_of("structural", "--structural", STRUCTURAL_MODES, optional=True)
_rank = whole(
    "rank",
    "--rank",
    minimum=1,
    optional=True,
    hint=lambda config: f"give {spoken(config, 'rank')} a positive number, e.g. {spoken_value(config, 'rank', 64)}",
)


def check_structural(config: Any) -> None:
    """``--structural distance|depth`` with ``--rank`` at least 1, and none of the label probes' options."""
    _mode(config)
    _rank(config)
    if config.structural is None:
        if config.rank is not None:
            raise InputError(
                f"{spoken(config, 'rank')} applies to structural probes",
                f"add {spoken_value(config, 'structural', 'distance')} (or depth)",
            )
        return
    if config.label is not None:
        raise InputError(
            f"{spoken_value(config, 'structural', config.structural)} probes the stored dependency trees (the HEAD "
            "column), not a label",
            "leave out --label",
        )
    clash = _not_taken(config)
    if clash:
        raise InputError(
            f"{spoken_value(config, 'structural', config.structural)} trains its own probe of the dependency trees; "
            "it does not take "
            f"{', '.join(clash)}",
            "leave them out (its control: the same probe on a featx extract --random-init file of the treebank)",
        )


def _not_taken(config: Any) -> list[str]:
    """The flags of the options ``config`` sets to other values than their defaults that a structural probe does
    not use (the CPU device, the logreg classifier and the hidden site are its own)."""
    names = []
    for item in fields(config):
        spec = flag_of(item)
        if item.name in TAKEN or spec is None:
            continue
        if getattr(config, item.name) != item.default:
            names.append(spec.name)
    if list(config.classifiers) != ["logreg"]:
        names.append("--classifier")
    if list(config.sites) != ["hidden"]:
        names.append("--site")
    if str(config.device).lower() not in ("auto", "cpu"):
        names.append(f"{spoken_value(config, 'device', config.device)} (structural probes train on the CPU)")
    return names

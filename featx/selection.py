"""Parsing of ``--layer`` and ``--pooling`` selections, shared by extract and probe.

Layer indices count the embedding output as layer 0, so a 6-layer encoder has
layers 0..6. Negative indices count from the last layer (``-1`` is the top).

Grammar of a layer selection (comma-separated items)::

    all              every layer, each on its own
    3  / -1          one layer
    2:5 / -4:        a Python-style slice (end exclusive)
    cat(-4:)         one feature set: the listed layers concatenated
    stack            one probe per layer, combined by a meta classifier (probe only)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .checks import parse_whole
from .errors import InputError
from .options import spoken_value

POOLINGS = ("cls", "mean", "max", "last", "pooler")
WORD_POOLINGS = ("first", "last", "mean")  # which subword(s) of a word make its vector (word inputs)


@dataclass(frozen=True)
class LayerSpec:
    """One feature set to probe: a single layer, a concatenation, or a stack."""

    kind: str  # "single" | "cat" | "stack"
    layers: tuple[int, ...]

    @property
    def name(self) -> str:
        if self.kind == "single":
            return str(self.layers[0])
        joined = ",".join(str(layer) for layer in self.layers)
        return f"{self.kind}({joined})"


_SLICE = re.compile(r"^(-?[0-9]*):(-?[0-9]*)$")  # ASCII digits, as ``_index`` reads them


def _index(token: str) -> int | None:
    """A layer index in ASCII digits after one ``-`` or ``+`` (``parse_whole``); ``int`` would read ``1_0`` as 10
    and another script's digits (``'٣'``) as a layer, from a study file as from the command line."""
    token = token.strip()
    return parse_whole(token[1:]) if token.startswith("+") else parse_whole(token, signed=True)


def _resolve_index(token: str, available: list[int]) -> int:
    index = _index(token)
    if index is None:
        raise InputError(
            f"layer '{token}' is not a number",
            "use 'all', an index like 3 or -1, a slice like -4:, or cat(-4:)",
        )
    n_total = max(available) + 1
    resolved = index + n_total if index < 0 else index
    if resolved not in available:
        raise InputError(
            f"layer {token} is out of range: available layers are {_describe(available)}",
            "layer 0 is the embedding output; negative indices count from the top layer",
        )
    return resolved


def _describe(layers: list[int]) -> str:
    if layers and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}..{layers[-1]}"
    return ", ".join(map(str, layers))


def _expand_item(item: str, available: list[int]) -> list[int]:
    if item == "all":
        return list(available)
    match = _SLICE.match(item)
    if match:
        n_total = max(available) + 1
        start = int(match.group(1)) if match.group(1) else None
        stop = int(match.group(2)) if match.group(2) else None
        chosen = [layer for layer in range(n_total)[start:stop] if layer in available]
        if not chosen:
            raise InputError(f"layer slice '{item}' selects no layer: available layers are {_describe(available)}")
        return chosen
    return [_resolve_index(item, available)]


def _split_top_level(spec: str) -> list[str]:
    """``spec`` split at the commas outside parentheses, items stripped, empty ones dropped."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in spec:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def _feature_sets(spec: str) -> list[tuple[str, str, list[str]]]:
    """``spec`` (spaces removed) as its feature sets, each ``(kind, the item as written, the items it names)``:
    ``single`` items, ``cat(...)``, and ``stack`` / ``stack(...)`` (bare ``stack`` names every layer)."""
    sets = []
    for item in _split_top_level(spec):
        lowered = item.lower()
        if lowered.startswith("cat(") and lowered.endswith(")"):
            sets.append(("cat", item, _split_top_level(item[4:-1])))
        elif lowered == "stack" or (lowered.startswith("stack(") and lowered.endswith(")")):
            sets.append(("stack", item, _split_top_level(item[6:-1]) if lowered != "stack" else ["all"]))
        else:
            sets.append(("single", item, [item]))
    return sets


_COMBINED_ONLY_IN_PROBES = {"cat": "cat(...) is a probe option", "stack": "stack is a probe option"}
EXTRACTION_SINGLE = "extraction stores layers separately"  # why extraction takes single layers only
_NAMES_NO_LAYERS = {
    "cat": ("concatenates no layers", "name them, e.g. cat(-4:) or cat(2,3)"),
    "stack": ("stacks no layers", "name them, e.g. stack(1:) or stack"),
}


def parse_layer_specs(
    spec: str,
    available: list[int],
    allow_combined: bool = True,
    *,
    config: Any = None,
    name: str = "layers",
    single_only: str = EXTRACTION_SINGLE,
) -> list[LayerSpec]:
    """Parse a ``--layer`` value into feature sets over the ``available`` layer indices. ``config`` (a config or
    its class) and ``name`` (its field): the option that gave ``spec``, named as the caller does (``spoken_value``):
    ``--layer 'cat()'`` on the command line, ``layers='cat()'`` from Python (``layer='cat()'`` for ``featx.fit``).
    ``single_only``: why a caller that refuses ``cat()`` and ``stack`` (``allow_combined=False``) takes single
    layers only."""

    def given(value: str) -> str:
        return spoken_value(config, name, value, "--layer", shown=repr(value))

    spec = (spec or "all").replace(" ", "")
    available = sorted(available)
    specs: list[LayerSpec] = []
    for kind, item, parts in _feature_sets(spec):
        if kind != "single" and not allow_combined:
            raise InputError(
                f"{_COMBINED_ONLY_IN_PROBES[kind]}; {single_only}",
                f"give {spoken_value(config, name, 'all', '--layer')}, a list or a slice, without cat or stack",
            )
        # a layer named twice (cat(4,4), cat(-2:,6)) is one block of the feature set, in the order first named
        layers = list(dict.fromkeys(layer for part in parts for layer in _expand_item(part, available)))
        if kind == "single":
            specs.extend(LayerSpec("single", (layer,)) for layer in layers)
        elif not layers:
            what, hint = _NAMES_NO_LAYERS[kind]
            raise InputError(f"{given(item)} {what}", hint)
        else:
            specs.append(LayerSpec(kind, tuple(layers)))
    if not specs:
        raise InputError(f"{given(spec)} selects nothing")
    unique: list[LayerSpec] = []
    for feature_set in specs:
        if feature_set not in unique:
            unique.append(feature_set)
    return unique


def check_layer_spelling(spec: str | None, flag: str, allow_combined: bool = True, *, config: Any = None) -> None:
    """``spec``'s spelling as ``parse_layer_specs`` reads it, before any model or file says which layers there
    are (whether they exist is checked then): an ``InputError`` for an item that is none of ``all``, an index, a
    slice, ``cat(...)`` or ``stack(...)`` of them, naming the option as the caller gave it (``config``'s
    ``layers`` field: ``--layers x`` on the command line, ``layers='x'`` from Python; ``flag`` its flag)."""
    given = spoken_value(config, "layers", spec, flag)
    for kind, _, parts in _feature_sets((spec or "all").replace(" ", "")):
        if kind != "single" and not allow_combined:
            raise InputError(
                f"{given}: {kind}(...) is a probe option; {EXTRACTION_SINGLE}",
                f"give {spoken_value(config, 'layers', 'all', flag)}, a list or a slice, without cat or stack: "
                "featx probe combines the stored layers",
            )
        for part in parts:
            if part != "all" and not _SLICE.match(part) and _index(part) is None:
                raise InputError(
                    f"{given}: layer '{part}' is not a number",
                    "use 'all', an index like 3 or -1, a slice like -4:, or cat(-4:)",
                )


def select_layers(spec: str, n_layers: int) -> list[int]:
    """Layers to extract from a model with ``n_layers`` hidden-state outputs (embeddings included)."""
    specs = parse_layer_specs(spec, list(range(n_layers)), allow_combined=False)
    return sorted({layer for item in specs for layer in item.layers})


# Cross-encoded pairs' own poolings (each text's own tokens' mean), and what to use where a file has none.
SEGMENT_POOLING_NAMES = ("mean_a", "mean_b")
SEGMENT_HINT = (
    "mean_a and mean_b (the mean over each text's own tokens) exist only for sentence pairs encoded as one "
    "sequence (featx extract --text-pair-col COL --pair-mode cross); in --pair-mode separate each text is encoded "
    "alone: probes read the pair feature [u, v, |u-v|, u*v] of a pooling such as mean, and featx probe "
    "--site pair_b probes text b's vectors alone"
)


def parse_poolings(spec: str | None, available: tuple[str, ...] | list[str] = POOLINGS) -> list[str]:
    """Parse ``--pooling`` (``all`` or a comma list) against the available pooling names."""
    if spec is None or spec.strip().lower() == "all":
        return list(available)
    chosen = []
    hint = f"give one of {', '.join(available)}, a comma list of them, or all"  # those of the file, or the model
    for name in (part.strip().lower() for part in spec.split(",")):
        if not name:
            continue
        if name not in available:
            raise InputError(
                f"pooling '{name}' is not available: choose from {', '.join(available)}",
                SEGMENT_HINT if name in SEGMENT_POOLING_NAMES else hint,
            )
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise InputError(f"--pooling '{spec}' selects nothing", hint)
    return chosen

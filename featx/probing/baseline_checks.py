"""The checks of a ``--baseline`` features file (a random-init or another model's extraction of the same corpus)
before anything is probed: the same rows and prompt options, and the layers, poolings, sites and token states the
run probes."""

from __future__ import annotations

from .. import store
from ..errors import InputError
from ..selection import LayerSpec
from ..store import FeatureFile


def check_baseline(
    main: FeatureFile, other: FeatureFile, specs: list[LayerSpec], poolings: list[str], need_tokens: bool
) -> None:
    """Fail unless the ``--baseline`` file holds the same rows (count, corpus, ids), the probed layers, poolings
    and (for attn) token states, and was extracted with the same prompt options."""
    problem = None
    if other.n_rows != main.n_rows:
        problem = f"it has {other.n_rows} rows, {main.path.name} has {main.n_rows}"
    elif (
        main.attrs.get(store.schema.CORPUS_SHA256)
        and other.attrs.get(store.schema.CORPUS_SHA256)
        and main.attrs[store.schema.CORPUS_SHA256] != other.attrs[store.schema.CORPUS_SHA256]
    ):
        problem = "it was extracted from a different corpus file (corpus sha256 differs)"
    elif other.ids != main.ids:
        first = next(i for i, (a, b) in enumerate(zip(main.ids, other.ids, strict=False)) if a != b)
        problem = f"row {first} has id '{other.ids[first]}' there but '{main.ids[first]}' in {main.path.name}"
    if problem:
        raise InputError(
            f"--baseline {other.path} does not hold the same rows: {problem}",
            "extract the baseline from the same corpus with the same options, e.g. featx extract CORPUS --random-init",
        )
    missing_layers = sorted({layer for spec in specs for layer in spec.layers} - set(other.layers))
    if missing_layers:
        raise InputError(
            f"--baseline {other.path} does not store layer(s) {missing_layers}; it stores {other.layers}",
            same_options_hint("layer", sorted(set(main.layers) & set(other.layers))),
        )
    missing = [pooling for pooling in poolings if pooling not in other.poolings]
    if missing:
        raise InputError(
            f"--baseline {other.path} does not store pooling(s) {', '.join(missing)}",
            same_options_hint("pooling", [pooling for pooling in main.poolings if pooling in other.poolings]),
        )
    if need_tokens and not other.has_tokens:
        raise InputError(
            f"--baseline {other.path} has no token-level states for the attn probe",
            "re-extract it with featx extract --tokens",
        )
    _check_same_prompts(main, other)


def _check_same_prompts(main: FeatureFile, other: FeatureFile) -> None:
    """Refuse a ``--baseline`` file extracted with other prompt options: its ``at`` and span poolings read other
    tokens of other prompts, so the comparison would not be the model's weights alone."""
    from ..extraction import prompt_difference

    differ = prompt_difference(main.attrs, other.attrs)
    if differ:
        raise InputError(
            f"--baseline {other.path} was extracted with other prompts than {main.path.name} ({differ} differ)",
            "extract the baseline from the same corpus with the same prompt options, adding --random-init",
        )


def check_baseline_sites(other: FeatureFile, sites: dict[str, tuple[list[LayerSpec], list[str]]]) -> None:
    """Fail when the ``--baseline`` file lacks a probed site, or layers of one."""
    for site, (specs, _) in sites.items():
        if site == "hidden":
            continue
        if site not in other.sites:
            raise InputError(
                f"--baseline {other.path} does not store site '{site}'; it stores {', '.join(other.sites)}",
                "extract the baseline with the same --site options",
            )
        probed = {layer for spec in specs for layer in spec.layers}
        missing = sorted(probed - set(other.site_layers(site)))
        if missing:
            raise InputError(
                f"--baseline {other.path} does not store layer(s) {missing} of site '{site}'",
                same_options_hint("layer", sorted(probed & set(other.site_layers(site)))),
            )


def same_options_hint(option: str, shared: list) -> str:
    """What to do about a ``--baseline`` file that lacks layers or poolings probed: probe only those both files
    store (``shared``, when any), or extract the baseline with the same option."""
    both = f"probe only those both files store, --{option} {','.join(map(str, shared))}, or " if shared else ""
    return f"{both}extract the baseline with the same --{option} option (featx extract CORPUS --random-init)"

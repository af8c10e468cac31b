"""A ``--bundle`` checked against the features file before any forward pass: made from this file's model, at this
width, reading layers and a pooling the in-memory pass makes, and (``--edit steer``) knowing the class steered
toward and reading a layer at or above the edit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ..options import joined, on_command_line
from ..safe_files import loads_json
from ..store import FeatureFile
from .config import InterveneConfig, said
from .provenance import Provenance


def _bundle(config: InterveneConfig) -> str:
    """``--bundle B.featx``, ``bundle='B.featx'``: the bundle as its caller named it."""
    return said("bundle", str(config.bundle))


def load_bundle(config: InterveneConfig):
    """The bundle of ``--bundle`` (``featx.load``, its own checks), or None."""
    if config.bundle is None:
        return None
    from ..deploy import load

    path = Path(str(config.bundle))
    if not (path / "manifest.json").is_file():
        raise InputError(
            f"{said('bundle', str(path))} is not a featx fit bundle (no manifest.json)",
            "give the folder featx fit wrote, e.g. model.featx",
        )
    return load(str(path))


def check_bundle(bundle, config: InterveneConfig, provenance: Provenance, features: FeatureFile) -> None:
    recorded = bundle.extraction.get("model_sha256")
    if recorded != provenance.model_sha256:
        raise InputError(
            f"{_bundle(config)} was fitted on features of {bundle.extraction.get('model')}, not of this "
            f"file's model {provenance.model}",
            "fit a bundle on features of this file's model",
        )
    if bundle.level != "sentence":
        raise InputError(f"{_bundle(config)} is a word-level probe", "give a bundle of a sentence label")
    _check_input_kind(bundle, config)
    _check_width(bundle, config, provenance)
    if bundle.pooling not in features.poolings or any(layer not in features.layers for layer in bundle.layers):
        raise InputError(
            f"{_bundle(config)} reads layers {bundle.layers} ({bundle.pooling} pooling), which "
            f"{features.path.name} does not all store",
            "fit the bundle on this features file, or on one with the same layers and poolings",
        )
    if config.edit == "steer":
        _check_steer(bundle, config)
    elif config.edit in ("project", "mean"):
        outside = [layer for layer in config.at if layer not in bundle.layers]
        if outside:
            raise InputError(
                f"{joined(said('edit', config.edit), said('at', outside[0]))}: bundle {config.bundle} reads layers "
                f"{bundle.layers}, so it "
                f"has no directions at layer {outside[0]}",
                "edit at a layer the bundle reads, or fit a bundle there "
                + ("(featx fit --layer)" if on_command_line() else "(featx.fit(features, layer=...))"),
            )


# What a bundle's features may have been made of that the edited pass never is (the pass re-reads single texts as
# they are: ``provenance.NOT_REPLAYED`` refuses a features file of any of these): the recorded option, and what it is.
OTHER_INPUTS = {
    "pair_mode": "sentence pairs",
    "option_template": "prompts (--template)",
    "option_chat_template": "prompts (--chat-template)",
    "option_pool_at": "prompts (--pool-at)",
    "option_contrast": "contrast answers (--contrast)",
}


def _check_input_kind(bundle, config: InterveneConfig) -> None:
    """A bundle fitted on vectors of another kind of input (sentence pairs, prompts) reads directions the edited
    single texts do not have: its flips and steering would be measured on inputs it was never made for."""
    for option, what in OTHER_INPUTS.items():
        value = bundle.extraction.get(option)
        if value not in (None, False, "", "none"):
            raise InputError(
                f"{_bundle(config)} was fitted on features of {what} ({option.removeprefix('option_')} "
                f"{value!r}); featx intervene edits single texts as they are",
                "fit a bundle on features of single texts of this model (featx fit on this features file)",
            )


def _corpus(fingerprint) -> str | None:
    """The corpus's sha256 a features file's fingerprint records (the fingerprint itself when it cannot be read)."""

    try:
        recorded = loads_json(fingerprint)
    except (TypeError, ValueError):
        return fingerprint
    return recorded.get("corpus_sha256", fingerprint) if isinstance(recorded, dict) else fingerprint


def reads_steered_layer(bundle, config: InterveneConfig) -> bool:
    """``--edit steer`` steers along the bundle's own direction: the bundle reads the edited layer by itself (not a
    stack) and no ``--site`` is edited. Otherwise the direction is a class-mean difference (``steer_rows.py``)."""
    return bundle is not None and config.at[0] in bundle.layers and bundle.spec.kind != "stack" and not config.site


def seen_rows_note(bundle, config: InterveneConfig, features: FeatureFile) -> str | None:
    """A note when a bundle ``featx fit`` made from this file's corpus (the fingerprints' corpus sha256) edits rows
    it was fitted on (not refused: bundles stay as featx fit makes them; a bundle of another corpus cannot be told
    apart from one of overlapping rows, docs/intervene.md):

    - ``--edit project|mean`` when the file has no split: the bundle was fitted on every labelled row, so the probes
      after the edit are scored on rows the removed directions were fitted on (with a split the bundle's rows and
      the probes' test rows are apart);
    - ``--edit steer`` on a file without test rows, whose every (labelled) row is measured: along the bundle's own
      direction (``reads_steered_layer``), its training rows are steered; along a class-mean direction, cross-fitted
      so never computed from the rows it steers, the bundle that reads the dose-response still scores the rows it
      was trained on (with a test split only the test rows are measured)."""
    recorded = _corpus((bundle.info.get("features_file") or {}).get("fingerprint"))
    if recorded is None or recorded != _corpus(features.fingerprint):
        return None
    if config.edit == "steer":
        if len(split_test_rows(features)):
            return None
        fitted = f"{_bundle(config)} was fitted (featx fit) on this file's corpus"
        if not reads_steered_layer(bundle, config):
            return (
                f"{fitted}: the class-mean direction is cross-fitted (never computed from the rows it steers), but "
                "the bundle whose score reads the dose-response was fitted on the rows the dose-response is measured "
                "on (every labelled row of the file), so its scores are of rows it saw; give the file a test split, "
                "or fit the bundle on another corpus"
            )
        return (
            f"{fitted}: its direction toward {config.toward} was fitted on its training rows, which are among the "
            "rows the dose-response is measured on (every row of the file); give the file a test split, or fit the "
            "bundle on another corpus"
        )
    if config.edit not in ("project", "mean") or features.split is not None:
        return None
    return (
        f"{_bundle(config)} was fitted (featx fit) on this file's corpus, and the file has no split: its "
        "directions were fitted on every labelled row, the rows the after and control probes are scored on, so after "
        "may read lower than on rows it never saw (fit the bundle on a file with a train/test split to avoid this)"
    )


def _check_width(bundle, config: InterveneConfig, provenance: Provenance) -> None:
    """The bundle reads vectors of this model's width: one layer's, the layers' side by side (concat), or one
    layer's per part (a stack)."""
    d = provenance.hidden_size
    if bundle.spec.kind == "stack":
        got, wanted = list(bundle.head.widths), [d] * len(bundle.layers)
    else:
        got, wanted = [int(bundle.head.n_features)], [d * (len(bundle.layers) if bundle.spec.kind == "cat" else 1)]
    if got != wanted:
        raise InputError(
            f"{_bundle(config)} reads vectors of width {', '.join(map(str, got))}, not this model's "
            f"{', '.join(map(str, wanted))}",
            "fit a bundle on features of this file's model",
        )


def _check_steer(bundle, config: InterveneConfig) -> None:
    from ..extraction import known_class

    known_class(bundle.classes, str(config.toward), said("toward", config.toward), config.bundle)
    layer = config.at[0]
    if max(bundle.layers) < layer and config.answers is None:  # with --answers, the decoder reads the steering
        raise InputError(
            f"{said('at', layer)}: bundle {config.bundle} reads layers {bundle.layers}, all below the edit, which "
            "cannot change them",
            f"steer at or below layer {max(bundle.layers)}",
        )


def _listed(classes) -> str:
    shown = [str(name) for name in classes]
    return ", ".join(shown[:8]) + (f", ... ({len(shown)} in all)" if len(shown) > 8 else "")


def check_bundle_classes(bundle, config: InterveneConfig, label: str, classes) -> None:
    """``--edit steer --bundle B --toward C``: C, one of the bundle's classes (``_check_steer``), is a class of the
    label whose rows the direction and the folds read; a bundle of another label's classes (a sentiment bundle on a
    question-type file) is refused naming both, rather than as a class without rows."""
    toward = str(config.toward)
    if toward in [str(name) for name in classes]:
        return
    fit = f"featx fit FEATURES --label {label}" if on_command_line() else f"featx.fit(features, label={label!r})"
    raise InputError(
        f"{_bundle(config)} predicts the classes {_listed(bundle.classes)}, not those of '{label}' "
        f"({_listed(classes)}): {said('toward', toward)} is not a class of '{label}'",
        f"fit a bundle on '{label}' ({fit}), or give {said('label', 'COLUMN')}: a column of the bundle's classes",
    )


def split_test_rows(features: FeatureFile) -> np.ndarray:
    """The file rows of its test split (``probing.split_parts``, as probe and fit read it; none without a split)."""
    from ..probing import split_parts

    split = features.split
    return np.zeros(0, np.int64) if split is None else split_parts(split)[1]


__all__ = [
    "check_bundle",
    "check_bundle_classes",
    "load_bundle",
    "reads_steered_layer",
    "seen_rows_note",
    "split_test_rows",
]

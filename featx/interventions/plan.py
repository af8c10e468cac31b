"""``InterventionPlan``: a ``featx intervene`` request resolved against its features file (and bundle) before
any model is loaded: the label and the other columns (their tasks loaded once, here, and carried: rows, class codes
and folds), the pooling, the layers edited and the stored layers read above each, the bundle checked against the
file's model, and the provenance to run the model again. Every bad input is refused here, with one line
(``InputError``), before any forward pass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import InputError
from ..options import on_command_line
from ..store import FeatureFile, open_features
from .config import InterveneConfig, said
from .provenance import Provenance, read_provenance

FOLDS = 5  # the label's folds without a split (featx probe's default): the probes', erasers' and steering's


@dataclass(frozen=True)
class InterventionPlan:
    """What ``intervene`` runs (data only)."""

    config: InterveneConfig
    features: Path
    provenance: Provenance
    label: str
    amnesic: tuple[str, ...]
    pooling: str
    at: tuple[int, ...]
    above: dict  # edit layer -> the stored layers from it up (the probes' layers)
    stored_layers: tuple[int, ...]
    output: Path
    bundle: Any = None  # the loaded ``featx.deploy.Probe``, or None
    notes: tuple[str, ...] = ()
    site_widths: Any = None  # --site: {site: the stored site's width}
    group_meta: Any = None  # --group: ``{"group", "n_groups"}`` of the label's rows, as featx probe's meta records
    row_groups: Any = None  # --group: a group code per row of the file (the drift, bundle and loss rows' units)
    # the probed labels' tasks (``featx.probing.load_task``: rows, class codes, folds), the edited label's first,
    # loaded once, here, where they are checked; none under --edit steer, which probes no label
    tasks: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


def _label(features: FeatureFile, config: InterveneConfig, bundle) -> str:
    label = config.label
    if label is None and bundle is not None and config.edit == "steer":
        label = bundle.label
    if label is None:
        columns = features.label_columns
        if not columns:
            raise InputError(
                f"{features.path} has no label columns", "add a label column to the corpus and extract again"
            )
        return "label" if "label" in columns else columns[0]
    if label not in features.label_columns:
        have = ", ".join(features.label_columns) or "none"
        raise InputError(
            f"{said('label', label)}: {features.path.name} has no such label column (it has: {have})",
            "name one of its label columns",
        )
    return label


def _amnesic(features: FeatureFile, config: InterveneConfig, label: str) -> tuple[dict, list[str]]:
    """The other label columns probed, their tasks loaded (and the notes of those ``all`` leaves out): each must be
    probeable, checked here, before any forward pass. ``all`` skips a column no probe can read (one class, say) with
    a note, as ``featx erase`` does; a column named in the list is refused instead."""
    spelled = str(config.amnesic or "none").strip()
    if spelled.lower() == "none":
        return {}, []
    every = spelled.lower() == "all"
    if every:
        names: tuple[str, ...] = tuple(name for name in features.label_columns if name != label)
    else:
        names = tuple(name.strip() for name in spelled.split(",") if name.strip())
    kept, notes = {}, []
    for name in names:
        if name == label:
            raise InputError(f"{said('amnesic', name)}: that is the edited label", "name the other label columns")
        if name not in features.label_columns:
            raise InputError(
                f"{said('amnesic', name)}: {features.path.name} has no such label column",
                "name its label columns, all, or none",
            )
        task = _probeable(features, name, config)
        if not isinstance(task, str):
            kept[name] = task
        elif every:
            notes.append(f"amnesic probing skips '{name}': {task}")
        else:
            raise InputError(f"{said('amnesic', name)}: {task}", "name other label columns, all, or none")
    return kept, notes


def _probeable(features: FeatureFile, name: str, config: InterveneConfig):
    """The task of label column ``name``, or why no probe can read it (one class, too few rows, rows ``--group``
    cannot fold...)."""
    from ..probing import load_task

    try:
        return load_task(features, name, FOLDS, config.seed, config.group)
    except InputError as err:
        return err.message


def _tasks(features: FeatureFile, config: InterveneConfig, label: str, bundle, notes: list[str]) -> dict:
    """The probed labels' tasks, the edited label's first, each loaded once (the erasers, the probes, the folds'
    passes and the steering folds share them); the edited label refused as ``featx probe`` refuses it (one class;
    with ``--group``: an unknown column, a row without a group, a split with a group on both sides...).
    ``--edit steer`` probes no other label, and needs the label's rows only for the class-mean direction's folds or
    ``--group``: steering along the bundle's own direction loads none."""
    from ..probing import load_task
    from .bundle_checks import reads_steered_layer

    if config.edit == "steer" and config.group is None and reads_steered_layer(bundle, config):
        return {}
    amnesic, skipped = _amnesic(features, config, label) if config.edit != "steer" else ({}, [])
    notes += skipped
    return {label: load_task(features, label, FOLDS, config.seed, config.group, notes), **amnesic}


def _row_groups(features: FeatureFile, config: InterveneConfig, notes: list[str]) -> np.ndarray | None:
    """``--group``: the group of every row of the file, the unit of the drift, bundle and loss rows' intervals and
    tests, which read every row (labelled or not), and of the steering dose-response's; a row without a group (never
    one of the label's, which ``_tasks`` checked) is a group of its own. None without ``--group``."""
    if config.group is None:
        return None
    from ..probing import group_codes

    codes = np.asarray(group_codes(features, config.group), np.int64).copy()
    missing = codes < 0
    codes[missing] = codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))
    alone = f", {int(missing.sum())} row(s) without a group each one of its own" if missing.any() else ""
    what = (
        "the dose-response's intervals"
        if config.edit == "steer"
        else "the drift, bundle and loss rows' intervals and the loss's paired tests"
    )
    notes.append(
        f"{what} take the groups of {said('group', config.group)} as their units ({len(np.unique(codes))} groups "
        f"over the "
        f"file's {len(codes)} rows{alone}): the means' standard errors cluster-robust (t with groups - 1 degrees of "
        "freedom), the shares' Wilson intervals at the groups' effective sample size"
    )
    return codes


def _pooling(features: FeatureFile, config: InterveneConfig) -> str:
    pooling = config.pooling or ("mean" if "mean" in features.poolings else features.poolings[0])
    if pooling not in features.poolings:
        raise InputError(
            f"{said('pooling', pooling)}: {features.path.name} stores {', '.join(features.poolings)}",
            "choose a stored pooling",
        )
    return pooling


def _check_layers(features: FeatureFile, config: InterveneConfig, provenance: Provenance) -> None:
    for layer in config.at:
        if layer >= provenance.n_layers:
            raise InputError(
                f"{said('at', layer)}: layer {layer} is outside {provenance.model}, whose layers are "
                f"0..{provenance.n_layers - 1}",
                f"edit a layer from 0 (the embeddings) to {provenance.n_layers - 1}",
            )
        if layer not in features.layers:
            raise InputError(
                f"{said('at', layer)}: {features.path.name} does not store layer {layer} (it stores {features.layers})",
                "edit a stored layer: the eraser, the probes and the steering direction are fitted on its vectors",
            )


def _extract_site(site: str) -> str:
    """``--site ffn`` (featx extract's) on the command line, ``featx.extract(..., sites='ffn')`` from Python."""
    return said("site", site) if on_command_line() else f"featx.extract(..., sites={site!r})"


def _site_widths(features: FeatureFile, config: InterveneConfig) -> dict:
    """``{site: width}`` of ``--site``, stored at every ``--at`` layer (what the eraser and directions fit on)."""
    site = config.site
    if site is None:
        return {}
    stored = features.site_layers(site) if site in features.sites else []
    missing = [layer for layer in config.at if layer not in stored]
    if missing:
        raise InputError(
            f"{said('site', site)}: {features.path.name} does not store site {site} at layer {missing[0]} "
            f"(it stores it at {stored or 'no layer'})",
            f"extract the file with {_extract_site(site)} at the layers you edit",
        )
    return {site: int(features.features(features.site_poolings(site)[0], stored[0], site=site).shape[1])}


def _output(features: Path, config: InterveneConfig, label: str) -> Path:
    if config.output is not None:
        return Path(config.output)
    name = features.name
    stem = name[: -len(".features.h5")] if name.endswith(".features.h5") else Path(name).stem
    tail = f"steer-{config.toward}" if config.edit == "steer" else f"intervene-{label}"
    return features.with_name(f"{stem}.{tail}")


def make_plan(config: InterveneConfig) -> InterventionPlan:
    """The plan of ``config``: every check that needs the file, the bundle or the model's config."""
    from .bundle_checks import check_bundle, check_bundle_classes, load_bundle, seen_rows_note

    path = Path(str(config.features))
    bundle = load_bundle(config)
    with open_features(path) as features:
        provenance = read_provenance(features)
        _check_layers(features, config, provenance)
        label = _label(features, config, bundle)
        notes: list[str] = []
        tasks = _tasks(features, config, label, bundle, notes)
        row_groups = _row_groups(features, config, notes)
        if bundle is not None:
            check_bundle(bundle, config, provenance, features)
            if config.edit == "steer" and label in tasks:  # the label's rows read: its classes are the bundle's
                check_bundle_classes(bundle, config, label, tasks[label].class_names)
            seen = seen_rows_note(bundle, config, features)
            notes += [seen] if seen else []
        plan = InterventionPlan(
            config=config,
            features=path,
            provenance=provenance,
            label=label,
            amnesic=tuple(name for name in tasks if name != label),
            pooling=_pooling(features, config),
            at=tuple(config.at),
            above={layer: tuple(stored for stored in features.layers if stored >= layer) for layer in config.at},
            stored_layers=tuple(features.layers),
            output=_output(path, config, label),
            bundle=bundle,
            site_widths=_site_widths(features, config),
            notes=tuple(notes),
            group_meta=tasks[label].group_meta() if tasks else {},
            row_groups=row_groups,
            tasks=MappingProxyType(tasks),
        )
    return plan


__all__ = ["FOLDS", "InterventionPlan", "make_plan"]

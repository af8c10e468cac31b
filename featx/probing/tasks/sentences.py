"""What the sentence-level tasks (classification and regression) read from the features file besides the
label: the layer specs, poolings and sites probed, the rows' identities for the predictions file, the split,
the file's model and corpus records, and the checks of a ``--baseline`` file of the same rows; and what the two
tasks share of ``ProbeTask`` (``SentenceTask``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ... import store
from ...errors import InputError
from ...options import on_command_line, spoken_value
from ...selection import LayerSpec, parse_layer_specs, parse_poolings
from ...store import FeatureFile
from ..baseline_checks import check_baseline, check_baseline_sites
from ..config import ProbeConfig
from ..inputs import FeatureJob, site_plan
from ..meta import file_meta
from ..plan import ProbePlan
from ..prescan import require_finite_jobs
from .tested_rows import text_keys

SitePlan = dict[str, tuple[list[LayerSpec], list[str]]]  # per site: its layer specs and poolings


@dataclass(frozen=True)
class SentenceLayout:
    """The probed part of a features file for the labelled (``kept``) rows of a sentence-level run."""

    kept: np.ndarray  # the labelled rows probed
    split: np.ndarray | None  # the split value of every stored row (None: no split column)
    specs: list[LayerSpec]  # the hidden states' layer specs
    poolings: list[str]
    sites: SitePlan
    layers: list[int]  # the stored hidden layers
    row_info: pd.DataFrame  # row, id, n_tokens, truncated (and split; group with --group) of the kept rows
    n_rows: int
    file: dict  # the model and corpus records
    baseline_model: str | None = None  # the --baseline file's model ("(random init)" marked)
    text_keys: list[bytes] = field(default_factory=list)  # each kept row's text key (tested_rows.py)

    @property
    def kept_split(self) -> np.ndarray | None:
        return self.split[self.kept] if self.split is not None else None


def row_info(features: FeatureFile, kept: np.ndarray, split: np.ndarray | None) -> pd.DataFrame:
    """Who the kept rows are, for the per-row predictions file."""
    info = pd.DataFrame(
        {
            "row": kept,
            "id": np.asarray(features.ids, dtype=object)[kept],
            "n_tokens": features.n_tokens[kept],
            "truncated": features.truncated[kept],
        }
    )
    if split is not None:
        info["split"] = np.asarray(split, dtype=object)[kept]
    return info


def read_layout(
    features: FeatureFile, config: ProbeConfig, kept: np.ndarray, notes: list[str], need_tokens: bool
) -> SentenceLayout:
    """The layout of ``features`` that ``config`` probes; the ``--baseline`` file checked against it."""
    split = features.split
    specs = parse_layer_specs(config.layers, features.layers, config=config)
    info = row_info(features, kept, split)
    poolings = parse_poolings(config.poolings, features.poolings)
    sites = site_plan(features, config, specs, poolings, notes)
    if need_tokens and not features.has_tokens:
        raise InputError(
            f"the attn probe needs token-level states, and {features.path} has none",
            f"re-extract with {'featx extract --tokens' if on_command_line() else 'featx.extract(..., tokens=True)'}, "
            f"or choose {spoken_value(config, 'classifiers', 'logreg,svm,mlp')}",
        )
    baseline_model = None
    if config.baseline is not None:
        with FeatureFile(config.baseline, allow_partial=config.allow_partial) as other:
            check_baseline(features, other, specs, poolings, need_tokens)
            check_baseline_sites(other, sites)
            baseline_model = other.attrs.get(store.schema.MODEL)
            if other.attrs.get(store.schema.RANDOM_INIT):
                baseline_model = f"{baseline_model} (random init)"
    return SentenceLayout(
        kept,
        split,
        specs,
        poolings,
        sites,
        list(features.layers),
        info,
        features.n_rows,
        file_meta(features.attrs),
        baseline_model,
        text_keys(features.texts, features.pair_texts, kept),
    )


def curve_sites(features: FeatureFile, config: ProbeConfig, sites: SitePlan) -> SitePlan:
    """Per probed site: the layer specs of its learning curves (``--curve-layers``, else the probed
    single and concatenated specs) and its poolings."""
    plan = {}
    for site, (site_specs, site_poolings) in sites.items():
        chosen = site_specs
        if config.curve_layers:
            layers = features.layers if site == "hidden" else features.site_layers(site)
            try:
                chosen = parse_layer_specs(config.curve_layers, layers, config=config, name="curve_layers")
            except InputError as err:
                raise InputError(f"site '{site}' (layers {layers}): {err.message}", err.hint) from None
        plan[site] = ([spec for spec in chosen if spec.kind != "stack"], site_poolings)
    return plan


def sources(config: ProbeConfig, path: object) -> list[tuple[str, str]]:
    """The features files probed side by side: ``main``, and ``baseline`` with ``--baseline``."""
    return [("main", str(path))] + ([("baseline", str(config.baseline))] if config.baseline is not None else [])


def control_targets(y: np.ndarray, config: ProbeConfig) -> np.ndarray | None:
    """The control task's targets: the labels permuted with a seeded draw (None without ``--control``)."""
    return permuted_control(y, int(config.seed)) if config.control else None


def permuted_control(y: np.ndarray, seed: int) -> np.ndarray:
    """A sentence label's (or a number's) control task: ``y`` permuted over the rows with the probes' seeded draw
    (``featx probe``'s, and ``featx fit``'s beside its chosen probe)."""
    return np.random.default_rng(seed + 7919).permutation(y)


class SentenceTask:
    """What the sentence-level tasks (``ClassificationProbe``, ``RegressionProbe``) share of ``ProbeTask``: the
    check of every matrix their jobs and learning curves will read, and the label naming their results files."""

    plan: ProbePlan
    inputs: Any  # the jobs' inputs (ClassificationInputs, RegressionInputs): their ``label``

    def _curve_jobs(self) -> list[FeatureJob]:
        """The learning curves' jobs (none without ``--train-sizes``)."""
        raise NotImplementedError

    def check_reads(self, jobs: list[tuple[Any, ...]]) -> None:
        require_finite_jobs([*jobs, *self._curve_jobs()], self.plan.allow_partial)

    def results_label(self) -> str:
        return str(self.inputs.label)

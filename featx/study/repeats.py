"""A model or a corpus given twice in one study file is refused (``check_repeats``), before any work: its
extractions and probes would be run twice, under two names, into the same table.

Two ``[[models]]`` entries are the same model when every extraction of theirs is the very same request: the
same model (a folder by its resolved path), the same weights (``random_init`` and seed) and the same effective
options (``[extract]``, the corpus's, then the model's own; an option given as ``[extract]`` already gives it is
no difference). Two ``[[corpora]]`` entries are the same corpus when every model extracts the same file (by its
resolved path) with the same effective options, and its probes keep the same groups: their labels may differ
(both are extracted twice; give the labels in one entry), and the same file grouped otherwise is another set of
probes. An option that changes the features (``max_length``, ``dtype``, ``layers``, ``pooling``...) makes
another model or corpus.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, TypeAlias

from ..extraction import DEFAULT_MODEL
from .source import where

# The config's types are ``config.py``'s (``StudyConfig``, ``ModelSpec``, ``CorpusSpec``), which calls this module
# while it checks itself: named as Any here, so that neither module imports the other both ways.
StudyConfig: TypeAlias = Any
ModelSpec: TypeAlias = Any
CorpusSpec: TypeAlias = Any

# Fields of an extraction that do not change what it writes (nor the study's cell): where it writes, and how often
# it commits.
NOT_THE_FEATURES = ("output", "commit_seconds", "commit_rows", "progress")
HINT = (
    "remove one of them; if the difference is intended, give this entry an option that changes its features "
    "(such as max_length, dtype, layers or pooling)"
)


def _request(config: StudyConfig, model: ModelSpec, corpus: CorpusSpec) -> tuple[Any, ...]:
    """What an extraction of ``corpus`` by ``model`` writes: its options but the output, its model and corpus by
    their resolved paths."""
    extract = config.extract_config(model, corpus)
    fields = {item.name: getattr(extract, item.name) for item in dataclasses.fields(extract)}
    fields = {name: value for name, value in fields.items() if name not in NOT_THE_FEATURES}
    if fields["model"] != DEFAULT_MODEL and Path(fields["model"]).is_dir():
        fields["model"] = str(Path(fields["model"]).resolve())
    fields["corpus"] = str(Path(fields["corpus"]).resolve())
    return tuple(sorted((name, repr(value)) for name, value in fields.items()))


def _model_label(model: ModelSpec, config: StudyConfig) -> str:
    entries = [other for other in config.models if other.entry == model.entry]
    return f"[[models]] #{model.entry + 1}" + (f" (seed {model.seed})" if len(entries) > 1 else "")


def check_repeats(config: StudyConfig) -> None:
    """No two models of ``config`` extract the same, and no two corpora (see the module's docstring)."""
    seen: dict[tuple[Any, ...], ModelSpec] = {}
    for model in config.models:
        key = tuple(_request(config, model, corpus) for corpus in config.corpora)
        first = seen.setdefault(key, model)
        if first is not model:
            what = "the packaged default model" if model.model == DEFAULT_MODEL else repr(model.model)
            message = f"{_model_label(model, config)} repeats {_model_label(first, config)}: {what}, the same options"
            raise config.source.error(("models", model.entry, "name"), message, HINT)
    corpora: dict[tuple[Any, ...], CorpusSpec] = {}
    for corpus in config.corpora:
        extractions: tuple[Any, ...] = (corpus.group, *(_request(config, model, corpus) for model in config.models))
        found = corpora.setdefault(extractions, corpus)
        if found is not corpus:
            ours, theirs = where(("corpora", corpus.entry)), where(("corpora", found.entry))
            same = f"{ours} repeats {theirs}: {corpus.path}, the same options"
            labels = "; to probe more of its labels, list them in one entry" if found.labels != corpus.labels else ""
            raise config.source.error(("corpora", corpus.entry, "name"), same, HINT + labels)

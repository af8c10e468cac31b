"""A model or a corpus given twice in one study file is refused (``check_repeats``), before any work: its
extractions and probes would be run twice, under two names, into the same table.

Two ``[[models]]`` entries are the same model when every extraction of theirs is the very same request: the
same model as it will be loaded (a folder by its real path, links followed; ``default`` is the packaged model's
folder, so its path given as a folder is the same model), the same weights (``random_init`` and seed) and the
same effective options (``[extract]``, the corpus's, then the model's own; an option given as ``[extract]``
already gives it is no difference). A hub id is its id (featx loads it from the hub's cache, another folder), but
the packaged default model's own (``DEFAULT_HUB_IDS``: the package is a copy of that hub model) is the packaged
model: decided offline from the id alone, with nothing read. Two
``[[corpora]]`` entries are the same corpus when every model extracts the same bytes with the same effective
options, and its probes keep the same groups: the same file (its real path, links followed, or a hard link to
it) or a file of the same format (its suffix) holding the same bytes (their sha256, as the plan fingerprints a
corpus; read only for two files of the same size and otherwise the same request, through ``file_sha256``, which
``make_plan`` runs inside ``remembered_digests``: the plan takes the same digests). Their labels may differ (both
are extracted twice; give the labels in one entry), and the same file grouped otherwise is another set of
probes. An option that changes the features (``max_length``, ``dtype``, ``layers``, ``pooling``...) makes
another model or corpus.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, TypeAlias

from ..extraction import DEFAULT_HUB_IDS, DEFAULT_MODEL, file_sha256, local_model_folder
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


def _request(config: StudyConfig, model: ModelSpec, corpus: CorpusSpec, with_corpus: bool = True) -> tuple[Any, ...]:
    """What an extraction of ``corpus`` by ``model`` writes: its options but the output, its model by the folder
    it loads (``local_model_folder``: the packaged default's, a local folder's real path; a hub id as given), its
    corpus by its resolved path (none: ``with_corpus`` False, the corpora compared by ``_same_bytes``)."""
    extract = config.extract_config(model, corpus)
    fields = {item.name: getattr(extract, item.name) for item in dataclasses.fields(extract)}
    fields = {name: value for name, value in fields.items() if name not in NOT_THE_FEATURES}
    fields["model"] = _loaded(fields["model"])
    fields["corpus"] = str(Path(fields["corpus"]).resolve()) if with_corpus else None
    return tuple(sorted((name, repr(value)) for name, value in fields.items()))


def _loaded(model: str) -> str:
    """The model an extraction loads, as the repeats check compares it: a local folder by its real path (``default``
    the packaged model's), the packaged model's own hub id as the packaged model, another hub id as given."""
    model = DEFAULT_MODEL if model in DEFAULT_HUB_IDS else model
    folder = local_model_folder(model)
    return str(folder) if folder is not None else model


def _format(path: Path) -> str:
    """The suffix a corpus's format is read from (``.csv``; ``.csv.gz`` for a gzipped one)."""
    suffix = path.suffix.lower()
    return Path(path.stem).suffix.lower() + suffix if suffix == ".gz" else suffix


def _same_bytes(first: Path, second: Path) -> str | None:
    """How two corpus paths (resolved) read the same bytes: "" the same path, "the same file" (a hard link),
    "the same bytes" (a copy of the same format); None when they do not (or a file is missing)."""
    if first == second:
        return ""
    try:
        if os.path.samefile(first, second):
            return "the same file"
        if _format(first) != _format(second) or first.stat().st_size != second.stat().st_size:
            return None
        return "the same bytes" if file_sha256(first) == file_sha256(second) else None
    except OSError:
        return None


def _shown(config: StudyConfig, corpus: CorpusSpec) -> str:
    """A corpus's path as the study gives it, and the file it leads to where a link (the file's or a folder's) leads
    elsewhere: ``corpora/a.csv (a link to /data/a.csv)``."""
    given = corpus.given or str(corpus.path)
    return given if _plain(config, corpus) == str(corpus.path) else f"{given} (a link to {corpus.path})"


def _plain(config: StudyConfig, corpus: CorpusSpec) -> str:
    """The absolute path a corpus is given as, links not followed."""
    return os.path.normpath(config.source.resolve(corpus.given)) if corpus.given else str(corpus.path)


def _model_label(model: ModelSpec, config: StudyConfig) -> str:
    entries = [other for other in config.models if other.entry == model.entry]
    return f"[[models]] #{model.entry + 1}" + (f" (seed {model.seed})" if len(entries) > 1 else "")


def _model_words(model: ModelSpec) -> str:
    return "the packaged default model" if model.model == DEFAULT_MODEL else repr(model.model)


def _same_model(model: str, first: str) -> str:
    """Why two spellings are one model: the packaged model and its hub id, or one folder (named unless given)."""
    if {model, first} & set(DEFAULT_HUB_IDS):
        return f"are one model: the packaged default is a copy of the hub's {DEFAULT_HUB_IDS[0]}"
    folder = str(local_model_folder(model))
    return "load the same folder" + (f" {folder}" if folder not in (model, first) else "")


def _check_models(config: StudyConfig) -> None:
    seen: dict[tuple[Any, ...], ModelSpec] = {}
    for model in config.models:
        key = tuple(_request(config, model, corpus) for corpus in config.corpora)
        first = seen.setdefault(key, model)
        if first is not model:
            what = _model_words(model)
            if model.model != first.model:  # spelled two ways
                what += f" and {_model_words(first)} {_same_model(model.model, first.model)}"
            message = f"{_model_label(model, config)} repeats {_model_label(first, config)}: {what}, the same options"
            raise config.source.error(("models", model.entry, "name"), message, HINT)


def _check_corpora(config: StudyConfig) -> None:
    earlier: list[tuple[tuple[Any, ...], CorpusSpec]] = []
    for corpus in config.corpora:
        key = (corpus.group, *(_request(config, model, corpus, with_corpus=False) for model in config.models))
        for found in (found for other, found in earlier if other == key):
            how = _same_bytes(found.path, corpus.path)
            if how is None:
                continue
            ours, theirs = where(("corpora", corpus.entry)), where(("corpora", found.entry))
            if ours == theirs:  # two task files of one SentEval folder: by their names
                ours, theirs = f"{ours} '{corpus.name}'", f"'{found.name}'"
            what, named = _shown(config, corpus), _plain(config, corpus) == _plain(config, found)
            what += f" and {_shown(config, found)} are {how or 'the same file'}" if how or not named else ""
            labels = "; to probe more of its labels, list them in one entry" if found.labels != corpus.labels else ""
            raise config.source.error(
                ("corpora", corpus.entry, "name"), f"{ours} repeats {theirs}: {what}, the same options", HINT + labels
            )
        earlier.append((key, corpus))


def check_repeats(config: StudyConfig) -> None:
    """No two models of ``config`` extract the same, and no two corpora (see the module's docstring)."""
    _check_models(config)
    _check_corpora(config)

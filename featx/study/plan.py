"""``StudyPlan``: what a ``StudyConfig`` resolves to, data only: one extraction per (model, corpus), one probe per
(model, corpus, label), and the one probe per (corpus, label) that computes its lexical baseline.

Outputs of a cell live under ``OUTPUT/<model>/<corpus>/``: ``features.h5`` and, per label,
``<label>.probe.csv`` / ``.probe.json`` / ``.predictions.csv``. The lexical baseline (TF-IDF of the texts,
``featx probe``'s own) depends on the corpus, the label and the probe options, never on the model: the first
model's probe of each (corpus, label) computes it, the others skip it (``--no-lexical``) and the results table
takes it from there.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cells import EXTRACT, PROBE, Task, fingerprint
from .config import CorpusSpec, ModelSpec, StudyConfig, study_config

EXTRACT_FUNCTION = "featx.study.tasks:extract_cell"
PROBE_FUNCTION = "featx.study.tasks:probe_cell"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SHA256 = re.compile(r"[0-9a-f]{64}")


MAX_STEM = 100  # characters of a label's file stem: a column name can be longer than a file name may be


def label_stem(label: str) -> str:
    """A label's file stem: its name where it is a safe file name of at most ``MAX_STEM`` characters, else a safe
    spelling (its start, for a longer one) and a short digest."""
    safe = _UNSAFE.sub("_", label)
    if safe == label and label not in (".", "..") and len(label) <= MAX_STEM:
        return label
    import hashlib

    return f"{safe[: MAX_STEM - 9]}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_jsonable(item) for item in value]
    return value


def config_args(config: Any) -> dict[str, Any]:
    """A frozen config's fields as JSON-able keywords (what a worker rebuilds the config from)."""
    return {item.name: _jsonable(getattr(config, item.name)) for item in dataclasses.fields(config)}


@dataclass(frozen=True)
class ProbeCell:
    """One (model, corpus, label) probe: its results prefix and whether it computes the lexical baseline."""

    model: ModelSpec
    corpus: CorpusSpec
    label: str
    prefix: Path  # OUTPUT/<model>/<corpus>/<label>.probe -> .csv, .json
    lexical: bool
    task: Task

    @property
    def results(self) -> Path:
        return Path(f"{self.prefix}.csv")


@dataclass(frozen=True)
class ExtractionCell:
    """One (model, corpus) extraction and its features file."""

    model: ModelSpec
    corpus: CorpusSpec
    features: Path
    task: Task


@dataclass(frozen=True)
class StudyPlan:
    """A study decided: its config, extraction cells, probe cells, and which model's probe computes each
    (corpus, label)'s lexical baseline."""

    config: StudyConfig
    extractions: tuple[ExtractionCell, ...]
    probes: tuple[ProbeCell, ...]
    lexical: tuple[tuple[str, str, str], ...]  # (corpus, label, model whose probe computes it)

    @property
    def tasks(self) -> tuple[Task, ...]:
        return tuple(cell.task for cell in self.extractions) + tuple(cell.task for cell in self.probes)

    def extraction_of(self, probe: ProbeCell) -> ExtractionCell:
        return next(cell for cell in self.extractions if cell.task.key == probe.task.after[0])


def _read(path: str, contents: dict[str, str]) -> str:
    """What an extraction reads from ``path``, by content: a file's sha256; a local model folder's files
    by name, size and modification time (as ``featx extract``'s own up-to-date check has them); "" for a hub
    id not on this machine. Each path once per plan (``contents``)."""
    if path not in contents:
        from ..extraction import file_sha256, local_model_folder, model_folder_files

        if Path(path).is_file():
            contents[path] = file_sha256(Path(path))
        else:
            folder = local_model_folder(path)
            files = [] if folder is None else model_folder_files(folder)
            contents[path] = fingerprint("model-files", {"files": files})
    return contents[path]


def recorded_corpus(features: Path) -> str:
    """A gone corpus file's sha256 as the cell's finished features file records it (what its extraction read),
    so that the cell stays done while nothing else changed; "missing" when no such file records one."""
    from ..errors import FeatxError
    from ..store import open_features, schema

    try:
        with open_features(features) as opened:
            recorded = opened.attrs.get(schema.CORPUS_SHA256)
    except (FeatxError, OSError, ValueError):
        return "missing"
    return str(recorded) if recorded else "missing"


def gone_corpus(output: Path, key: str, features: Path) -> str:
    """What extraction ``key`` read from its corpus file, gone since: the sha256 its finished features file
    records (``recorded_corpus``: a done cell stays done), else the one its failed run's state recorded (a failed
    cell stays failed, with its error); "missing" when neither says (the cell is pending and needs the file)."""
    from .records import FAILED, read_state

    recorded = recorded_corpus(features)
    if recorded != "missing":
        return recorded
    state = read_state(output, key) or {}
    digest = state.get("corpus_sha256")
    if state.get("status") == FAILED and isinstance(digest, str) and _SHA256.fullmatch(digest):
        return digest
    return "missing"


def _extraction(config: StudyConfig, model: ModelSpec, corpus: CorpusSpec, contents: dict[str, str]) -> ExtractionCell:
    """One extraction cell; its fingerprint holds its options and what it reads by content (the corpus's bytes,
    read once per plan, the repeats check's reads included: ``make_plan``; the model folder's files), so that an edited
    corpus or a changed model is pending, with every probe of it. A corpus file gone counts as the bytes the cell's
    features file, or its failed run, recorded (``gone_corpus``)."""
    extract = config.extract_config(model, corpus)
    config.check_stored(model, corpus, extract)  # every probe fits what this extraction stores
    args = {"options": config_args(extract)}
    features = Path(str(extract.output))
    key = f"{EXTRACT}/{model.name}/{corpus.name}"
    read = _read(str(corpus.path), contents) if corpus.path.is_file() else gone_corpus(config.output, key, features)
    inputs = (read, _read(str(extract.model), contents))
    task = Task(
        key,
        EXTRACT,
        EXTRACT_FUNCTION,
        args,
        str(config.output),
        (str(features),),
        (),
        fingerprint(EXTRACT_FUNCTION, args, *inputs),
        read if read != "missing" else "",
    )
    return ExtractionCell(model, corpus, features, task)


def _probe(config: StudyConfig, extraction: ExtractionCell, label: str, lexical: bool) -> ProbeCell:
    model, corpus = extraction.model, extraction.corpus
    prefix = config.cell_folder(model, corpus) / f"{label_stem(label)}.probe"
    probe = config.probe_config(extraction.features, label, lexical, prefix, corpus.group)
    args = {"options": config_args(probe)}
    outputs = (f"{prefix}.csv", f"{prefix}.json")
    task = Task(
        f"{PROBE}/{model.name}/{corpus.name}/{label}",
        PROBE,
        PROBE_FUNCTION,
        args,
        str(config.output),
        outputs,
        (extraction.task.key,),
        fingerprint(PROBE_FUNCTION, args, extraction.task.fingerprint),
    )
    return ProbeCell(model, corpus, label, prefix, lexical, task)


def make_plan(study: Any, **overrides: Any) -> StudyPlan:
    """The plan of a study (a path, a dict or a ``StudyConfig``): every extraction, then every probe, in the
    file's order (model by model, corpus by corpus, label by label). Each corpus file is hashed once
    (``remembered_digests``): the repeats check of a config made here and the extractions' fingerprints."""
    from ..extraction import remembered_digests

    with remembered_digests():
        config = study_config(study, **overrides)
        contents: dict[str, str] = {}
        extractions = tuple(
            _extraction(config, model, corpus, contents) for model in config.models for corpus in config.corpora
        )
    lexical: dict[tuple[str, str], str] = {}
    probes = []
    for extraction in extractions:
        for label in extraction.corpus.labels:
            owner = lexical.setdefault((extraction.corpus.name, label), extraction.model.name)
            probes.append(_probe(config, extraction, label, owner == extraction.model.name))
    triples = tuple((corpus, label, model) for (corpus, label), model in lexical.items())
    return StudyPlan(config, extractions, tuple(probes), triples)

"""``StudyConfig``: a study file (or dict) read once, checked whole at construction, frozen.

Layout of the file (``docs/study.md``)::

    [study]      output, metric, jobs, engine, address
    [[models]]   name, model (a Hugging Face id or folder; default: the packaged MiniLM), random_init, seeds,
                 and any extract option of that model's extractions
    [[corpora]]  name, path (or senteval: a folder of SentEval task files, one corpus each), labels, group (a
                 column of groups its probes keep whole, or @text, @text_pair, @texts), and any extract option
    [extract]    any ``featx extract`` option shared by every extraction, by field or flag name
    [probe]      any ``featx probe`` option shared by every probe, by field or flag name

A model entry with ``seeds = [0, 1, 2]`` is one model per seed, named ``NAME-s0``, ``NAME-s1``...: with
``random_init = true``, several random-weights controls. Every extraction's ``ExtractConfig`` and the probes'
``ProbeConfig`` are built here, so an option either command refuses stops the study before any work.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, ModelError
from ..extraction import DEFAULT_MODEL, ExtractConfig
from ..io import corpus_name
from ..options import MAX_SEED, spoken, spoken_value
from ..probing import ProbeConfig
from .engines import ENGINES
from .groups import entry_group
from .options import extract_fields, probe_fields
from .ray_engine import check_address
from .repeats import check_repeats
from .source import Place, Source, check_keys, check_output, dict_source, read_study
from .source import where as _where

TABLES = ("study", "models", "corpora", "extract", "probe")
STUDY_KEYS = ("output", "metric", "jobs", "engine", "address")
MODEL_KEYS = ("name", "model", "random_init", "seeds")
CORPUS_KEYS = ("name", "path", "senteval", "labels", "group")
MAX_SEEDS = 100  # per [[models]] entry: each seed is a model, extracted on every corpus (planning: ~4 ms a seed)
MAX_MODELS = 100  # [[models]] entries: 4 MiB of study file holds ~100,000, which took minutes to plan
NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._\-]{0,99}\Z")  # at most 100 characters: a file name has 255 bytes
FEATURES_NAME = "features.h5"  # a cell's features file: OUTPUT/<model>/<corpus>/features.h5
Options = tuple[tuple[str, Any], ...]  # config fields as frozen pairs


@dataclass(frozen=True)
class ModelSpec:
    """One model of a study: its folder name, the model (id or folder), and its random-weights seed (a control
    model) or None (its own weights); ``options``: its extract options."""

    name: str
    model: str
    random_init: bool = False
    seed: int | None = None
    options: Options = ()
    entry: int = 0  # its [[models]] table (several seeds share one)


@dataclass(frozen=True)
class CorpusSpec:
    """One corpus of a study: its folder name, file, label columns, extract options, and its group column (its
    probes keep its groups whole, ``featx probe --group``; None: none)."""

    name: str
    path: Path
    labels: tuple[str, ...]
    options: Options = ()
    group: str | None = None
    entry: int = 0  # its [[corpora]] table (a SentEval folder's tasks share one)
    given: str = field(default="", compare=False)  # its path as the study gives it ("": ``path``), for messages


@dataclass(frozen=True)
class StudyConfig:
    """A whole study, checked at construction: names, files, the study's own keys and every extract and probe
    config it will run (an ``InputError`` naming the file, key and line, before any forward pass); the corpora's
    label and group columns, which need their files read, by ``columns.check_corpora``."""

    source: Source
    output: Path
    models: tuple[ModelSpec, ...]
    corpora: tuple[CorpusSpec, ...]
    metric: str | None = None
    jobs: int = 1
    engine: str = "local"
    address: str | None = None  # the Ray engine's cluster (HOST:PORT, "auto"); None: a local cluster
    extract: Options = ()
    probe: Options = ()

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise self.source.error(("study", "jobs"), f"jobs {self.jobs} runs nothing", "give 1 or more")
        if self.engine not in ENGINES:
            raise self.source.unknown(("study", "engine"), list(ENGINES), "engine", str(self.engine))
        if self.address is not None and self.engine != "ray":
            ray = spoken_value(None, "engine", "ray", "--engine")  # the override: --engine ray, engine='ray'
            raise self.source.error(("study", "address"), f"address is for the Ray engine, not '{self.engine}'",
                                    f'add engine = "ray" (or {ray}), or leave the address out')  # fmt: skip
        for corpus in self.corpora:
            for model in self.models:
                self.extract_config(model, corpus, check=(("corpora", corpus.entry), ("models", model.entry)))
        self.probe_config(Path(FEATURES_NAME), "label", lexical=True)
        check_repeats(self)  # a model or corpus given twice: its cells would run twice

    def check_address(self) -> None:
        """The Ray engine's cluster must answer: checked by ``run`` before any work starts (not by ``status``,
        which needs no cluster)."""
        if self.address is None:
            return
        try:
            check_address(self.address)
        except InputError as err:
            raise self.source.error(("study", "address"), err.message, err.hint) from None

    def cell_folder(self, model: ModelSpec, corpus: CorpusSpec) -> Path:
        """``OUTPUT/<model>/<corpus>``: a cell's features file and probe results."""
        return self.output / model.name / corpus.name

    def extract_config(self, model: ModelSpec, corpus: CorpusSpec, check: tuple[Place, ...] = ()) -> ExtractConfig:
        """The extraction of ``corpus`` by ``model``: ``[extract]``, then the corpus's, then the model's options."""
        fields = {**dict(self.extract), **dict(corpus.options), **dict(model.options)}
        fields.update(corpus=str(corpus.path), model=model.model, random_init=model.random_init, progress=False)
        fields.update(output=str(self.cell_folder(model, corpus) / FEATURES_NAME), init_seed=model.seed or 0)
        try:
            return ExtractConfig(**fields)
        except InputError as err:
            raise self._blame(err, [("extract",), *check]) from None

    def probe_config(
        self, features: Path, label: str, lexical: bool, output: Path | None = None, group: str | None = None
    ) -> ProbeConfig:
        """One probe of a cell: ``[probe]`` with the study's metric, label, output, lexical choice and its corpus's
        group column (``--group``)."""
        fields = {"jobs": 1, **dict(self.probe), "metric": self.metric, "progress": False, "group": group}
        fields.update(features=str(features), label=label, lexical=lexical, output=output and str(output))
        try:
            return ProbeConfig(**fields)
        except InputError as err:
            raise self._blame(err, [("probe",), ("study",)], ProbeConfig) from None

    def check_stored(self, model: ModelSpec, corpus: CorpusSpec, extract: ExtractConfig) -> None:
        """``[probe]``'s layers and poolings against what ``extract`` (the extraction of ``corpus`` by ``model``)
        will store, read from the model's ``config.json`` (not checkable for a hub id not on this machine): a probe
        that cannot run is refused before any work, not after its extraction."""
        from ..extraction import stored_layout
        from ..selection import parse_layer_specs, parse_poolings

        probe = self.probe_config(Path(FEATURES_NAME), "label", lexical=True)
        if probe.site_list() != ["hidden"]:
            return  # a site's layers and poolings are the site's (checked by the probe against the file)
        try:
            layout = stored_layout(extract)
        except InputError as err:  # a pooling the model has not: the extraction's own error
            raise self._blame(err, [("extract",), ("models", model.entry)]) from None
        except ModelError as err:  # a damaged model folder: said at its [[models]] entry
            raise self.source.error(("models", model.entry, "model"), err.message, err.hint) from None
        if layout is None:
            return
        layers, poolings = layout
        key = "layer"
        try:
            parse_layer_specs(probe.layers, layers)
            key = "pooling"
            if poolings is not None:
                parse_poolings(probe.poolings, poolings)
        except InputError as err:
            message = f"model '{model.name}', corpus '{corpus.name}': {err.message}"
            raise self.source.error(self.probe_key(key), message, err.hint) from None

    def probe_key(self, flag: str) -> Place:
        """Where ``[probe]`` gave ``--layer`` (``flag`` less a plural's s: ``pooling``, ``fold``), as field or flag."""
        keys = self.source.lines.keys_under(("probe",)) or [name for name, _ in self.probe]
        spelled = next((key for key in keys if key.lstrip("-").replace("-", "_").rstrip("s") == flag), None)
        return ("probe", spelled) if spelled else ("probe",)

    def _options(self, place: Place) -> Options:
        """The options a study table gave (a dict's, whose keys have no lines)."""
        if place == ("extract",):
            return self.extract
        if place == ("probe",):
            return self.probe
        if len(place) == 2 and place[0] == "models":
            return next((model.options for model in self.models if model.entry == place[1]), ())
        if len(place) == 2 and place[0] == "corpora":
            return self.corpora[place[1]].options
        return ()

    def _blame(self, err: InputError, places: list[Place], config: type = ExtractConfig) -> InputError:
        """``err`` as the study's error, at the first of ``places`` whose table or key the message names as the
        caller does (``config``'s flag of the key, ``--layer`` for ``layers``, or the key: ``layers=``)."""
        for place in places:
            keys = self.source.lines.keys_under(place) or [name for name, _ in self._options(place)]
            for key in keys:
                names = (f"--{key.lstrip('-').replace('_', '-')} ", f"{key} ", f"{key}=", f"{spoken(config, key)} ")
                if any(name in f"{err.message} " for name in names):
                    return self.source.error((*place, key), err.message, err.hint)
        return self.source.error(places[0], err.message, err.hint)


def _table(source: Source, data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise source.error((name,), f"[{name}] must be a table", f"write it as [{name}] with key = value lines")
    return value


def _entries(source: Source, data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = data.get(name)
    if not value:
        raise source.error((name,), f"the study has no [[{name}]]", f"add at least one [[{name}]] entry")
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise source.error((name,), f"{name} must be [[{name}]] tables", f"write each as a [[{name}]] table")
    return value


def _name(source: Source, place: Place, value: Any, seen: dict[str, Place], derived: bool = False) -> str:
    """An entry's folder name, checked; ``derived``: made from its file's name (a corpus given no ``name``)."""
    named = 'add name = "..." to this entry' if derived else "use letters, digits, '.', '_' and '-' (at most 100)"
    if not isinstance(value, str) or not NAME.match(value) or value in (".", ".."):
        raise source.error(place, f"name {value!r} is not a folder name", named)
    if value in seen:
        what = f"duplicate name '{value}'" + (" (from its file's name)" if derived else "")
        instead = '; name them apart: add name = "..." to this entry' if derived else ""
        raise source.error(place, what, f"another entry is named so ({_where(seen[value])}){instead}")
    seen[value] = place
    return value


def _model_path(source: Source, place: Place, value: Any) -> str:
    if value in (None, "default", DEFAULT_MODEL):
        return DEFAULT_MODEL
    if not isinstance(value, str) or not value.strip():
        raise source.error(place, f"model {value!r} is not a model id or folder", 'e.g. model = "./my-bert"')
    folder = source.resolve(value, place)
    if folder.is_dir():
        return str(folder)
    if value.startswith((".", "/", "~")) or "\\" in value:
        raise source.error(place, f"model folder {folder} does not exist", "give an existing folder or a hub id")
    return value


def _seeds(source: Source, place: Place, entry: dict[str, Any]) -> list[int | None]:
    seeds = entry.get("seeds")
    if seeds is None:
        return [0 if entry.get("random_init") else None]
    if not entry.get("random_init"):
        raise source.error(
            place,
            "seeds are the random weights' seeds of a random_init model; this model keeps its own weights, so "
            "every seed would be the same model",
            "add random_init = true, or leave seeds out",
        )
    if isinstance(seeds, list) and len(seeds) > MAX_SEEDS:  # before reading them: a million took over an hour to plan
        raise source.error(place, f"seeds gives {len(seeds)} seeds; a [[models]] entry takes at most {MAX_SEEDS}",
                           "each seed is a model run on every corpus; a few show the spread: [0, 1, 2]")  # fmt: skip
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int and 0 <= s <= MAX_SEED for s in seeds):
        raise source.error(place, f"seeds {seeds!r} must be a list of whole numbers 0 to {MAX_SEED}", "e.g. [0, 1, 2]")
    if len(set(seeds)) != len(seeds):
        raise source.error(place, f"seeds {seeds!r} repeat a seed", "give each seed once")
    return list(seeds)


def _models(source: Source, data: dict[str, Any]) -> tuple[ModelSpec, ...]:
    models: list[ModelSpec] = []
    seen: dict[str, Place] = {}
    entries = _entries(source, data, "models")
    if len(entries) > MAX_MODELS:  # before reading them, at the first entry over
        message = f"the study has {len(entries)} [[models]] entries, at most {MAX_MODELS}"
        raise source.error(("models", MAX_MODELS), message, "each model is run on every corpus: split the study")
    for index, entry in enumerate(entries):
        own = {key: value for key, value in entry.items() if key not in MODEL_KEYS}
        options = tuple(extract_fields(source, own, ("models", index), MODEL_KEYS).items())
        random_init = entry.get("random_init", False)
        if not isinstance(random_init, bool):
            raise source.error(("models", index, "random_init"), "random_init takes true or false")
        model = _model_path(source, ("models", index, "model"), entry.get("model"))
        seeds = _seeds(source, ("models", index, "seeds"), entry)
        base = entry.get("name", Path(model).name if model != DEFAULT_MODEL else "minilm")
        for seed in seeds:
            name = base if "seeds" not in entry or not isinstance(base, str) else f"{base}-s{seed}"
            name = _name(source, ("models", index, "name"), name, seen)
            models.append(ModelSpec(name, model, random_init, seed if random_init else None, options, index))
    return tuple(models)


def _labels(source: Source, place: Place, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise source.error(place, f"labels {value!r} must name label columns", 'e.g. labels = ["label"]')
    if len(set(value)) != len(value):
        raise source.error(place, f"labels {value!r} repeat a column", "name each label column once")
    return tuple(value)


def _corpora(source: Source, data: dict[str, Any]) -> tuple[CorpusSpec, ...]:
    corpora: list[CorpusSpec] = []
    seen: dict[str, Place] = {}
    for index, entry in enumerate(_entries(source, data, "corpora")):
        place = ("corpora", index)
        if "senteval" in entry:
            corpora.extend(_senteval(source, place, entry, seen))
            continue
        if not isinstance(entry.get("path"), str):
            raise source.error((*place, "path"), "a corpus needs its path", 'e.g. path = "sst2.csv"')
        path = source.resolve(entry["path"], (*place, "path"))
        if path.exists() and not path.is_file():  # a missing file: its extractions done need it no longer
            raise source.error((*place, "path"), f"corpus path {path} is not a file", "give a corpus file")
        name = _name(source, (*place, "name"), entry.get("name", corpus_name(path)), seen, "name" not in entry)
        labels = _labels(source, (*place, "labels"), entry.get("labels", ["label"]))
        own = tuple(extract_fields(source, _own(entry), place, CORPUS_KEYS).items())
        group = entry_group(source, place, entry, labels)
        corpora.append(CorpusSpec(name, path.resolve(), labels, own, group, index, entry["path"]))
    return tuple(corpora)


def _senteval(source: Source, place: Place, entry: dict[str, Any], seen: dict[str, Place]) -> list[CorpusSpec]:
    """``senteval = "PATH"``: the SentEval probing tasks of a local folder, one corpus per task (named by its
    file, after ``name`` and a '-' when given), or one task file; nothing is downloaded."""
    from ..extraction import senteval_tasks

    where = (*place, "senteval")
    if "path" in entry:
        raise source.error(where, "a corpus has a path or senteval, not both", "split it into two [[corpora]] entries")
    if not isinstance(entry["senteval"], str):
        raise source.error(where, "senteval must be a folder or a task file's path", 'e.g. senteval = "senteval/"')
    target = source.resolve(entry["senteval"], where)
    try:
        tasks = senteval_tasks(target) if not target.is_file() else [(corpus_name(target), target)]
    except InputError as err:
        raise source.error(where, err.message, err.hint) from None
    prefix = entry.get("name")
    labels = _labels(source, (*place, "labels"), entry.get("labels", ["label"]))
    own = tuple(extract_fields(source, _own(entry), place, CORPUS_KEYS).items())
    group = entry_group(source, place, entry, labels)
    named = [(f"{prefix}-{task}" if prefix and target.is_dir() else prefix or task, path) for task, path in tasks]
    given = [str(Path(entry["senteval"]) / path.name) if target.is_dir() else entry["senteval"] for _, path in tasks]
    names = [_name(source, (*place, "name"), name, seen, not prefix) for name, _ in named]
    found = zip(names, [path.resolve() for _, path in named], given, strict=True)
    return [CorpusSpec(name, path, labels, own, group, place[1], spelled) for name, path, spelled in found]


def _own(entry: dict[str, Any]) -> dict[str, Any]:
    """A corpus entry's extract options: its keys that are not the entry's own."""
    return {key: value for key, value in entry.items() if key not in CORPUS_KEYS}


def _study_keys(source: Source, table: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, kind in (("metric", str), ("jobs", int), ("engine", str), ("address", str), ("output", str)):
        if key in table:
            if type(table[key]) is not kind:
                example = f"{key} = 2 (a whole number, no quotes)" if kind is int else f'{key} = "..." (in quotes)'
                raise source.error(("study", key), f"{key} {table[key]!r} must be {kind.__name__}", f"write {example}")
            values[key] = table[key]
    values["output"] = check_output(source, values.get("output", default_output(source)))
    return values


def default_output(source: Source) -> str:
    """A study's default output folder: ``NAME.study`` beside its file (``study`` for a dict)."""
    return f"{source.path.stem}.study" if source.path is not None else "study"


def check_study(study: Any) -> None:
    """A study is given as a file's path, a dict of its tables or a ``StudyConfig``; anything else is refused."""
    if not isinstance(study, (str, os.PathLike, dict, StudyConfig)):
        raise InputError(
            f"a study is a path to a TOML file, a dict or a StudyConfig, not a {type(study).__name__}",
            "e.g. featx.study.run('study.toml')",
        )


def study_config(study: str | Path | dict[str, Any] | StudyConfig, **overrides: Any) -> StudyConfig:
    """The ``StudyConfig`` of a study file's path or of a dict (``overrides``: ``jobs``, ``engine``, ``address``
    given on the command line win over the file's)."""
    check_study(study)
    if isinstance(study, StudyConfig):
        from dataclasses import replace

        return replace(study, **{key: value for key, value in overrides.items() if value is not None})
    data, source = (study, dict_source(study)) if isinstance(study, dict) else read_study(study)
    check_keys(source, data, (), TABLES)
    settings = _table(source, data, "study")
    check_keys(source, settings, ("study",), STUDY_KEYS)
    values = _study_keys(source, settings)
    values.update({key: value for key, value in overrides.items() if value is not None})
    extract = tuple(extract_fields(source, _table(source, data, "extract"), ("extract",)).items())
    probe = tuple(probe_fields(source, _table(source, data, "probe"), ("probe",)).items())
    return StudyConfig(source, models=_models(source, data), corpora=_corpora(source, data), extract=extract,
                       probe=probe, **values)  # fmt: skip

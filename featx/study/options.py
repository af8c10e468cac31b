"""The ``extract`` and ``probe`` options of a study, by the name of their config field (``layers``,
``poolings``) or of their flag (``layer``, ``--pooling``, ``no-control``), as ``ExtractConfig`` and
``ProbeConfig`` declare them (``featx.options``): nothing is listed twice.

A negating flag given by its own name (``no_control = true``) sets its field to the opposite. The options the
study itself sets for every cell (the corpus, output, model, label, features file...) are refused where a
study file gives them, with where they belong instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..extraction import ExtractConfig
from ..options import flagged, keyword_of, on_command_line
from ..probing import ProbeConfig
from .source import Place, Source

# Options a study sets for each cell: where they go instead.
EXTRACT_SET_BY_STUDY = {
    "corpus": "a corpus's path: [[corpora]] path",
    "more_corpora": "one file per [[corpora]] entry",
    "output": "[study] output: each features file is OUTPUT/<model>/<corpus>/features.h5",
    "model": "[[models]] model",
    "random_init": "[[models]] random_init",
    "init_seed": "[[models]] seeds",
    "overwrite": "nothing: a study reuses or resumes its features files, and redoes them when its options change",
    "shards": "nothing: a study extracts whole corpora (the engine spreads the cells)",
    "shard_index": "nothing: a study extracts whole corpora (the engine spreads the cells)",
    "progress": "nothing: a study prints one line per cell",
}
PROBE_SET_BY_STUDY = {
    "features": "nothing: each probe reads its cell's features file",
    "label": "a corpus's labels: [[corpora]] labels",
    "labels": "a corpus's labels: [[corpora]] labels",
    "output": "[study] output: each probe writes OUTPUT/<model>/<corpus>/<label>.probe.csv",
    "metric": "[study] metric",
    "baseline": "a [[models]] entry with random_init = true (a control model)",
    "write": "nothing: a study writes every probe's results",
    "progress": "nothing: a study prints one line per cell",
    "group": "a corpus's group column: [[corpora]] group (a corpus's own, not every corpus's)",
    "lexical": "nothing: the lexical baseline runs once per corpus and label",
    "no_lexical": "nothing: the lexical baseline runs once per corpus and label",
}


def spellings(config: type) -> dict[str, tuple[str, bool]]:
    """Every name an option of ``config`` is known by -> (its field, whether the name negates it): the field's
    own name, and each flag's keyword (``--layer`` -> ``layer``; ``--no-control`` -> ``no_control``)."""
    names: dict[str, tuple[str, bool]] = {item.name: (item.name, False) for item in dataclasses.fields(config)}
    for item, spec in flagged(config):
        for flag in (*spec.flags, *spec.old):
            if flag.startswith("--"):
                names.setdefault(keyword_of(flag), (item.name, spec.negate))
    return names


def _lists_as_text(value: Any) -> Any:
    """A TOML list of names or numbers as the comma text the option takes (``["mean", "cls"]`` -> ``mean,cls``);
    the configs check the text."""
    if isinstance(value, list) and all(isinstance(item, (str, int)) and not isinstance(item, bool) for item in value):
        return ",".join(str(item) for item in value)
    return value


def option_fields(
    source: Source,
    table: dict[str, Any],
    place: Place,
    config: type,
    set_by_study: dict[str, str],
    own_keys: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``table``'s options as ``config`` field values: each name known (else the nearest, among them and the
    table's ``own_keys``), none set by the study, no field given twice."""
    names = spellings(config)
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    for key, value in table.items():
        key = key.lstrip("-").replace("-", "_")
        if key not in names:
            known = [name for name in names if name not in set_by_study and names[name][0] not in set_by_study]
            known += own_keys
            raise source.unknown((*place, key), known, "option")
        name, negate = names[key]
        if key in set_by_study or name in set_by_study:
            instead = set_by_study.get(key) or set_by_study[name]
            raise source.error((*place, key), f"'{key}' is set by the study", f"set it in {instead}")
        if name in given:
            raise source.error((*place, key), f"'{key}' and '{given[name]}' are the same option", "give it once")
        if negate:
            if not isinstance(value, bool):
                raise source.error((*place, key), f"'{key}' takes true or false")
            value = not value
        grid = name in ("cs", "alphas") and isinstance(value, list)
        values[name], given[name] = tuple(value) if grid else _lists_as_text(value), key
    return values


def extract_fields(
    source: Source, table: dict[str, Any], place: Place, own_keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The ``ExtractConfig`` fields of an ``[extract]`` table (or of a corpus's or model's own options, beside
    the entry's ``own_keys``: name, path...)."""
    return option_fields(source, table, place, ExtractConfig, EXTRACT_SET_BY_STUDY, own_keys)


# ``featx probe`` flags that run another analysis instead of the probes, which no ``ProbeConfig`` field holds: a
# study's [probe] table naming one is told so, not offered the nearest field ('sweep': "did you mean 'seed'?").
# (message, the hint on the command line, the hint from Python)
PROBE_NOT_IN_STUDY = {
    "sweep": (
        "a study runs featx probe's probes, not its --sweep",
        "run featx probe OUTPUT/<model>/<corpus>/features.h5 --label LABEL --sweep on a cell's features file",
        "run featx.probing.sweep('OUTPUT/<model>/<corpus>/features.h5', label='LABEL') on a cell's features file",
    ),
}


def probe_fields(source: Source, table: dict[str, Any], place: Place) -> dict[str, Any]:
    """The ``ProbeConfig`` fields of a ``[probe]`` table."""
    for key in table:
        name = key.lstrip("-").replace("-", "_")
        if name in PROBE_NOT_IN_STUDY:
            message, command_line, python = PROBE_NOT_IN_STUDY[name]
            raise source.error((*place, key), message, command_line if on_command_line() else python)
    return option_fields(source, table, place, ProbeConfig, PROBE_SET_BY_STUDY)

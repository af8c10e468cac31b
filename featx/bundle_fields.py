"""The JSON type of every field a bundle's ``manifest.json`` holds (``FIELDS``), checked by both readers of a bundle:
``featx.load`` (``featx predict``, ``featx intervene --bundle``, ``featx.sklearn``) and the directions reader of
``featx directions`` and ``featx extract --intervene project|mean|steer``. A bundle is untrusted input: anyone who
can write it can edit its manifest and make both digests anew, so a label that is a number, a selection that is a
list or a model path that is an object must be one clear error, never a traceback or a list printed as a label.

The values of the fields that need more than a type (a known classifier, pooling, schema, the shapes, the extraction
settings' choices and ranges) are checked by the readers themselves; this table says only what kind each field is.
A field that is absent is left to them (an earlier featx wrote fewer); ``null`` is refused where featx never
writes one. Fields featx does not know are ignored."""

from __future__ import annotations

from typing import Any

from .errors import InputError

TEXT, WHOLE, NUMBER, FLAG, MAPPING, LIST = (
    "a text",
    "a whole number",
    "a number",
    "true or false",
    "an object",
    "a list",
)
ANY = "*"  # every key of a mapping, or every item of a list


def _is(kind: str, value: Any) -> bool:
    if kind == TEXT:
        return isinstance(value, str)
    if kind in (WHOLE, NUMBER):
        numeric = isinstance(value, int) if kind == WHOLE else isinstance(value, (int, float))
        return numeric and not isinstance(value, bool)
    if kind == FLAG:
        return isinstance(value, bool)
    return isinstance(value, dict if kind == MAPPING else list)


# (path, kind, may be null): a path is the keys from the manifest's top; ANY stands for every key or item there.
_EXTRACTION_TEXTS = (
    "model", "model_path", "model_sha256", "tokenizer_sha256", "config_sha256", "model_type", "tokenizer",
    "compute_dtype", "store_dtype", "long_inputs", "pair_mode", "text_col", "text_pair_col", "id_col",
    "implementation", "model_part", "option_dtype", "option_long", "option_template", "option_system",
    "option_pool_at", "option_contrast",
)  # fmt: skip
_EXTRACTION_WHOLES = ("n_model_layers", "max_length", "stride", "option_stride", "option_seed")
_EXTRACTION_FLAGS = ("random_init", "option_trust_remote_code", "option_chat_template")
FIELDS: tuple[tuple[tuple[str, ...], str, bool], ...] = (
    *(((name,), TEXT, False) for name in ("format", "label", "level", "arcs", "created", "featx_version")),
    *(((name,), TEXT, False) for name in ("task", "classifier", "pooling")),
    (("schema_version",), WHOLE, False),
    (("n_features",), WHOLE, False),
    (("refit_on",), WHOLE, False),  # featx.sklearn's FittedProbe, refitted and saved
    (("C",), NUMBER, True),
    (("alpha",), NUMBER, True),
    (("classes",), LIST, True),
    (("classes", ANY), TEXT, False),
    (("layer_spec",), MAPPING, False),
    (("layer_spec", "kind"), TEXT, False),
    (("layer_spec", "layers"), LIST, False),
    (("layer_spec", "name"), TEXT, False),
    (("files",), MAPPING, False),
    (("files", ANY), MAPPING, False),
    (("files", ANY, "sha256"), TEXT, False),
    (("files", ANY, "bytes"), WHOLE, False),
    (("extraction",), MAPPING, False),
    *((("extraction", name), TEXT, True) for name in _EXTRACTION_TEXTS),
    *((("extraction", name), WHOLE, True) for name in _EXTRACTION_WHOLES),
    *((("extraction", name), FLAG, True) for name in _EXTRACTION_FLAGS),
    (("features_file",), MAPPING, False),
    (("features_file", "path"), TEXT, False),
    (("features_file", "fingerprint"), TEXT, True),
    (("selection",), MAPPING, False),
    *((("selection", name), TEXT, False) for name in ("metric", "on", "group")),
    *((("selection", name), WHOLE, False) for name in ("folds", "seed", "n_train", "n_groups")),
    (("selection", "n_val"), WHOLE, True),
    (("selection", "cv_score"), NUMBER, True),
    (("selection", "candidates"), LIST, False),
    (("selection", "candidates", ANY), MAPPING, False),
    (("selection", "candidates", ANY, "layer"), TEXT, False),
    (("selection", "candidates", ANY, "pooling"), TEXT, False),
    (("selection", "candidates", ANY, "score"), NUMBER, True),
    (("selection", "test"), MAPPING, True),
    (("selection", "test", ANY), NUMBER, True),
    (("selection", "cv_baselines"), MAPPING, False),
    (("selection", "cv_baselines", ANY), NUMBER, True),
)


def _found(value: Any, path: tuple[str, ...], where: tuple[str, ...] = ()):
    """Every ``(place, value)`` at ``path`` under ``value`` (nothing where a key is absent or a parent is of
    another kind: the parent's own rule refuses that)."""
    if not path:
        yield where, value
        return
    key, rest = path[0], path[1:]
    if isinstance(value, dict):
        items = list(value.items()) if key == ANY else ([(key, value[key])] if key in value else [])
    elif isinstance(value, list) and key == ANY:
        items = [(str(index), item) for index, item in enumerate(value)]
    else:
        items = []
    for name, item in items:
        yield from _found(item, rest, (*where, name))


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a text" if isinstance(value, str) else ("an object" if isinstance(value, dict) else "a list")


SECTIONS = ("extraction", "selection", "features_file", "layer_spec", "files")  # the manifest's objects of fields


def _named(place: tuple[str, ...]) -> str:
    """``extraction field 'model'``, ``selection field 'candidates.0.score'``, ``field 'classes.0'``."""
    if len(place) > 1 and place[0] in SECTIONS:
        return f"{place[0]} field '{'.'.join(place[1:])}'"
    return f"field '{'.'.join(place)}'"


def check_field_types(manifest: dict, where: str, hint: str) -> None:
    """Each field of ``manifest`` ``FIELDS`` names is of its kind, else one ``InputError``: ``{where}: its ...
    field 'x' is 3 (a number), not a text`` with ``hint``."""
    for path, kind, nullable in FIELDS:
        for place, value in _found(manifest, path):
            if (value is None and nullable) or (value is not None and _is(kind, value)):
                continue
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise InputError(f"{where}: its {_named(place)} is {shown} ({_json_kind(value)}), not {kind}", hint)


__all__ = ["ANY", "FIELDS", "FLAG", "LIST", "MAPPING", "NUMBER", "TEXT", "WHOLE", "check_field_types"]

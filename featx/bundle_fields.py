"""The JSON type of every field a bundle's ``manifest.json`` holds (``FIELDS``, a ``featx.json_fields`` table),
checked by both readers of a bundle: ``featx.load`` (``featx predict``, ``featx intervene --bundle``,
``featx.sklearn``) and the directions reader of ``featx directions`` and ``featx extract --intervene
project|mean|steer``. A bundle is untrusted input: anyone who can write it can edit its manifest and make both
digests anew, so a label that is a number, a selection that is a list or a model path that is an object must be one
clear error, never a traceback or a list printed as a label.

The values of the fields that need more than a type (a known classifier, pooling, schema, the shapes, the extraction
settings' choices and ranges) are checked by the readers themselves; this table says only what kind each field is.
A field that is absent is left to them (an earlier featx wrote fewer); ``null`` is refused where featx never
writes one. Fields featx does not know are ignored."""

from __future__ import annotations

from .json_fields import ANY, FLAG, LIST, NUMBER, OBJECT, TEXT, WHOLE, Field, FieldTable, fields

# The hint of every refusal of a bundle's files, by both readers: only featx writes a bundle, so fit it again.
REFIT_HINT = "fit the probe again with featx fit (a bundle is written by featx only)"

_EXTRACTION_TEXTS = (
    "model", "model_path", "model_sha256", "tokenizer_sha256", "config_sha256", "model_type", "tokenizer",
    "compute_dtype", "store_dtype", "long_inputs", "pair_mode", "text_col", "text_pair_col", "id_col",
    "implementation", "model_part", "option_dtype", "option_long", "option_template", "option_system",
    "option_pool_at", "option_contrast",
)  # fmt: skip
_EXTRACTION_WHOLES = ("n_model_layers", "max_length", "stride", "option_stride", "option_seed")
_EXTRACTION_FLAGS = ("random_init", "option_trust_remote_code", "option_chat_template")
_CANDIDATE = ("selection", "candidates", ANY)  # one row of the selection's scored candidates

FIELDS = FieldTable(
    (
        *fields(TEXT, "format", "label", "level", "arcs", "created", "featx_version", "task", "classifier", "pooling"),
        Field(("head_decode",), TEXT),  # a head selector's since schema 3
        *fields(WHOLE, "schema_version", "n_features", "refit_on"),  # refit_on: featx.sklearn's FittedProbe, saved
        *fields(NUMBER, "C", "alpha", nullable=True),
        Field(("classes",), LIST, nullable=True),
        Field(("classes", ANY), TEXT),
        Field(("layer_spec",), OBJECT),
        Field(("layer_spec", "kind"), TEXT),
        Field(("layer_spec", "layers"), LIST),
        Field(("layer_spec", "name"), TEXT),
        Field(("files",), OBJECT),
        Field(("files", ANY), OBJECT),
        Field(("files", ANY, "sha256"), TEXT),
        Field(("files", ANY, "bytes"), WHOLE),
        Field(("extraction",), OBJECT),
        *fields(TEXT, *_EXTRACTION_TEXTS, under=("extraction",), nullable=True),
        *fields(WHOLE, *_EXTRACTION_WHOLES, under=("extraction",), nullable=True),
        *fields(FLAG, *_EXTRACTION_FLAGS, under=("extraction",), nullable=True),
        Field(("features_file",), OBJECT),
        Field(("features_file", "path"), TEXT),
        Field(("features_file", "fingerprint"), TEXT, nullable=True),
        Field(("selection",), OBJECT),
        *fields(TEXT, "metric", "on", "group", under=("selection",)),
        *fields(WHOLE, "folds", "seed", "n_train", "n_groups", "n_bootstrap", under=("selection",)),
        Field(("selection", "n_val"), WHOLE, nullable=True),
        Field(("selection", "cv_score"), NUMBER, nullable=True),
        Field(("selection", "candidates"), LIST),
        Field(_CANDIDATE, OBJECT),
        *fields(TEXT, "layer", "pooling", under=_CANDIDATE),
        Field((*_CANDIDATE, "score"), NUMBER, nullable=True),
        Field(("selection", "test"), OBJECT, nullable=True),
        Field(("selection", "test", ANY), NUMBER, nullable=True),
        Field(("selection", "cv_baselines"), OBJECT),
        Field(("selection", "cv_baselines", ANY), NUMBER, nullable=True),
    ),
    sections=("extraction", "selection", "features_file", "layer_spec", "files"),  # the manifest's objects of fields
)

__all__ = ["FIELDS", "REFIT_HINT"]

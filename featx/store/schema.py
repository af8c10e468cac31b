"""The features file's layout: every HDF5 path and attribute name featx uses is defined here.

Layout (schema 1)::

    /                      attrs: provenance and options (given by the writer's caller), and the store's own
                           (``format``, ``schema_version``, ``layers``, ``poolings``, ``n_rows``, ``hidden_size``,
                           ``store_dtype``, ``tokens``, ``sites``, ``complete``, ``fingerprint``, ``request_key``)
    /rows/text             (N,) UTF-8 strings; attr ``escaped`` when NUL had to be escaped (``strings.py``)
    /rows/id               (N,) UTF-8 strings, likewise
    /rows/split            (N,) UTF-8 strings (only if the corpus had a ``split`` column), likewise
    /rows/n_tokens         (N,) int32, tokens before truncation, special tokens included
    /rows/n_kept           (N,) int32, tokens fed to the model
    /rows/truncated        (N,) bool
    /rows/index            (N,) int64, in a shard file only: the corpus row of each of its rows, ascending
    /rows/contrast_n_kept  (N, K-1) int32, ``--contrast`` with K answers only: the tokens of answers 1 .. K-1's
                           prompts fed to the model (``rows/n_*`` are answer 0's); files before it lack it
    /labels/<column>       (N,) int32 class codes, -1 = missing; attrs ``column`` (original name), ``names`` (JSON)
    /pooled/<pooling>      (N, L, H) the ``hidden`` site: features of every stored layer; one chunk holds one
                           layer of a row block
    /tokens/states         (T, L, H) token-level states of ``hidden`` (only with ``--tokens``)
    /tokens/offsets        (N+1,) int64, row i owns tokens offsets[i]:offsets[i+1]
    /tokens/input_ids      (T,) int32
    /tokens/word_ids       (T,) int32, -1 for special tokens
    /rows/text_pair        (N,) UTF-8 strings, sentence pairs only: each row's second text (``--text-pair-col``)
    /rows/pair_n_tokens    (N,) int32, ``--pair-mode separate`` only: side b's tokens before truncation
    /rows/pair_n_kept      (N,) int32, likewise, side b's tokens fed to the model (``rows/n_*`` are side a's;
                           in cross mode ``rows/n_*`` and ``rows/truncated`` describe the whole pair sequence)
    /tokens/segment_ids    (T,) int8, ``--pair-mode cross`` with ``--tokens``: 0 = text a, 1 = text b, -1 = special
    /tokens/type_ids       (T,) int32, likewise: the token-type ids the tokenizer gave
    /sites/<site>/pooled/<pooling>  (N, L_site, W_site) another site's features; attr ``site`` on the group
    /sites/<site>/tokens/states     (T, L_site, W_site) its token-level states (only with ``--tokens``)
    /words/offsets         (N+1,) int64, row i owns words offsets[i]:offsets[i+1] (word inputs only: CoNLL-U ...)
    /words/form            (W,) UTF-8 strings, likewise escaped
    /words/pooled/<wp>     (W, L, H) word vectors of ``hidden`` for a word pooling (first, last, mean subword);
                           one chunk holds one layer of a word block
    /words/labels/<col>    (W,) int32 codes, -1 = missing; attrs ``column``, ``names`` (JSON), as /labels
    /words/head            (W,) int32, the 0-based index within its sentence of the word's head, -1 root/unknown
    /words/n_subwords      (W,) int32, tokens of each word
    root attrs (with words only): ``word_poolings`` (JSON list), ``n_words``
    /progress/rows_done    (1,) int64, rows [0, rows_done) are committed
    /progress/window       (2,) int64, [commit block start, batches committed]: the first batches of the commit
                           block that starts at rows_done are written too (a commit by time inside a block);
                           ignored when its start differs from rows_done (files from before it lack it: whole
                           blocks only). The name is historical: commit blocks were once called windows

Sentence pairs (root attrs ``pair_mode`` and ``text_pair_col``; files without them are single texts). Cross mode
stores one sequence per pair: the poolings as usual plus ``pooled/mean_a`` and ``pooled/mean_b`` (each text's own
tokens). Separate mode stores side a exactly where a plain extraction stores it (``pooled/<pooling>``) and side b
as the site ``pair_b`` (``/sites/pair_b/pooled/<pooling>``, the same layers and poolings), so every reader of
sites reads side b too.

Prompts (root attrs ``template``... above): the stored texts stay the corpus's; ``pooled/at`` holds the state at
the ``--pool-at`` token and ``pooled/span_mean``, ``span_max``, ``span_last`` pool the row's own tokens only
(``featx/extraction/inputs/positions.py``), beside the whole-prompt poolings.

Every site, ``hidden`` included, is a ``SiteLayout``: its datasets' paths come from ``site_pooled_path`` and
``site_tokens_path``. ``hidden`` keeps the top-level paths it had before other sites existed, and the ``sites``
attribute lists only the others, so files written before sites read unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..safe_files import loads_json

SCHEMA_VERSION = 1
FORMAT_NAME = "featx-features"
PARTIAL_SUFFIX = ".partial"
CREATING_SUFFIX = ".creating"
HIDDEN_SITE = "hidden"

# Datasets
ROWS = "rows"
TEXT, IDS, SPLIT = "rows/text", "rows/id", "rows/split"
N_TOKENS, N_KEPT, TRUNCATED = "rows/n_tokens", "rows/n_kept", "rows/truncated"
ROW_INDEX = "rows/index"
PAIR_TEXT, PAIR_N_TOKENS, PAIR_N_KEPT = "rows/text_pair", "rows/pair_n_tokens", "rows/pair_n_kept"
TOKEN_SEGMENT_IDS, TOKEN_TYPE_IDS = "tokens/segment_ids", "tokens/type_ids"
PAIR_B_SITE = "pair_b"  # side b of a --pair-mode separate file
LABELS = "labels"
# Float values of label columns that look continuous: label_values/<column>, (N,) float64, NaN = missing
LABEL_VALUES = "label_values"
TOKENS = "tokens"
TOKEN_OFFSETS, TOKEN_INPUT_IDS, TOKEN_WORD_IDS = "tokens/offsets", "tokens/input_ids", "tokens/word_ids"
SITES = "sites"
# Word-level datasets: one row per sentence, its words flat beside the rows
WORDS = "words"
WORD_OFFSETS, WORD_FORM, WORD_HEAD, WORD_N_SUBWORDS = "words/offsets", "words/form", "words/head", "words/n_subwords"
WORD_POOLED, WORD_LABELS = "words/pooled", "words/labels"
# words/head: the 0-based index of the head within its sentence, else the root or unknown (no head given: '_' in
# CoNLL-U, or no head column); files written before unknown had its own value have -1 for both
HEAD_ROOT, HEAD_UNKNOWN = -1, -2
WORD_POOLINGS, N_WORDS = "word_poolings", "n_words"
PROGRESS = "progress"
ROWS_DONE = "progress/rows_done"
BLOCK_PROGRESS = "progress/window"  # the commit block's progress (stored under its old name, "window")

# Attributes the store itself writes or interprets
FORMAT, SCHEMA, COMPLETE = "format", "schema_version", "complete"
LAYERS, POOLINGS, N_ROWS, HIDDEN_SIZE = "layers", "poolings", "n_rows", "hidden_size"
STORE_DTYPE, WITH_TOKENS, SITES_ATTR = "store_dtype", "tokens", "sites"
FINGERPRINT, REQUEST_KEY, SKIPPED_EMPTY = "fingerprint", "request_key", "skipped_empty_rows"
OPTIONS, CREATED, MERGED_FROM = "options", "created", "merged_from"
# Provenance attributes written by the extraction (``featx.extraction.run.resolve.provenance``) and read back
MODEL, MODEL_PATH, MODEL_SHA256, MODEL_TYPE = "model", "model_path", "model_sha256", "model_type"
CORPUS_PATH, CORPUS_SHA256, TEXT_COL, ID_COL = "corpus_path", "corpus_sha256", "text_col", "id_col"
RANDOM_INIT, DEVICE, COMPUTE_DTYPE, MAX_LENGTH = "random_init", "device", "compute_dtype", "max_length"
FEATX_VERSION, TOKENIZER, N_MODEL_LAYERS = "featx_version", "tokenizer", "n_model_layers"
ESCAPED, LABEL_COLUMN, LABEL_NAMES, SITE_NAME = "escaped", "column", "names", "site"
SHARD_INDEX, SHARD_COUNT, SHARD_ASSIGNMENT = "shard_index", "shard_count", "shard_assignment"
CORPUS_N_ROWS, BASE_FINGERPRINT = "corpus_n_rows", "base_fingerprint"
# How the model was run: "model", or "encoder" of an encoder-decoder; whether it is causal (decoder-only);
# the id in padding positions and where it came from (tokenizer, eos, reserved); the side featx pads on;
# whether the tokenizer adds BOS; how long texts were handled (truncate, window) and the window overlap.
MODEL_PART, CAUSAL, PAD_TOKEN_ID, PAD_SOURCE = "model_part", "causal", "pad_token_id", "pad_source"
PADDING_SIDE, BOS_ADDED, LONG_INPUTS, STRIDE = "padding_side", "bos_added", "long_inputs", "stride"
WINDOW_BUDGET = "window_budget"  # --long window: a window's text tokens (its other max_length - budget: specials)
PAIR_MODE, TEXT_PAIR_COL = "pair_mode", "text_pair_col"  # sentence pairs: cross or separate; the second column
DEVICE_MAP = "device_map"  # JSON {module: device} of --device-map auto; {} when the model sat on one device
IMPLEMENTATION = "implementation"  # what ran the model: "native" (featx's own BERT) or "transformers"
# --intervene: JSON list of the edits made inside the forward pass (kind, layer, source and its sha256, alpha,
# rank, seed); absent from plain extractions
INTERVENTION = "intervention"
# A derived file (``derived.py``: featx erase's erased features): JSON of what made it (kind, settings, source), and
# the source's fingerprint; absent from extractions
DERIVED, SOURCE_FINGERPRINT = "derived", "source_fingerprint"
BLOCKS_RUN = "blocks_run"  # transformer blocks each forward pass ran: fewer than the model's when truncated
# sha256 over the tokenizer files of the model folder (``extraction.fingerprints.tokenizer_sha256``); "" when the
# folder has none. Not in the features fingerprint: a bundle fitted on the file refuses a changed tokenizer.
TOKENIZER_SHA256 = "tokenizer_sha256"
# sha256 over the model folder's config.json and chat template files (``fingerprints.config_sha256``), likewise.
CONFIG_SHA256 = "config_sha256"
# Prompts (--template, --chat-template, --pool-at): the template as given (its text), its sha256, whether the
# tokenizer's chat template wrapped it and that template's sha256, the system message, the prompt of row 0,
# the --pool-at spec (the pooling ``at``), the span rule of ``span_*`` and the ids of rows left out for lacking
# the marker (JSON list). Files without them are plain texts.
TEMPLATE, TEMPLATE_SHA256, PROMPT_EXAMPLE = "template", "template_sha256", "prompt_example"
CHAT_TEMPLATE, CHAT_TEMPLATE_SHA256, SYSTEM_MESSAGE = "chat_template", "chat_template_sha256", "system_message"
POOL_AT, SPAN_RULE, SKIPPED_MARKER = "pool_at", "span_rule", "skipped_marker_rows"
# Contrast pairs (--contrast): the answers (JSON list); answer 0's states are the ordinary datasets, answer k's the
# site ``contrast_site(k)`` (the same layers and poolings).
CONTRAST = "contrast"
CONTRAST_N_KEPT = "rows/contrast_n_kept"


def contrast_site(answer: int) -> str:
    """The site of the states of answer ``answer`` (1, 2, ...) of a ``--contrast`` file."""
    return f"answer_{answer}"


SHARD_ATTRS = (SHARD_INDEX, SHARD_COUNT, SHARD_ASSIGNMENT, CORPUS_N_ROWS, BASE_FINGERPRINT)
# What ``FeatureWriter.create`` derives from the layout itself (a copy of another file's attributes drops them)
LAYOUT_ATTRS = (FORMAT, SCHEMA, LAYERS, POOLINGS, N_ROWS, HIDDEN_SIZE, STORE_DTYPE, WITH_TOKENS, COMPLETE, SITES_ATTR)


def escape_name(name: str) -> str:
    """A column or site name made safe as one HDF5 link name ('/' would create groups)."""
    escaped = name.replace("%", "%25").replace("/", "%2F")
    return "%2E" if escaped == "." else escaped


def label_path(column: str) -> str:
    return f"{LABELS}/{escape_name(column)}"


def label_values_path(column: str) -> str:
    return f"{LABEL_VALUES}/{escape_name(column)}"


def word_pooled_path(pooling: str) -> str:
    """Dataset path of the word vectors of one word pooling (first, last, mean)."""
    return f"{WORD_POOLED}/{escape_name(pooling)}"


def word_label_path(column: str) -> str:
    return f"{WORD_LABELS}/{escape_name(column)}"


def site_group(site: str) -> str:
    """The group of a site besides hidden."""
    return f"{SITES}/{escape_name(site)}"


def site_pooled_path(site: str, pooling: str) -> str:
    """Dataset path of one pooling of a site (``hidden`` lives at ``pooled/<pooling>``)."""
    return f"pooled/{pooling}" if site == HIDDEN_SITE else f"{site_group(site)}/pooled/{pooling}"


def site_tokens_path(site: str) -> str:
    return "tokens/states" if site == HIDDEN_SITE else f"{site_group(site)}/tokens/states"


def partial_path(path: Path) -> Path:
    return path.with_name(path.name + PARTIAL_SUFFIX)


def creating_path(path: Path) -> Path:
    """Where a new file is built before it becomes ``<name>.partial`` (a kill here loses nothing)."""
    return path.with_name(path.name + PARTIAL_SUFFIX + CREATING_SUFFIX)


@dataclass(frozen=True)
class SiteLayout:
    """One stored site: its layers, width, poolings, and (for hooked sites) the modules read."""

    name: str
    layers: tuple[int, ...]
    width: int
    poolings: tuple[str, ...]
    modules: tuple[str, ...] = ()

    @property
    def pooled_paths(self) -> dict[str, str]:
        """``{pooling: dataset path}``."""
        return {pooling: site_pooled_path(self.name, pooling) for pooling in self.poolings}

    @property
    def tokens_path(self) -> str:
        return site_tokens_path(self.name)

    def row_bytes(self, itemsize: int) -> int:
        """Bytes of one row over all its pooled datasets."""
        return len(self.poolings) * len(self.layers) * self.width * itemsize

    def token_bytes(self, itemsize: int) -> int:
        return len(self.layers) * self.width * itemsize

    def describe(self) -> dict:
        """The entry of a site besides hidden in the ``sites`` attribute (key order as written since 0.1)."""
        return {
            "layers": list(self.layers),
            "width": self.width,
            "modules": list(self.modules),
            "poolings": list(self.poolings),
        }


def hidden_layout(layers, hidden_size: int, poolings) -> SiteLayout:
    return SiteLayout(HIDDEN_SITE, tuple(int(layer) for layer in layers), int(hidden_size), tuple(poolings))


def layouts_from_attrs(attrs) -> list[SiteLayout]:
    """Every site of a file, ``hidden`` first, from its root attributes (plain dict or h5py's)."""

    def attr(name, default=None):
        value = attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    layouts = [hidden_layout(loads_json(attr(LAYERS)), int(attr(HIDDEN_SIZE)), loads_json(attr(POOLINGS)))]
    for name, site in (loads_json(attr(SITES_ATTR)) if attr(SITES_ATTR) else {}).items():
        layouts.append(
            SiteLayout(
                name, tuple(site["layers"]), int(site["width"]), tuple(site["poolings"]), tuple(site.get("modules", ()))
            )
        )
    return layouts


def sites_attr(layouts: list[SiteLayout]) -> str | None:
    """The ``sites`` attribute: the sites besides hidden, or None when there are none (older layout)."""
    others = {layout.name: layout.describe() for layout in layouts if layout.name != HIDDEN_SITE}
    return json.dumps(others) if others else None

"""Resolving an ``ExtractionPlan`` (``featx.extraction.plan``, the data) from an ``ExtractConfig``, the
corpus and the loaded model: poolings, padding, ``--long window``, batch sizes and commit blocks, the
fingerprint that decides resume and reuse, and the provenance written into the features file.

Resolving a plan costs one tiny forward pass when sites besides ``hidden`` are asked for (their
widths are measured); it never touches the output.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ... import store
from ..._version import __version__
from ...errors import InputError
from ...io import rereadable, source_name
from ...options import recorded, spoken_value
from ...selection import POOLINGS, parse_poolings, select_layers
from ...store import HIDDEN_SITE, SiteLayout, hidden_layout
from ..checks import is_word_input, output_path
from ..config import ExtractConfig
from ..edits.hooks import check_edits_reach, plan_edits
from ..forward.sites import measure_widths, parse_sites, resolve_sites
from ..forward.truncation import plan_cut
from ..inputs.pairs import pair_attributes, pair_b_layout, pair_fingerprint, pair_poolings
from ..inputs.templates import contrast_layouts, prompt_poolings, template_fingerprint, with_pool_at
from ..inputs.treebank import parse_word_poolings, word_format
from ..model.devices import dtype_name
from ..model.fingerprints import config_sha256, tokenizer_sha256
from ..model.loading import LoadedModel
from ..plan import (
    COMMIT_BLOCK_BYTES,
    CPU_BATCH_SIZE,
    CPU_MAX_TOKENS,
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    MAX_BLOCK_ROWS,
    MIN_BLOCK_ROWS,
    ExtractionPlan,
    WindowSpec,
)
from ..run.freshness import POOLER_KEY, request_key
from ..shards.sharding import ShardSpec
from ..tokens.tokenize import special_layout


def resolve_poolings(spec: str, loaded: LoadedModel, available: tuple[str, ...] = POOLINGS) -> list[str]:
    """The poolings asked for; ``pooler`` only where the model has that head (an error if asked by name).

    Of a causal (decoder-only) model the first token sees only itself, so ``cls`` would describe the
    first token, not the text: ``all`` leaves it out and asking for it by name is refused.
    """
    explicit = spec is not None and spec.strip().lower() != "all"
    poolings = parse_poolings(spec, available)
    if loaded.causal and "cls" in poolings:
        if explicit:
            raise InputError(
                f"pooling 'cls' does not fit {loaded.name}: it is a causal (decoder-only) model, whose "
                "first token sees only itself, so its states do not depend on the text",
                "use last (the last real token has seen the whole text) or mean",
            )
        poolings.remove("cls")
    if "pooler" in poolings and not loaded.has_pooler:
        if explicit:
            raise InputError(
                f"pooling 'pooler' is not available: model {loaded.name} has no pooler head",
                "choose from cls, mean, max, last",
            )
        poolings.remove("pooler")
    return poolings


def resolve_pad(tokenizer) -> tuple[int, str]:
    """The id that fills padding positions: the tokenizer's pad token, else its EOS, else 0 (reserved).

    featx pads on the right itself, whatever the tokenizer's ``padding_side``, and masks the padding:
    the real tokens keep their positions, and in a causal model they never see what comes after them.
    """
    if tokenizer.pad_token_id is not None:
        return int(tokenizer.pad_token_id), "tokenizer"
    if getattr(tokenizer, "eos_token_id", None) is not None:
        return int(tokenizer.eos_token_id), "eos"
    return 0, "reserved"


def check_room(loaded: LoadedModel) -> None:
    """A row of ``max_length`` tokens holds the tokenizer's special tokens and at least one word-piece: a shorter
    ``--max-length`` is refused before any forward pass, naming this tokenizer's minimum (else every row would run
    as special tokens only; sentence pairs are checked for both texts when tokenised, also before the model runs)."""
    n_special = sum(special_layout(loaded.tokenizer))
    if loaded.max_length < n_special + 1:
        raise InputError(
            f"{spoken_value(ExtractConfig, 'max_length', loaded.max_length)} leaves no room for text: this tokenizer "
            f"adds {n_special} special token{'' if n_special == 1 else 's'} to every row",
            f"use {spoken_value(ExtractConfig, 'max_length', n_special + 1)} or more (the special tokens and one "
            "word-piece)",
        )


def resolve_window(config: ExtractConfig, loaded: LoadedModel) -> WindowSpec | None:
    """The windows of ``--long window``: the tokenizer's specials kept in each, the rest content."""
    if config.long != "window":
        return None
    n_lead, n_trail = special_layout(loaded.tokenizer)
    budget = loaded.max_length - n_lead - n_trail
    if budget < 2:
        raise InputError(
            f"--long window: a window of {loaded.max_length} tokens leaves {max(budget, 0)} token"
            f"{'' if budget == 1 else 's'} for text besides {n_lead + n_trail} special tokens; windows need 2",
            f"raise --max-length to at least {n_lead + n_trail + 2}",
        )
    stride = budget // 4 if config.stride is None else int(config.stride)
    if stride >= budget:
        raise InputError(
            f"--stride {stride} must be smaller than the {budget} text tokens of a window",
            f"use --stride below {budget} (tokens shared by consecutive windows), e.g. {budget // 4}",
        )
    return WindowSpec(n_lead, n_trail, budget, stride)


def default_max_tokens(config: ExtractConfig, loaded: LoadedModel) -> int:
    """Padded tokens per batch: the option, else by device; never below one full-length row."""
    chosen = config.max_tokens or DEFAULT_MAX_TOKENS.get(loaded.device.type, CPU_MAX_TOKENS)
    return max(int(chosen), int(loaded.max_length))


def default_batch_size(config: ExtractConfig, loaded: LoadedModel) -> int:
    """Most sequences (rows, or --long window windows) per forward pass: the option, else by device."""
    return int(config.batch_size or DEFAULT_BATCH_SIZE.get(loaded.device.type, CPU_BATCH_SIZE))


def block_rows(config: ExtractConfig, row_bytes: int) -> int:
    """Rows per commit block: ``--commit-rows``, else as many as ``COMMIT_BLOCK_BYTES`` holds (64 to 8192)."""
    if config.commit_rows:
        return int(config.commit_rows)
    return int(max(MIN_BLOCK_ROWS, min(MAX_BLOCK_ROWS, COMMIT_BLOCK_BYTES // max(1, row_bytes))))


def fingerprint(
    config: ExtractConfig,
    corpus_sha256: str,
    loaded: LoadedModel,
    layers,
    poolings,
    max_tokens,
    batch_size,
    sites,
    window: WindowSpec | None = None,
    word_poolings=(),
    edits=(),
) -> str:
    """What the file's contents depend on; resuming or reusing requires an exact match."""
    extra_sites = [site.name for site in sites if site.name != HIDDEN_SITE]
    # Only named when there are sites besides hidden, so files from before sites keep their fingerprint.
    # Likewise named only with --long window, so files written before it keep their fingerprint.
    long = {"long": config.long, "stride": window.stride} if window is not None else {}
    return json.dumps(
        {
            **({"sites": extra_sites} if extra_sites else {}),
            **long,
            **_reading_fingerprint(config),
            **_words_fingerprint(config, word_poolings),
            **pair_fingerprint(config),
            **template_fingerprint(config, loaded),
            **_edits_fingerprint(edits, int(loaded.n_layers) - 1),
            **_pooler_fingerprint(loaded, poolings),
            "corpus_sha256": corpus_sha256,
            "text_col": config.text_col,
            "id_col": config.id_col,
            "skip_empty": config.skip_empty,
            "model_sha256": loaded.weights_sha256,
            "random_init": config.random_init,
            "seed": config.init_seed if config.random_init else None,
            "max_length": loaded.max_length,
            "layers": list(layers),
            "poolings": list(poolings),
            "tokens": config.tokens,
            "store_dtype": config.store_dtype,
            "compute_dtype": dtype_name(loaded.dtype),
            "device_type": loaded.device.type,
            "max_tokens": max_tokens,
            "batch_size": batch_size,
            "commit_rows": config.commit_rows,
        },
        sort_keys=True,
    )


def _pooler_fingerprint(loaded: LoadedModel, poolings) -> dict:
    """A pooler whose activation is a module apart (ALBERT's ``pooler_activation``) has been run with it since
    30 Nov 2026 (the linear alone before): named for such a file only, so that one written before is no longer
    reused as up to date, and every other file keeps its fingerprint."""
    if "pooler" in poolings and getattr(loaded.model, "pooler_activation", None) is not None:
        return {POOLER_KEY: "linear and activation"}
    return {}


def _edits_fingerprint(edits, top: int) -> dict:
    """``--intervene``: each edit's kind, layer, source's sha256 and settings (not the source's path: a moved file
    gives the same features); named only with edits, so plain files keep their fingerprint. An edit at the
    ``top`` layer is marked as acting on the stored top layer (after a final norm), as it does after 0.2.0:
    files from before, which edited a decoder's last block before its norm, are not resumed or reused."""
    records = [{key: value for key, value in edit.intervention.record().items() if key != "source"} for edit in edits]
    at_top = any(edit.intervention.layer == top and edit.intervention.site is None for edit in edits)
    return {"intervene": records, **({"top_edit": "stored top layer"} if at_top else {})} if records else {}


def _reading_fingerprint(config: ExtractConfig) -> dict:
    """How the corpus was read, named only when not the default (or when it matters), so files of plain
    requests keep their fingerprint: a forced delimiter, other missing-label markers, and ids that count
    skipped rows (since 0.2)."""
    return {
        **({"sep": config.sep} if config.sep is not None else {}),
        **({"missing_labels": config.missing_labels} if config.missing_labels != "empty" else {}),
        **({"ids": "data_row"} if config.skip_empty and config.id_col is None else {}),
    }


def _words_fingerprint(config: ExtractConfig, word_poolings) -> dict:
    """Word inputs only: how the files were read and which word vectors are stored."""
    if not word_poolings:
        return {}
    return {
        "words": {
            "format": word_format(config.corpus, config.word_format, config.columns),
            "columns": config.columns,
            "word_poolings": list(word_poolings),
        }
    }


def _layouts(config: ExtractConfig, loaded: LoadedModel, layers: list[int], poolings: list[str]):
    """Every site's layout (hidden first) and the hooked ``Site`` objects, widths measured."""
    sites = resolve_sites(loaded.model, parse_sites(config.sites), layers, loaded.n_layers - 1)
    if len(sites) > 1:
        tokenizer = loaded.tokenizer
        measure_widths(
            loaded.model, sites, loaded.device, (tokenizer.cls_token_id, tokenizer.sep_token_id), loaded.hidden_size
        )
    site_poolings = tuple(name for name in poolings if name != "pooler")  # the pooler head reads hidden only
    hooked = tuple(site for site in sites if site.name != HIDDEN_SITE)
    if hooked and not site_poolings and not config.tokens:
        raise InputError(
            f"{spoken_value(config, 'sites', hooked[0].name)} would store nothing: "
            "the pooling pooler reads hidden only",
            f"add a pooling for the site, e.g. {spoken_value(config, 'poolings', 'pooler,mean')}, or "
            f"{spoken_value(config, 'tokens', True)} for its token states",
        )
    layouts = [hidden_layout(layers, loaded.hidden_size, poolings)]
    for site in hooked:
        assert site.width is not None  # measured above
        layouts.append(
            SiteLayout(site.name, tuple(site.layers), int(site.width), site_poolings, tuple(site.describe()["modules"]))
        )
    layouts += pair_b_layout(config, layouts[0])  # --pair-mode separate: side b
    layouts += contrast_layouts(config, layouts[0])  # --contrast: answers 1, 2, ...
    return tuple(layouts), hooked


def resolve_plan(
    config: ExtractConfig, corpus_sha256: str, loaded: LoadedModel, shard: ShardSpec | None = None
) -> ExtractionPlan:
    """The plan of ``config`` on a corpus (by its sha256) with ``loaded``; ``shard`` for one shard's part."""
    layers = select_layers(config.layers, loaded.n_layers)
    available = prompt_poolings(config, pair_poolings(config, POOLINGS))  # prompts: span_*, and at with --pool-at
    poolings = with_pool_at(config, resolve_poolings(config.poolings, loaded, available))
    layouts, hooked = _layouts(config, loaded, layers, poolings)
    max_tokens = default_max_tokens(config, loaded)
    check_room(loaded)
    window = resolve_window(config, loaded)
    word_poolings = tuple(parse_word_poolings(config.word_pooling)) if is_word_input(config) else ()
    batch_size = default_batch_size(config, loaded)
    edits, edit_path = plan_edits(config.intervene, config.intervene_seed, loaded)
    check_edits_reach(edits, layers, (layer for site in hooked for layer in site.layers))
    base = fingerprint(
        config, corpus_sha256, loaded, layers, poolings, max_tokens, batch_size, layouts, window, word_poolings, edits
    )
    itemsize = np.dtype(config.store_dtype).itemsize
    rows = block_rows(config, sum(site.row_bytes(itemsize) for site in layouts))
    token_bytes = sum(site.token_bytes(itemsize) for site in layouts)
    output = output_path(config)
    pad_id, pad_source = resolve_pad(loaded.tokenizer)
    cut = plan_cut(loaded, layers, hooked)
    return ExtractionPlan(
        cut=cut,
        blocks_run=cut.blocks_run if cut is not None else loaded.n_layers - 1,
        pad_id=pad_id,
        pad_source=pad_source,
        max_length=int(loaded.max_length),
        long_inputs=config.long,
        window=window,
        word_poolings=word_poolings,
        config=config,
        output=shard.path(output) if shard else output,
        store_dtype=config.store_dtype,
        sites=layouts,
        hooked=hooked,
        max_tokens=max_tokens,
        batch_size=batch_size,
        block_rows=rows,
        block_tokens=COMMIT_BLOCK_BYTES / token_bytes if config.tokens else None,
        commit_seconds=float(config.commit_seconds),
        fingerprint=shard.fingerprint(base) if shard else base,
        base_fingerprint=base,
        shard=shard,
        merged_output=output if shard else None,
        edits=edits,
        edit_path=edit_path,
    )


def bos_added(tokenizer) -> bool:
    """Whether the tokenizer puts its BOS token in front of every text (featx tokenises the same way)."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    return bool(tokenizer("a")["input_ids"][:1] == [bos])


def device_map(config: ExtractConfig, loaded: LoadedModel) -> dict:
    """Where ``--device-map auto`` put the model's parts (one entry when it all fits one device); {} without it."""
    if not config.device_map:
        return {}
    placed = getattr(loaded.model, "hf_device_map", None) or {"": loaded.device}
    return {name: str(where) for name, where in placed.items()}


def edit_attributes(plan: ExtractionPlan) -> dict:
    """``--intervene``: the edits (kind, layer, source path and sha256, alpha, rank, seed) as a JSON attribute."""
    if not plan.edits:
        return {}
    return {store.schema.INTERVENTION: json.dumps([edit.intervention.record() for edit in plan.edits])}


def provenance(plan: ExtractionPlan, corpus, loaded: LoadedModel) -> dict:
    """The root attributes an extraction records about where its features came from."""
    config = plan.config
    return {
        store.schema.FEATX_VERSION: __version__,
        store.schema.CREATED: time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        store.schema.MODEL: loaded.name,
        store.schema.MODEL_PATH: loaded.path,
        store.schema.MODEL_SHA256: loaded.weights_sha256,
        store.schema.TOKENIZER_SHA256: (tokenizer_sha256(Path(loaded.path)) or "") if loaded.path else "",
        store.schema.CONFIG_SHA256: (config_sha256(Path(loaded.path)) or "") if loaded.path else "",
        store.schema.MODEL_TYPE: getattr(loaded.model.config, "model_type", ""),
        store.schema.RANDOM_INIT: bool(config.random_init),
        store.schema.TOKENIZER: getattr(loaded.tokenizer, "class_name", type(loaded.tokenizer).__name__),
        store.schema.MAX_LENGTH: loaded.max_length,
        store.schema.COMPUTE_DTYPE: dtype_name(loaded.dtype),
        store.schema.DEVICE: str(loaded.device),
        store.schema.DEVICE_MAP: json.dumps(device_map(config, loaded)),
        store.schema.IMPLEMENTATION: loaded.implementation,  # not in the fingerprint: both give the same features
        # not in the fingerprint either: a truncated pass gives the same features
        store.schema.BLOCKS_RUN: plan.blocks_run,
        store.schema.CORPUS_PATH: str(Path(config.corpus).resolve())
        if rereadable(config.corpus)
        else source_name(config.corpus),
        store.schema.CORPUS_SHA256: corpus.sha256,
        store.schema.TEXT_COL: corpus.text_col,
        store.schema.ID_COL: corpus.id_col or "",
        store.schema.SKIPPED_EMPTY: json.dumps(corpus.skipped_rows),
        store.schema.N_MODEL_LAYERS: loaded.n_layers,
        store.schema.MODEL_PART: loaded.part or "model",
        store.schema.CAUSAL: bool(loaded.causal),
        store.schema.PAD_TOKEN_ID: plan.pad_id,
        store.schema.PAD_SOURCE: plan.pad_source,
        store.schema.PADDING_SIDE: "right",
        store.schema.BOS_ADDED: bos_added(loaded.tokenizer),
        store.schema.LONG_INPUTS: plan.long_inputs,
        store.schema.STRIDE: plan.window.stride if plan.window else 0,
        store.schema.WINDOW_BUDGET: plan.window.budget if plan.window else 0,  # the summary's window tokens
        store.schema.FINGERPRINT: plan.fingerprint,
        store.schema.REQUEST_KEY: request_key(config, corpus.sha256) or "",  # for the quick check (freshness.py)
        **pair_attributes(config),
        **edit_attributes(plan),
        **corpus.attributes,  # the prompts' (prompts.py), when rows were made into prompts
        store.schema.OPTIONS: json.dumps(
            {k: str(v) if isinstance(v, Path) else v for k, v in recorded(config).items()}
        ),
    }

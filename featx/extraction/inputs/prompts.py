"""A corpus made into prompts and tokenised: the step between reading the corpus and the batch loop.

``prompt_tokens`` renders every row (``templates.PromptMaker``), refuses (or, with ``--skip-missing-marker``,
leaves out) rows whose prompt lacks the ``--pool-at`` marker, checks that the template leaves room for text,
and tokenises the prompts with their spans and positions (``positions.tokenize_prompts``); all of it before
the first forward pass. ``with_positions`` gives plain texts their ``--pool-at last|index:N`` token. What the
file records about the prompts goes to ``corpus.attributes`` (``prompt_attributes``).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from ... import store
from ..tokens.tokenize import TokenizedCorpus
from .positions import (
    check_template_fits,
    missing_marker_rows,
    parse_pool_at,
    plain_positions,
    refuse_missing_marker,
    tokenize_prompts,
)
from .templates import PromptMaker, chat_template_of, contrast_answers, sha256_text


def drop_rows(corpus, rows: list[int]) -> None:
    """Leave ``rows`` (positions) out of ``corpus``, in place: texts, ids, labels, split and template columns."""
    keep = np.setdiff1d(np.arange(len(corpus)), np.asarray(rows, dtype=np.int64))

    def pick(values):
        return [values[row] for row in keep]

    corpus.texts, corpus.ids = pick(corpus.texts), pick(corpus.ids)
    corpus.labels = {name: replace(column, codes=column.codes[keep]) for name, column in corpus.labels.items()}
    corpus.split = pick(corpus.split) if corpus.split is not None else None
    corpus.columns = {name: pick(values) for name, values in corpus.columns.items()}


def _skip_or_refuse(config, corpus, maker: PromptMaker, rendered: list, marker: str) -> list:
    """The rendered prompts of the rows kept: those lacking ``marker`` refused, or left out and noted."""
    missing = missing_marker_rows([prompt for prompt, _, _ in rendered], marker)
    if not missing:
        return rendered
    if not config.skip_missing_marker or len(missing) == len(rendered):
        refuse_missing_marker(corpus.ids, missing, marker, len(rendered))
    left_out = [corpus.ids[row] for row in missing]
    drop_rows(corpus, missing)
    corpus.attributes[store.schema.SKIPPED_MARKER] = json.dumps(left_out)
    corpus.notes.append(
        f"{len(missing)} row(s) whose prompt lacks the marker {marker!r} left out (--skip-missing-marker): "
        f"ids {', '.join(left_out[:5])}{' ...' if len(left_out) > 5 else ''}"
    )
    return [maker.render(row) for row in range(len(corpus))]


def prompt_tokens(loaded, corpus, plan) -> TokenizedCorpus:
    """The corpus's prompts tokenised with their spans and ``--pool-at`` tokens (rows lacking a marker dropped)."""
    config = plan.config
    answers = contrast_answers(config) if config.contrast else []
    maker = PromptMaker(config, corpus, loaded.tokenizer, loaded.name)
    makers = [maker.for_answer(answer) for answer in answers] or [maker]
    for each in makers:
        check_template_fits(each, loaded.tokenizer, loaded.max_length, loaded.name)
    pool_at = parse_pool_at(config.pool_at) if config.pool_at is not None else None
    rendered = [makers[0].render(row) for row in range(len(corpus))]
    if pool_at is not None and pool_at.kind == "marker":
        rendered = _skip_or_refuse(config, corpus, makers[0], rendered, pool_at.marker)
    corpus.attributes.update(prompt_attributes(config, loaded, rendered[0][0]))
    tokenized = tokenize_prompts(
        makers[0],
        rendered,
        loaded.tokenizer,
        loaded.max_length,
        pool_at,
        bool(config.tokens),
        corpus.ids,
        fits_too=makers[1:],
    )
    if len(makers) > 1:  # --contrast: the other answers' prompts, run beside answer 0's, each row's text cut alike
        tokenized.contrast = [
            tokenize_prompts(
                each,
                [each.render(row) for row in range(len(corpus))],
                loaded.tokenizer,
                loaded.max_length,
                pool_at,
                False,
                corpus.ids,
                fits_too=[other for other in makers if other is not each],
            )
            for each in makers[1:]
        ]
    return tokenized


def with_positions(tokenized: TokenizedCorpus, config, corpus, loaded) -> TokenizedCorpus:
    """Plain texts with ``--pool-at last|index:N``: every row's token, and the attributes recording it."""
    if config.pool_at is not None:
        plain_positions(tokenized, parse_pool_at(config.pool_at), corpus.ids)
        corpus.attributes.update(prompt_attributes(config, loaded, None))
    return tokenized


def prompt_attributes(config, loaded, example: str | None) -> dict:
    """Root attributes of a file of prompts: the template, its sha256, the chat template's, the system message,
    row 0's prompt, ``--pool-at`` and the span rule."""
    chat = chat_template_of(loaded.tokenizer, loaded.name) if config.chat_template else ""
    attributes = {
        store.schema.TEMPLATE: config.template or "",
        store.schema.TEMPLATE_SHA256: sha256_text(config.template) if config.template else "",
        store.schema.CHAT_TEMPLATE: bool(config.chat_template),
        store.schema.CHAT_TEMPLATE_SHA256: sha256_text(chat) if chat else "",
        store.schema.SYSTEM_MESSAGE: config.system or "",
        store.schema.POOL_AT: config.pool_at or "",
        **({store.schema.CONTRAST: json.dumps(contrast_answers(config))} if config.contrast else {}),
    }
    if example is not None:
        attributes[store.schema.PROMPT_EXAMPLE] = example
        attributes[store.schema.SPAN_RULE] = "overlap"  # a token is in the span when its characters overlap the fields'
    return attributes


# What makes two files' prompts the same, in the words an error names them by.
PROMPT_SETTINGS = {
    store.schema.TEMPLATE_SHA256: "--template",
    store.schema.CHAT_TEMPLATE_SHA256: "--chat-template",
    store.schema.SYSTEM_MESSAGE: "--system",
    store.schema.POOL_AT: "--pool-at",
    store.schema.CONTRAST: "--contrast",
}


def prompt_difference(attrs, other_attrs) -> str | None:
    """The prompt options (``PROMPT_SETTINGS``) two features files' root attributes differ in, e.g. a
    ``--baseline`` extracted with another template, whose ``at`` and span poolings read other tokens; else None."""
    differ = [
        option
        for key, option in PROMPT_SETTINGS.items()
        if str(attrs.get(key, "") or "") != str(other_attrs.get(key, "") or "")
    ]
    return ", ".join(differ) or None

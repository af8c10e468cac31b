"""Token positions of prompts: ``--pool-at`` (one token per row) and the text's span (``span_*`` poolings).

``--pool-at`` stores, as the pooling ``at``, the state at one token of each row:

- ``last``: the last token of the prompt (the last real token; the one that has read everything);
- ``marker:M``: the token holding the last character of the last occurrence of ``M`` in the prompt, i.e. the
  marker's own last token (``Sentiment:`` -> the ``:`` token). In a causal model its state is the one that
  predicts what follows the marker, and it exists when the marker ends the prompt, where "the token after it"
  would not. A row whose prompt lacks ``M`` is refused (naming the rows), or left out with
  ``--skip-missing-marker``;
- ``index:N``: ``N`` counts from the end when negative (``index:-1`` is the last token, ``-2`` the one before)
  and from the start otherwise (``index:0`` is the first token, BOS where the tokenizer adds one).

**Span rule.** The span poolings (``span_mean``, ``span_max``, ``span_last``) read the tokens of the row's own
characters: a token belongs to the span when its character range (the fast tokenizer's offsets) overlaps the
characters substituted for a field. A token that merges template characters into the text's first or last
token (byte-level BPE's leading space ``Ġthe``, SentencePiece's ``▁the``) is therefore in the span, and a
template token that touches the text without overlapping it (``:`` before ``" the"``) is not. Special tokens
(BOS, chat turn markers added by the tokenizer) are never in it. Every row keeps at least one text token.

Rows longer than the model's maximum are cut **in their text**, at a token boundary of the text, until the
prompt fits; the template (and the marker, and the token ``last`` reads) stays whole. With ``--contrast`` the cut
is where every answer's prompt fits, the same text for all answers. The template alone
(every field empty) must leave room for at least one token of text.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...checks import parse_whole
from ...errors import InputError
from ...options import on_command_line, spoken, spoken_value
from ..tokens.tokenize import TokenizedCorpus, fast_backend
from .templates import SPAN_POOLINGS, uses_prompts

SHOWN_ROWS = 5
CHUNK_ROWS = 4096


@dataclass(frozen=True)
class PoolAt:
    """A parsed ``--pool-at``: ``kind`` last, marker or index."""

    kind: str
    marker: str = ""
    index: int = -1


def _pool_at(value: Any, shown: str | None = None) -> str:
    """``--pool-at VALUE`` on the command line, ``pool_at='VALUE'`` from Python."""
    return spoken_value(None, "pool_at", value, "--pool-at", shown=shown)


def parse_pool_at(spec: str) -> PoolAt:
    hint = 'use last, marker:TEXT (e.g. marker:"Sentiment:") or index:N (-1 is the last token, 0 the first)'
    kind, _, value = str(spec).partition(":")
    kind = kind.strip().lower()
    if kind == "last" and not value:
        return PoolAt("last")
    if kind == "marker":
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if not value:
            raise InputError(f"{_pool_at(spec, 'marker:')} names no marker", hint)
        return PoolAt("marker", marker=value)
    if kind == "index":
        index = parse_whole(value.strip(), signed=True)  # ASCII digits only: int would read 'index:٣' as 3
        if index is None:
            raise InputError(f"{_pool_at(spec)}: '{value}' is not a whole number", hint)
        return PoolAt("index", index=index)
    if kind in SPAN_POOLINGS and not value:
        raise InputError(
            f"{_pool_at(spec, repr(spec))}: {kind} is a pooling over the text's own tokens, not one token's position",
            f"pass it as {spoken_value(None, 'poolings', kind, '--pooling')} "
            f"(with {spoken(None, 'template', '--template')}); "
            f"{spoken(None, 'pool_at', '--pool-at')} takes last, marker:TEXT or index:N",
        )
    raise InputError(f"{_pool_at(spec, repr(spec))} is not understood", hint)


def check_pool_at(config) -> None:
    """``--pool-at``, ``--skip-missing-marker`` and the poolings that need a template or ``--pool-at``."""
    from .templates import AT_POOLING, SPAN_POOLINGS

    pool_at = parse_pool_at(config.pool_at) if config.pool_at is not None else None
    if pool_at is not None and pool_at.kind == "marker" and not uses_prompts(config):
        raise InputError(
            f"{_pool_at(f'marker:{pool_at.marker}')} needs a prompt template",
            "add --template (e.g. 'Review: {text}\\nSentiment:') or --chat-template; without one use last or index:N",
        )
    if config.skip_missing_marker and (pool_at is None or pool_at.kind != "marker"):
        raise InputError(
            f"{spoken_value(config, 'skip_missing_marker', True)} applies to {_pool_at('marker:TEXT')} only",
            "leave it out",
        )
    if config.skip_missing_marker and (config.shards is not None or config.shard_index is not None):
        raise InputError("--skip-missing-marker does not combine with --shards", "extract in one process")
    named = {name.strip().lower() for name in str(config.poolings or "all").split(",")}
    spans = sorted(named & set(SPAN_POOLINGS))
    if spans and not uses_prompts(config):
        raise InputError(
            f"pooling {', '.join(spans)} reads the text's span inside a prompt, and there is no template",
            "add --template (or --chat-template), or use mean, max or last over the whole text",
        )
    if AT_POOLING in named and pool_at is None:
        others = ", marker:TEXT or index:N" if on_command_line() else " (or 'marker:TEXT', 'index:N')"
        raise InputError(f"pooling 'at' needs {spoken(config, 'pool_at')}", f"add {_pool_at('last')}{others}")


def _rows_named(ids: list[str], rows) -> str:
    shown = ", ".join(ids[row] for row in rows[:SHOWN_ROWS])
    return shown + (f" and {len(rows) - SHOWN_ROWS} more" if len(rows) > SHOWN_ROWS else "")


def missing_marker_rows(prompts: list[str], marker: str) -> list[int]:
    return [row for row, prompt in enumerate(prompts) if marker not in prompt]


def refuse_missing_marker(ids: list[str], rows: list[int], marker: str, n_rows: int) -> None:
    raise InputError(
        f"{_pool_at(f'marker:{marker}')}: the marker does not occur in the prompt of {len(rows)} of {n_rows} row(s) "
        f"(ids {_rows_named(ids, rows)})",
        "add --skip-missing-marker to leave those rows out, or choose a marker every prompt has",
    )


def span_flags(offsets: np.ndarray, special: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    """Which tokens belong to the span: their character range overlaps a field's, special tokens never."""
    flags = np.zeros(len(offsets), dtype=bool)
    for first, last in spans:
        if last > first:
            flags |= (offsets[:, 0] < last) & (offsets[:, 1] > first)
    return flags & ~special


def at_position(pool_at: PoolAt, prompt: str, offsets: np.ndarray, special: np.ndarray) -> int:
    """The row's ``--pool-at`` token (-1 when the marker is absent or the index out of range)."""
    n = len(offsets)
    if pool_at.kind == "last":
        return n - 1
    if pool_at.kind == "index":
        position = n + pool_at.index if pool_at.index < 0 else pool_at.index
        return position if 0 <= position < n else -1
    where = prompt.rfind(pool_at.marker)
    if where < 0:
        return -1
    char = where + len(pool_at.marker) - 1
    real = ~special & (offsets[:, 1] > offsets[:, 0])
    covering = np.flatnonzero(real & (offsets[:, 0] <= char) & (offsets[:, 1] > char))
    if len(covering):
        return int(covering[-1])
    before = np.flatnonzero(real & (offsets[:, 0] <= char))
    return int(before[-1]) if len(before) else -1


@dataclass
class _Row:
    """One row's tokens: ids, character offsets, special flags, word ids; its prompt and field spans."""

    ids: list[int]
    offsets: np.ndarray
    special: np.ndarray
    word_ids: list
    prompt: str
    spans: list[tuple[int, int]]
    text_spans: list[int]

    @property
    def n_tokens(self) -> int:
        return len(self.ids)


def _row(encoding, rendered) -> _Row:
    prompt, spans, text_spans = rendered
    return _Row(
        list(encoding.ids),
        np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2),
        np.asarray(encoding.special_tokens_mask, dtype=bool),
        [-1 if word is None else word for word in encoding.word_ids],
        prompt,
        spans,
        text_spans,
    )


def _render_row(maker, backend, row: int, text: str) -> _Row:
    rendered = maker.render(row, text)
    return _row(backend.encode(rendered[0], add_special_tokens=maker.add_special_tokens), rendered)


def _fits(makers: list, backend, row: int, text: str, max_length: int) -> bool:
    """Whether every one of ``makers``' prompts of row ``row`` with ``text`` holds at most ``max_length`` tokens."""
    return all(_render_row(each, backend, row, text).n_tokens <= max_length for each in makers)


def _too_long(makers: list, backend, rows: range, max_length: int) -> np.ndarray:
    """Which of ``rows`` have a prompt of one of ``makers`` longer than ``max_length`` tokens."""
    longer = np.zeros(len(rows), dtype=bool)
    for each in makers:
        encodings = backend.encode_batch(
            [each.render(row)[0] for row in rows], add_special_tokens=each.add_special_tokens
        )
        longer |= np.asarray([len(encoding.ids) > max_length for encoding in encodings], dtype=bool)
    return longer


_PROBE = " \n\ue000featx-frame\ue000\n "  # a user turn with whitespace at both edges (a trimming template cuts it)


def _framed(maker):
    """``maker`` with its chat template replaced by plain concatenation, ``prefix + user + suffix``, when the
    template puts a user turn into the prompt verbatim (edge whitespace kept); else None. The template is rendered
    twice here instead of once per candidate of every row's binary search (about nine times per row cut)."""
    if maker.chat is None:
        return None
    try:
        prompt, start, _ = maker.chat(_PROBE.strip())
        prefix, suffix = prompt[:start], prompt[start + len(_PROBE.strip()) :]
        if maker.chat(_PROBE)[0] != prefix + _PROBE + suffix:
            return None
    except InputError:  # a template that refuses the probe: render every candidate
        return None
    framed = copy.copy(maker)
    framed.chat = lambda user: (prefix + user + suffix, len(prefix), (0, len(user)))
    return framed


def _search(maker, backend, row: int, text: str, cuts: list[int], max_length: int, fits_too: list):
    """Binary search over the cut points: the row with the most text whose prompts (and ``fits_too``'s) fit, and
    that text; None when none fits."""
    low, high, best = 0, len(cuts) - 1, None
    while low <= high:
        middle = (low + high) // 2
        candidate = _render_row(maker, backend, row, text[: cuts[middle]])
        if candidate.n_tokens <= max_length and _fits(fits_too, backend, row, text[: cuts[middle]], max_length):
            best, low = (candidate, text[: cuts[middle]]), middle + 1
        else:
            high = middle - 1
    return best


def _search_framed(makers: list, framed: list, backend, row: int, first: _Row, cuts: list, max_length: int):
    """``_search`` with the chat template rendered as concatenation (``_framed``), where the row's whole prompt is
    that concatenation; the cut found is rendered by the template itself and kept only if every prompt is the
    same. None when it cannot be used (the caller searches with the template then)."""
    if any(each is None for each in framed) or framed[0].render(row)[0] != first.prompt:
        return None
    text = makers[0].corpus.texts[row]
    found = _search(framed[0], backend, row, text, cuts, max_length, framed[1:])
    if found is None:
        return None
    best, cut = found
    same = makers[0].render(row, cut) == (best.prompt, best.spans, best.text_spans) and all(
        real.render(row, cut)[0] == quick.render(row, cut)[0]
        for real, quick in zip(makers[1:], framed[1:], strict=True)
    )
    return best if same else None


def _fit(maker, backend, row: int, first: _Row, max_length: int, ids: list[str], fits_too: list, frames=None) -> _Row:
    """Row ``row`` with its text cut at the longest token boundary that makes the prompt fit ``max_length``, and
    the prompts of ``fits_too`` (--contrast's other answers) with the same text too: every answer's prompt then
    holds the same text, so their states differ by the answer only, not by where a longer answer cut the text.
    ``frames``: ``_framed`` of ``[maker, *fits_too]``, to search without rendering the chat template per cut."""
    text = maker.corpus.texts[row]
    start, stop = first.spans[first.text_spans[0]]
    skipped = max(0, text.find(first.prompt[start:stop]))  # leading whitespace a trimming chat template dropped
    inside = (first.offsets[:, 0] > start) & (first.offsets[:, 0] < stop) & ~first.special
    cuts = sorted(set((first.offsets[inside, 0] - start + skipped).tolist()))
    best = None
    if frames:
        best = _search_framed([maker, *fits_too], frames, backend, row, first, cuts, max_length)
    if best is None:
        found = _search(maker, backend, row, text, cuts, max_length, fits_too)
        best = found[0] if found is not None else None
    if best is None:
        raise InputError(
            f"row {ids[row]}: the prompt's template and other fields leave no room for its text within "
            f"{max_length} tokens",
            "shorten the template or the other columns, or raise --max-length",
        )
    return best


def check_template_fits(maker, tokenizer, max_length: int, model: str) -> None:
    """The template alone (every field empty) must leave room for a token of text."""
    empty = fast_backend(tokenizer).encode(maker.empty(), add_special_tokens=maker.add_special_tokens)
    if len(empty.ids) + 1 > max_length:
        raise InputError(
            f"the prompt template alone is {len(empty.ids)} tokens, which leaves no room for text within "
            f"the {max_length}-token maximum of {model}",
            "shorten the template (or the system message), or raise --max-length up to the model's maximum",
        )


def tokenize_prompts(
    maker,
    rendered: list,
    tokenizer,
    max_length: int,
    pool_at: PoolAt | None,
    with_word_ids: bool,
    ids: list[str],
    fits_too: list | None = None,
) -> TokenizedCorpus:
    """Every row's prompt (``rendered``: ``maker.render`` of each row) tokenised, cut in its text to fit,
    with its span flags and ``--pool-at`` token; a row is cut where the prompts of the makers ``fits_too`` (the
    other answers of --contrast) fit with the same text too."""
    backend = fast_backend(tokenizer)
    n_rows = len(rendered)
    lengths, full, at = np.empty(n_rows, np.int64), np.empty(n_rows, np.int32), np.zeros(n_rows, np.int64)
    parts: dict[str, list] = {"ids": [], "span": [], "words": []}
    frames: list | None = None  # the makers' chat templates as concatenation (_framed), made at the first cut
    for start in range(0, n_rows, CHUNK_ROWS):
        chunk = rendered[start : start + CHUNK_ROWS]
        encodings = backend.encode_batch(
            [prompt for prompt, _, _ in chunk], add_special_tokens=maker.add_special_tokens
        )
        longer_elsewhere = _too_long(fits_too or [], backend, range(start, start + len(chunk)), max_length)
        for offset, encoding in enumerate(encodings):
            row = start + offset
            current = _row(encoding, chunk[offset])
            full[row] = len(current.ids)
            if len(current.ids) > max_length or longer_elsewhere[offset]:
                frames = [_framed(each) for each in [maker, *(fits_too or [])]] if frames is None else frames
                current = _fit(maker, backend, row, current, max_length, ids, fits_too or [], frames)
            flags = span_flags(current.offsets, current.special, current.spans)
            if not flags.any():  # a text the tokenizer drops whole (a control character): its last token
                flags[np.flatnonzero(~current.special)[-1:]] = True
            if pool_at is not None:
                at[row] = at_position(pool_at, current.prompt, current.offsets, current.special)
            lengths[row] = len(current.ids)
            parts["ids"].append(np.asarray(current.ids, np.int32))
            parts["span"].append(flags.astype(np.int8))
            if with_word_ids:
                parts["words"].append(np.asarray(current.word_ids, np.int32))
    _check_positions(at, ids, pool_at)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return TokenizedCorpus(
        input_ids=np.concatenate(parts["ids"]),
        offsets=offsets,
        full_lengths=full,
        word_ids=np.concatenate(parts["words"]) if with_word_ids else None,
        span=np.concatenate(parts["span"]),
        at=at if pool_at is not None else None,
    )


def _check_positions(at: np.ndarray, ids: list[str], pool_at: PoolAt | None) -> None:
    bad = np.flatnonzero(at < 0).tolist()
    if not bad or pool_at is None:
        return
    if pool_at.kind == "marker":
        raise InputError(
            f"{_pool_at(f'marker:{pool_at.marker}')}: the marker lost its token in {len(bad)} row(s) "
            f"(ids {_rows_named(ids, bad)}): it occurs only in a text that was cut to fit",
            "put the marker in the template after the text, or raise --max-length",
        )
    raise InputError(
        f"{_pool_at(f'index:{pool_at.index}')} is beyond {len(bad)} row(s) (ids {_rows_named(ids, bad)}), "
        f"which have fewer tokens",
        "use an index every row has, e.g. index:-1 (the last token)",
    )


def plain_positions(tokenized: TokenizedCorpus, pool_at: PoolAt, ids: list[str]) -> None:
    """``--pool-at last`` or ``index:N`` on plain texts (no template): the position in every row."""
    lengths = tokenized.lengths.astype(np.int64)
    if pool_at.kind == "last":
        at = lengths - 1
    else:
        at = lengths + pool_at.index if pool_at.index < 0 else np.full(len(lengths), pool_at.index, np.int64)
        at = np.where((at >= 0) & (at < lengths), at, -1)
    _check_positions(at, ids, pool_at)
    tokenized.at = at

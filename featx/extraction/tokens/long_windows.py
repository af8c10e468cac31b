"""``--long window``: a text longer than the model's maximum, run as overlapping windows and stitched.

A row is ``lead specials + content + trail specials`` (e.g. ``[CLS] ... [SEP]``, ``<s> ...``). Each window
holds the same specials around ``budget`` content tokens; consecutive windows share ``stride`` content
tokens, and the last window ends with the text (so every window has the same length and needs no padding).
Every token of the text is taken from the one window where it is most central (farthest from that
window's edges; the earlier window on a tie); the lead specials come from the first window and the trail
specials from the last. The stitched sequence has exactly the row's tokens, so poolings over it pool
over the whole text: ``mean``/``max`` over every real token, ``cls``/``pooler`` from the first window,
``last`` from the last.

Long rows share forward passes (``window_groups``): a commit block's long rows, most windows first, are grouped
into steps of up to ``GROUP_PASSES`` passes of ``windows_per_pass`` windows; a step's windows run back to back, a
pass holding windows of several rows, and each row is stitched and pooled alone as soon as its last window is
through (``window_passes`` says which tokens each pass gives to which row). A step is the loop's batch: a row is
committed only with its whole step, so every row's windows are all done when it is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

GROUP_PASSES = 4  # the most forward passes of windows in one step of the batch loop (one commit unit)


@dataclass(frozen=True)
class WindowedRow:
    input_ids: np.ndarray  # (windows, window length) int64, no padding
    owner: np.ndarray  # (row tokens,) the window each stitched token is taken from, non-decreasing
    position: np.ndarray  # (row tokens,) its position inside that window

    @property
    def n_windows(self) -> int:
        return int(self.input_ids.shape[0])


def window_starts(n_content: int, budget: int, stride: int) -> list[int]:
    """Content offsets of the windows: every ``budget - stride`` tokens, the last one flush with the end."""
    if n_content <= budget:
        return [0]
    step = budget - stride
    starts = list(range(0, n_content - budget, step))
    return starts + [n_content - budget]


def split_row(
    ids: np.ndarray, n_lead: int, n_trail: int, budget: int, stride: int, word_ids: np.ndarray | None = None
) -> WindowedRow:
    """The windows of one tokenised row (specials included) and where each of its tokens is taken from;
    with ``word_ids`` (the row's, -1 for specials) a word's tokens all come from one window (``word_owners``)."""
    ids = np.asarray(ids, dtype=np.int64)
    lead, trail = ids[:n_lead], ids[len(ids) - n_trail :]
    content = ids[n_lead : len(ids) - n_trail]
    starts = np.asarray(window_starts(len(content), budget, stride))
    width = min(budget, len(content))
    windows = np.stack([np.concatenate([lead, content[start : start + width], trail]) for start in starts])
    # Most central window of each content token: the largest distance to the nearest window edge.
    index = np.arange(len(content))[:, None]
    inside = (index >= starts[None, :]) & (index < starts[None, :] + width)
    margin = np.minimum(index - starts[None, :], starts[None, :] + width - 1 - index)
    owner_content = np.where(inside, margin, -1).argmax(axis=1)  # argmax: the first (earlier) window on a tie
    if word_ids is not None:
        owner_content = word_owners(
            np.where(inside, margin, -1), np.asarray(word_ids)[n_lead : len(ids) - n_trail], owner_content
        )
    position_content = n_lead + np.arange(len(content)) - starts[owner_content]
    last = len(starts) - 1
    owner = np.concatenate([np.zeros(n_lead, np.int64), owner_content, np.full(n_trail, last, np.int64)])
    position = np.concatenate([np.arange(n_lead), position_content, n_lead + width + np.arange(n_trail)])
    return WindowedRow(windows, owner.astype(np.int64), position.astype(np.int64))


def word_owners(score: np.ndarray, words: np.ndarray, token_owner: np.ndarray) -> np.ndarray:
    """Each content token's window when whole words are taken from one window: the window where the word's
    least central token is most central (the earlier on a tie). ``score`` is (tokens, windows), -1 where a
    window lacks the token. A word no window holds whole keeps its tokens' own windows, and so does every
    token if the words' windows would not run in order (the stitching needs non-decreasing windows)."""
    if not len(words) or np.any(words < 0) or np.any(np.diff(words) < 0):
        return token_owner
    starts = np.flatnonzero(np.r_[True, np.diff(words) != 0])
    worst = np.minimum.reduceat(score, starts, axis=0)  # (words, windows)
    best = worst.argmax(axis=1)
    whole = worst[np.arange(len(starts)), best] >= 0
    sizes = np.diff(np.r_[starts, len(words)])
    owner = np.where(np.repeat(whole, sizes), np.repeat(best, sizes), token_owner)
    return owner if np.all(np.diff(owner) >= 0) else token_owner


@dataclass(frozen=True)
class WindowGroup:
    """One step of long rows: each row's windows and, for word inputs, its word ids (else None)."""

    rows: list[WindowedRow]
    word_ids: list[np.ndarray | None]

    @property
    def n_tokens(self) -> int:
        """The tokens the step puts through the model: its windows' (overlapping), not its rows' stitched ones."""
        return int(sum(row.input_ids.size for row in self.rows))


@dataclass(frozen=True)
class WindowPass:
    """The windows ``[first, last)`` of a step (all its rows' windows in row order) run in one forward pass;
    ``takes``: ``(row, window in the pass, position)`` of the tokens each row takes from it; ``done``: the rows
    whose last window is in it."""

    first: int
    last: int
    takes: list[tuple[int, np.ndarray, np.ndarray]]
    done: list[int]


def windows_per_pass(max_tokens: int, batch_size: int, width: int) -> int:
    """Windows in one forward pass: at most ``batch_size`` sequences and ``max_tokens`` tokens (at least one)."""
    return max(1, min(batch_size, max_tokens // max(1, width)))


def window_counts(lengths: np.ndarray, n_lead: int, n_trail: int, budget: int, stride: int) -> np.ndarray:
    """The windows each row of ``lengths`` tokens (specials included) runs as."""
    return np.asarray(
        [len(window_starts(int(length) - n_lead - n_trail, budget, stride)) for length in lengths], dtype=np.int64
    )


def window_tokens(lengths: np.ndarray, max_length: int, budget: int, stride: int) -> np.ndarray:
    """The tokens each row of ``lengths`` (specials included) puts through the model: a row longer than
    ``max_length`` its windows' (each ``max_length`` tokens, ``budget`` of them text), another its own."""
    lengths = np.asarray(lengths, dtype=np.int64).copy()
    long = lengths > max_length
    lengths[long] = window_counts(lengths[long], max_length - budget, 0, budget, stride) * max_length
    return lengths


def window_groups(counts: np.ndarray, per_pass: int, passes: int = GROUP_PASSES) -> list[np.ndarray]:
    """Steps of the rows with ``counts`` windows (their positions), most windows first (a stable sort: the plan is
    a function of the counts only, as resume needs). A step closes when its windows fill whole passes, or before a
    row would take it past ``passes`` full passes; a row with more windows runs as a step of its own."""
    order = np.argsort(-np.asarray(counts), kind="mergesort")
    cap = per_pass * passes
    groups: list[np.ndarray] = []
    current: list[int] = []
    total = 0
    for position in order:
        n = int(counts[position])
        if current and total + n > cap:
            groups.append(np.asarray(current, dtype=np.int64))
            current, total = [], 0
        current.append(int(position))
        total += n
        if total % per_pass == 0 or total >= cap:
            groups.append(np.asarray(current, dtype=np.int64))
            current, total = [], 0
    if current:
        groups.append(np.asarray(current, dtype=np.int64))
    return groups


def window_passes(rows: list[WindowedRow], per_pass: int) -> Iterator[WindowPass]:
    """The forward passes of a step's windows, ``per_pass`` at a time across its rows, and what each row takes."""
    firsts = np.cumsum([0] + [row.n_windows for row in rows])
    total = int(firsts[-1])
    for first in range(0, total, per_pass):
        last = min(first + per_pass, total)
        takes, done = [], []
        for index, row in enumerate(rows):
            if firsts[index + 1] <= first or firsts[index] >= last:
                continue
            owner = row.owner + firsts[index]  # the step's window of each of the row's tokens
            taken = (owner >= first) & (owner < last)  # a contiguous run: owners never decrease
            takes.append((index, owner[taken] - first, row.position[taken]))
            if firsts[index + 1] <= last:
                done.append(index)
        yield WindowPass(first, last, takes, done)

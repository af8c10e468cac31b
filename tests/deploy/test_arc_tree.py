"""The head selector's tree decoding (featx.deploy.arc_tree): where each word's best head on its own makes a cycle or
several roots, the decoding gives a tree with one word on the root; it is the best such tree (brute force over every
head assignment of small sentences); and select_heads reports the tree's heads with their own probabilities."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from featx.deploy import attach
from featx.deploy.arc_tree import TREE, tree_heads


def _log_softmax(scores: np.ndarray) -> np.ndarray:
    top = scores.max(axis=0)
    return scores - top - np.log(np.exp(scores - top).sum(axis=0))


def _trees(n: int) -> np.ndarray:
    """Every head assignment of n words (the word itself: the root) that is a tree with exactly one root."""
    heads = np.array(list(itertools.product(range(n), repeat=n)), np.int64)
    words = np.arange(n)
    one_root = (heads == words).sum(axis=1) == 1
    at = np.tile(words, (len(heads), 1))
    for _ in range(n):  # follow each word's heads n times: in a tree, every word ends on the root word
        at = np.take_along_axis(heads, at, axis=1)
    root = np.argmax(heads == words, axis=1)
    return heads[one_root & (at == root[:, None]).all(axis=1)]


@pytest.mark.parametrize(
    "scores, argmax, tree",
    [
        # words 0 and 1 take each other (a cycle) and nothing takes the root; word 1's root score is its next best
        ([[0.0, 5.0, 0.0], [5.0, 4.0, 3.0], [0.0, 0.0, 1.0]], [1, 0, 1], [1, 1, 1]),
        # words 0 and 2 both take the root; word 2's next best head (word 1) costs less than word 0's
        ([[5.0, 3.0, 0.0], [0.0, 0.0, 4.5], [0.0, 0.0, 5.0]], [0, 0, 2], [0, 0, 1]),
    ],
)
def test_the_tree_decoding_mends_a_cycle_or_a_second_root_that_each_words_best_head_makes(scores, argmax, tree):
    scores = np.array(scores)  # [candidate, word]: the diagonal is the word on the root
    assert list(np.argmax(scores, axis=0)) == argmax
    assert list(tree_heads(scores)) == tree
    assert list(tree_heads(scores + np.array([3.0, -7.0, 1.0]))) == tree  # a constant per word changes no tree


def test_the_tree_decoding_is_the_best_single_rooted_tree_of_every_small_sentence():
    rng = np.random.default_rng(0)
    trees = {n: _trees(n) for n in range(1, 6)}
    assert [len(trees[n]) for n in range(1, 6)] == [1, 2, 9, 64, 625]  # n^(n-1) rooted trees (Cayley)
    for trial in range(40):
        n = 1 + trial % 5
        scores = rng.normal(size=(n, n)) * (3.0 if trial % 2 else 1.0) + (2.0 * np.eye(n) if trial % 3 == 0 else 0.0)
        heads = tree_heads(scores)
        log_probability = _log_softmax(scores)
        totals = log_probability[trees[n], np.arange(n)].sum(axis=1)
        assert (trees[n] == heads).all(axis=1).any(), (scores, heads)
        assert log_probability[heads, np.arange(n)].sum() == pytest.approx(totals.max(), abs=1e-9)


def test_a_tree_decodings_heads_carry_their_own_probability_among_their_candidates(monkeypatch):
    scores = np.array([[0.0, 5.0, 0.0], [5.0, 4.0, 3.0], [0.0, 0.0, 1.0]])  # the cycle of the first case above
    monkeypatch.setattr(attach, "arc_weights", lambda head, bounds: {})
    monkeypatch.setattr(attach, "pair_scores", lambda weights, states: scores)
    words = np.arange(3)
    heads, margins, probability = attach.select_heads(None, np.zeros((3, 1)), np.array([0, 3]), words, (1,), TREE)
    assert list(heads) == [1, 1, 1] and list(margins) == [5.0, 4.0, 3.0]
    assert np.allclose(probability, np.exp(_log_softmax(scores)[heads, np.arange(3)]))
    assert probability[1] < np.exp(_log_softmax(scores))[0, 1]  # word 1's tree head is not its most probable one

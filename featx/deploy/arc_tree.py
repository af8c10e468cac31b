"""The head selector's tree decoding: each sentence's heads as the dependency tree of highest score (the sum over its
words of their chosen head's log-probability among their candidates), every word with one head, no cycle, exactly one
word attached to the root (as Universal Dependencies requires), where the best candidate of each word taken alone can
make cycles and several roots, or none.

``tree_heads`` is the Chu-Liu/Edmonds maximum spanning arborescence: take each node's best incoming arc; while they
make a cycle, contract it into one node (an arc entering the cycle at ``v`` scored by how much it gains over ``v``'s
cycle arc, an arc leaving it by its best member's) and take the best arcs of the smaller graph; then expand the
contractions back. Exactly one root arc by the reduction of Gabow and Tarjan (1984): every root arc is lowered by more
than a tree's score can vary, so that the best tree has as few root arcs as possible (one), and among those the best.
Each contraction is a few numpy operations over an ``(n + 1) x (n + 1)`` matrix, at most ``n`` of them: O(n^3) at
worst, much less on real scores, whose best heads are often a tree already (then nothing else is computed).

A word's log-probabilities differ from its candidates' raw scores by one constant (the log of its softmax's
denominator), and each word takes exactly one head in any tree: the raw scores and the log-probabilities score the
trees alike. The decoding keeps the log-probabilities all the same: where two trees score exactly the same (tied
scores), the two graphs' rounding breaks the tie differently, so dropping them would change some decoded trees
(157 of 5,000 integer-valued score matrices of 2-39 words; none of 25,000 continuous ones), for about 2% of a
decoding's time.
"""

from __future__ import annotations

import numpy as np

ARGMAX, TREE = "argmax", "tree"  # the two decodings of a head selector's scores (a bundle's ``head_decode``)


def tree_heads(scores: np.ndarray) -> np.ndarray:
    """The head of each word of one sentence (a word index; the word itself: the root) in its best tree, from the
    ``(candidate, word)`` scores of every pair (the diagonal: the word attached to the root): exactly one word on the
    root, no cycle. The best candidate of each word when that is a tree already."""
    scores = np.asarray(scores, np.float64)
    n = len(scores)
    best = np.argmax(scores, axis=0)
    if n == 0 or _is_tree(best):
        return best
    log_probability = scores - scores.max(axis=0)
    log_probability -= np.log(np.exp(log_probability).sum(axis=0))
    graph = np.full((n + 1, n + 1), -np.inf)
    graph[1:, 1:] = log_probability
    graph[0, 1:] = np.diagonal(log_probability)
    np.fill_diagonal(graph, -np.inf)
    parent = max_arborescence(graph)[1:] - 1
    return np.where(parent < 0, np.arange(n), parent)


def _is_tree(heads: np.ndarray) -> bool:
    """Whether heads (the word itself: the root) put exactly one word on the root and make no cycle."""
    words = np.arange(len(heads))
    if np.count_nonzero(heads == words) != 1:
        return False
    return not _cycles(np.where(heads == words, -1, heads))


def max_arborescence(graph: np.ndarray) -> np.ndarray:
    """The parent of each node (node 0 the root, its parent -1) in the arborescence of highest total arc score from
    root 0 with exactly one arc leaving it; ``graph[h, d]``: the score of the arc h -> d (-inf: no such arc; every
    node must be reachable through finite arcs, and the root must have one). Every root arc is lowered by more than
    the arcs' scores can differ over a whole tree, so that a tree with two root arcs always scores less than any
    tree with one (Gabow and Tarjan, 1984): the best tree of the lowered graph has one root arc, and is the best
    such tree of ``graph``."""
    graph = np.array(graph, np.float64)
    finite = graph[np.isfinite(graph)]
    if len(finite):
        graph[0] -= 1.0 + len(graph) * float(finite.max() - finite.min())
    parent = np.argmax(graph, axis=0)
    parent[0] = -1
    pending, contractions = _cycles(parent), []
    while pending:
        cycle = pending.pop()
        contractions.append(_contract(graph, parent, cycle))
        again = _cycle_through(parent, int(cycle[0]))
        if again is not None:
            pending.append(again)
    for record in reversed(contractions):
        _expand(parent, record)
    return parent


def _cycles(parent: np.ndarray) -> list[np.ndarray]:
    """Every cycle of ``parent`` (-1: no parent), as arrays of its nodes."""
    state = np.zeros(len(parent), np.int8)  # 0 unvisited, 1 on the current path, 2 done
    found = []
    for start in range(len(parent)):
        path, node = [], start
        while node >= 0 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = int(parent[node])
        if node >= 0 and state[node] == 1:
            found.append(np.asarray(path[path.index(node) :], np.int64))
        state[path] = 2
    return found


def _cycle_through(parent: np.ndarray, node: int) -> np.ndarray | None:
    """The cycle of ``parent`` through ``node``, or None (its parents lead to the root, or into another cycle)."""
    path, seen, at = [node], {node}, int(parent[node])
    while at >= 0 and at not in seen:
        path.append(at)
        seen.add(at)
        at = int(parent[at])
    return np.asarray(path, np.int64) if at == node else None


def _contract(graph: np.ndarray, parent: np.ndarray, cycle: np.ndarray) -> tuple:
    """Contract ``cycle`` into its first node, in place: that node's column becomes each arc's best gain entering
    the cycle (over the cycle arc of the node it enters), its row each arc's best leaving it; the cycle's other nodes
    lose every arc. ``parent`` is kept each node's best. Returns what ``_expand`` needs."""
    node, others = int(cycle[0]), cycle[1:]
    cycle_parent = parent[cycle].copy()
    entering = graph[:, cycle] - graph[cycle_parent, cycle]  # (u, cycle node): u -> it instead of its cycle arc
    entering[cycle] = -np.inf
    enters_at, leaves_from = cycle[np.argmax(entering, axis=1)], cycle[np.argmax(graph[cycle], axis=0)]
    graph[:, node] = entering.max(axis=1)
    graph[node] = graph[cycle].max(axis=0)
    graph[node, cycle] = -np.inf
    graph[others] = -np.inf
    graph[:, others] = -np.inf
    parent[np.isin(parent, cycle)] = node  # their best arc came from the cycle, whose best that node's row now holds
    parent[node] = int(np.argmax(graph[:, node]))
    return node, cycle, cycle_parent, enters_at, leaves_from


def _expand(parent: np.ndarray, record: tuple) -> None:
    """Undo one contraction in the parents, in place: the arcs from the contracted node leave from their best cycle
    node, the arc into it enters at its best one, and the cycle's other nodes keep their cycle arcs."""
    node, cycle, cycle_parent, enters_at, leaves_from = record
    outside = np.flatnonzero(parent == node)
    source = int(parent[node])
    parent[outside] = leaves_from[outside]
    parent[cycle] = cycle_parent
    parent[enters_at[source]] = source


__all__ = ["ARGMAX", "TREE", "max_arborescence", "tree_heads"]

"""Layer summaries à la Tenney et al. (2019): the scalar-mix probe and the expected layer.

- Scalar mix: softmax weights ``s`` over the layers (and a scale ``gamma``), learned jointly with a linear
  probe on ``gamma * sum_l s_l h_l``; its **center of gravity** is ``sum_l l * s_l``.
- Cumulative scoring: the same probe mixing layers 0..l, for every l; ``delta_l`` is the test accuracy
  gained by adding layer l, and the **expected layer** is ``sum_l l * delta_l / sum_l delta_l`` (l >= 1).

Both are fitted on the first outer fold's training part (early stopping on its dev part, else on held-out
training sentences) and scored on its test part: under cross-validation one fold only (fitting the mix per fold would
multiply its cost, a torch fit per layer, by the folds), so the summary's ``scored_on`` says so and its accuracies
are not the table's cross-validated ones. All layers of the probed words are held in memory, so
at most ``MIX_BUDGET`` values (float16) are loaded: whole sentences are sampled (seeded) beyond that.
Each layer is standardised with statistics of the training words only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import evaluation as ev
from ..tasks.word_items import WordPlan, WordTask

MIX_BUDGET = 200_000_000  # float16 values of (words x layers x hidden) held for the layer summaries
MIN_GAIN = 0.005  # total accuracy gained over layer 0 below which no expected layer is reported
TRAIN_SHARE = 0.7  # when sampling: the budget's share of the training (and validation) sentences; the rest, test


@dataclass
class MixData:
    states: np.ndarray  # (n_selected_words, n_layers, H) float16
    items: np.ndarray  # (n_items,) or (n_items, 2) positions in ``states`` of each item's word(s)
    y: np.ndarray
    train: np.ndarray  # positions in ``items``
    val: np.ndarray
    test: np.ndarray
    layers: list[int]
    sampled: bool  # True when whole sentences were sampled to fit the budget
    n_folds: int = 1  # the plan's outer folds (1: a split), of which the first is fitted and scored


def _take_sentences(rows: np.ndarray, groups: np.ndarray, lengths: np.ndarray, cap: int, rng) -> np.ndarray:
    """Sentences of ``rows`` in a seeded random order, as many as fit in ``cap`` words (at least one)."""
    sentences = np.unique(groups[rows])
    rng.shuffle(sentences)
    total = np.cumsum(lengths[sentences])
    return sentences[: max(1, int(np.searchsorted(total, cap, side="right")))]


def load_mix_data(
    source, task: WordTask, plan: WordPlan, pooling: str, layers: list[int], seed: int, budget: int = MIX_BUDGET
) -> MixData:
    """The first outer fold's items with every layer of their words, within ``budget`` values."""
    offsets = np.asarray(source.word_offsets(), dtype=np.int64)
    lengths = np.diff(offsets)
    (train, test), dev = plan.folds[0], plan.dev[0]
    if dev is None:
        train, dev = ev.inner_split(task.y, train, seed, task.groups)
    fit_rows = np.concatenate([train, dev])
    rng = np.random.default_rng(seed + 31)
    first = source.word_features(pooling, layers[0], dtype=np.float16)
    hidden = first.shape[1]
    cap = max(1, budget // (len(layers) * hidden))
    everything = np.unique(task.groups[np.concatenate([fit_rows, test])])
    if lengths[everything].sum() <= cap:
        chosen = everything
    else:
        chosen = np.concatenate(
            [
                _take_sentences(fit_rows, task.groups, lengths, int(cap * TRAIN_SHARE), rng),
                _take_sentences(test, task.groups, lengths, int(cap * (1 - TRAIN_SHARE)), rng),
            ]
        )
    sampled = len(chosen) < len(everything)
    words = np.sort(np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in chosen]))
    states = np.empty((len(words), len(layers), hidden), np.float16)
    states[:, 0] = first[words]
    del first
    for position, layer in enumerate(layers[1:], start=1):  # one layer in memory at a time
        states[:, position] = source.word_features(pooling, layer, dtype=np.float16)[words]
    keep = np.isin(task.groups, chosen)
    items = np.searchsorted(words, task.words)

    def part(rows):
        return rows[keep[rows]]

    return MixData(states, items, task.y, part(train), part(dev), part(test), list(layers), sampled, len(plan.folds))


def _build(n_layers: int, hidden: int, n_classes: int, arcs: bool):
    import torch
    from torch import nn

    class ScalarMixProbe(nn.Module):
        def __init__(self):
            super().__init__()
            self.logits = nn.Parameter(torch.zeros(n_layers))
            self.gamma = nn.Parameter(torch.ones(1))
            self.linear = nn.Linear(hidden * (3 if arcs else 1), n_classes)

        def weights(self):
            return torch.softmax(self.logits, dim=0)

        def mix(self, states):
            return self.gamma * torch.einsum("blh,l->bh", states, self.weights())

        def forward(self, batch):
            if not arcs:
                return self.linear(self.mix(batch))
            head, dependent = self.mix(batch[0]), self.mix(batch[1])
            return self.linear(torch.cat([head, dependent, head * dependent], dim=1))

    return ScalarMixProbe()


class _Inputs:
    """Standardised float32 layer stacks of the items asked for (one or two words per item).

    Every word's first ``upto`` layers are standardised once, in blocks, when the probe is built: the
    epochs then only gather rows (the same values as standardising each batch as it is drawn)."""

    def __init__(self, data: MixData, upto: int):
        self.data, self.upto = data, upto
        rows = data.items[data.train].ravel()
        sample = data.states[np.unique(rows), :upto].astype(np.float32)
        self.mean = sample.mean(axis=0)
        std = sample.std(axis=0)
        std[std < 1e-6] = 1.0
        self.scale = std
        del sample
        self.standard = np.empty((len(data.states), upto, data.states.shape[2]), np.float32)
        for start in range(0, len(data.states), 4096):
            block = data.states[start : start + 4096, :upto].astype(np.float32)
            self.standard[start : start + 4096] = (block - self.mean) / self.scale

    def _stack(self, positions):
        import torch

        return torch.from_numpy(self.standard[positions])

    def __call__(self, rows):
        items = self.data.items[rows]
        if items.ndim == 1:
            return self._stack(items)
        return self._stack(items[:, 0]), self._stack(items[:, 1])


def fit_mix(data: MixData, upto: int, n_classes: int, seed: int) -> tuple[np.ndarray, float]:
    """The scalar-mix probe over the first ``upto`` layers: (softmax weights, test accuracy)."""
    import torch

    from ..solvers import classifiers as clf

    torch.manual_seed(seed)
    inputs = _Inputs(data, upto)
    model = _build(upto, data.states.shape[2], n_classes, data.items.ndim == 2)
    batch = int(np.clip(len(data.train) // 20, 16, 256))  # at least ~20 steps an epoch on small data
    clf.train_head(
        model,
        inputs,
        data.y,
        data.train,
        data.val,
        n_classes,
        seed,
        lr=1e-2,
        weight_decay=0.0,
        batch_size=batch,
        max_epochs=40,
        patience=4,
    )
    predicted = clf.head_scores(model, inputs, data.test, batch_size=1024).argmax(axis=1)
    with torch.no_grad():
        weights = model.weights().numpy().astype(np.float64)
    return weights, float(np.mean(predicted == data.y[data.test]))


def layer_summary(data: MixData, n_classes: int, seed: int) -> dict:
    """Scalar-mix weights and center of gravity, cumulative accuracies, gains and the expected layer."""
    layers = data.layers
    cumulative: list[float] = []
    weights = np.ones(0)
    for upto in range(1, len(layers) + 1):
        weights, accuracy = fit_mix(data, upto, n_classes, seed)
        cumulative.append(accuracy)
    gains = np.diff(cumulative)
    total = float(np.sum(gains))
    # No gain beyond layer 0 (or less than MIN_GAIN in all): the ratio would be noise over noise.
    expected = float(np.dot(layers[1:], gains) / total) if total >= MIN_GAIN else None  # None: JSON null
    return {
        "layers": list(layers),
        "weights": [round(float(w), 6) for w in weights],
        "center_of_gravity": center_of_gravity(layers, weights),
        "mix_accuracy": cumulative[-1],
        "cumulative_accuracy": [round(value, 6) for value in cumulative],
        "gains": [round(float(value), 6) for value in gains],
        "expected_layer": expected,
        "n_train": int(len(data.train)),
        "n_val": int(len(data.val)),
        "n_test": int(len(data.test)),
        "sampled": bool(data.sampled),
        "scored_on": "the test split"
        if data.n_folds == 1
        else f"the first fold's test part only (1 of {data.n_folds} folds, not cross-validated)",
    }


def center_of_gravity(layers, weights) -> float:
    return float(np.dot(np.asarray(layers, float), np.asarray(weights, float)))

"""A tiny-model features file whose rows come in groups (``doc``) that share a spurious signal: every row of a
group is a near-duplicate of the group's own random vector, and the label is the group's, drawn independently
of that vector. A probe that sees other rows of a test row's group scores high by memorising the group; by
whole groups it is at chance. Columns: ``text``, ``label`` (neg/pos, one per group), ``doc`` (the group),
``score`` (a number per group), ``partial`` (``doc`` with one row's group left empty), and with ``split`` a
split column keeping groups whole (``leaky_split``: one group ``d1`` in both train and test).
``plant_layer_choice`` then gives the layers different stories: the spurious group signal in one, a genuine
label signal in another (what ``featx fit --group`` must choose between)."""

from __future__ import annotations

import random

import h5py
import numpy as np

import featx
from support.tiny import WORDS, write_csv

N_GROUPS, PER_GROUP = 24, 5


# Group columns probe and fit refuse (one check, shared), each with its message: an unknown column, a labelled row
# without a group, no more groups than folds, the label itself. featx.probe and featx.fit name the keyword
# (group='topic'), erase, neurons and the sweep from Python the flag (--group topic).
GROUP = r"(?:--group |group=')"
BAD_GROUPS = [
    (dict(group="topic"), GROUP + "topic'?: no label column 'topic'"),
    (dict(group="partial"), GROUP + "partial'?: 1 of the 120 labelled rows have no group"),
    (dict(group="doc", folds=24), "only 24 group"),
    (dict(group="label"), GROUP + "label'? is the label probed"),
]


def make_grouped(folder, tiny_model, split: bool = False, leaky_split: bool = False, seed: int = 0):
    rng = random.Random(seed)
    rows = []
    for group in range(N_GROUPS):
        label = ("neg", "pos")[rng.random() < 0.5] if group >= 2 else ("neg", "pos")[group]
        for member in range(PER_GROUP):
            text = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 8)))
            partial = "" if (group, member) == (3, 0) else f"d{group}"
            row = [text, label, f"d{group}", f"{1.5 * group + 0.25 * (group % 3):.2f}", partial]
            if split or leaky_split:
                side = "test" if group % 4 == 0 else "train"
                row.append("test" if leaky_split and group == 1 and member == 0 else side)
            rows.append(row)
    header = ("text", "label", "doc", "score", "partial") + (("split",) if split or leaky_split else ())
    corpus = write_csv(folder / "corpus.csv", rows, header=header)
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    _plant(output, seed)
    return output


def _plant(path, seed: int) -> None:
    """Each row: its group's random vector plus a little noise (the label plays no part)."""
    noise = np.random.default_rng(seed)
    with h5py.File(path, "r+") as file:
        shape = file["pooled/mean"].shape
        group = np.repeat(np.arange(N_GROUPS), PER_GROUP)
        centres = noise.standard_normal((N_GROUPS, shape[1], shape[2]))
        data = centres[group] + 0.05 * noise.standard_normal(shape)
        file["pooled/mean"][...] = data.astype(file["pooled/mean"].dtype)


def plant_layer_choice(path, seed: int = 0) -> None:
    """Layer 1 holds the groups' spurious vectors (as ``_plant``), layer 2 a genuine but noisy label signal
    (one direction, the row's class sign, plus row noise), layer 0 noise only: cross-validation that splits
    groups prefers layer 1, by whole groups layer 2."""
    noise = np.random.default_rng(seed + 1)
    with h5py.File(path, "r+") as file:
        dataset = file["pooled/mean"]
        rows, _, width = dataset.shape
        sign = 2.0 * file["labels/label"][:].astype(np.float64) - 1.0
        group = np.repeat(np.arange(N_GROUPS), PER_GROUP)
        data = noise.standard_normal(dataset.shape)
        data[:, 1] = noise.standard_normal((N_GROUPS, width))[group] + 0.05 * noise.standard_normal((rows, width))
        data[:, 2, 0] += 1.5 * sign
        dataset[...] = data.astype(dataset.dtype)

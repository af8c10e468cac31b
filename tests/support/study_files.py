"""The study tests' world: two tiny corpora with a train/test split, a corpus without a text column (its
extraction fails), the test study over them as a dict, and that dict as a study file."""

from __future__ import annotations

from pathlib import Path

from support.probe_data import make_rows
from support.tiny import write_csv


def write_corpora(folder: Path) -> dict[str, Path]:
    """``sents.csv`` (label, topic; 40 rows in 15 documents, ``doc``, each on one side of the split), ``other.csv``
    (topic only; 32 rows), ``bad.csv`` (no text)."""
    folder.mkdir(parents=True, exist_ok=True)
    header = ("text", "label", "topic", "split", "doc")
    rows = [
        [*row, f"t{i // 8}" if i % 4 == 0 else f"r{i // 4}"] for i, row in enumerate(make_rows(40, seed=1, split=True))
    ]
    sents = write_csv(folder / "sents.csv", rows, header=header)
    rows = [[text, topic, split] for text, _, topic, split in make_rows(32, seed=2, split=True)]
    other = write_csv(folder / "other.csv", rows, header=("text", "topic", "split"))
    bad = folder / "bad.csv"
    bad.write_text("words,label\nhello,a\n")
    return {"sents": sents, "other": other, "bad": bad}


def study_dict(model: Path, corpora: dict[str, Path], output: Path, bad: bool = True, **study) -> dict:
    """The test study: two models x the corpora (``sents`` grouped by ``doc``: its probes keep each document
    whole; ``other`` has only ``topic``; ``bad`` has no text column: its extractions fail), mean pooling, every
    layer, a short bootstrap. (A label a corpus lacks is refused before any cell runs: ``test_study_columns``.)"""
    entries = [
        {"name": "sents", "path": str(corpora["sents"]), "labels": ["label", "topic"], "group": "doc"},
        {"name": "other", "path": str(corpora["other"]), "labels": ["topic"]},
    ]
    if bad:
        entries.append({"name": "bad", "path": str(corpora["bad"]), "labels": ["label"]})
    return {
        "study": {"output": str(output), **study},
        "models": [{"name": "tiny", "model": str(model)}, {"name": "rand", "model": str(model), "random_init": True}],
        "corpora": entries,
        "extract": {"pooling": "mean"},
        "probe": {"layer": "all", "n_bootstrap": 200},
    }


def to_toml(study: dict) -> str:
    """The test study dict as a study file (``featx.study.study_toml``)."""
    from featx.study import study_toml

    return study_toml(study)


def worker_dies(**_: object) -> dict:
    """A study task's function that ends its worker process at once, as an out-of-memory kill would."""
    import os

    os._exit(1)


def worker_lives(**_: object) -> dict:
    """A study task's function that does nothing."""
    return {}


def pid_after_a_moment() -> int:
    """A worker's process id, after a short sleep (so that calls in flight spread over a pool's workers)."""
    import os
    import time

    time.sleep(0.05)
    return os.getpid()

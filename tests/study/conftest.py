"""The study tests' world: two tiny corpora with a train/test split, a corpus without a text column (its
extraction fails), and a study of two models (the tiny BERT and its random-weights control) over them, run
once per session (``done_study``); tests that run a study of their own write elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.study_files import study_dict, write_corpora

import featx.study


@pytest.fixture(scope="session")
def study_corpora(tmp_path_factory) -> dict[str, Path]:
    return write_corpora(tmp_path_factory.mktemp("study-corpora"))


@pytest.fixture(scope="session")
def done_study(tiny_model, study_corpora, tmp_path_factory):
    """``(study dict, StudyResult)`` of the test study run once, uninterrupted; never write into it."""
    study = study_dict(tiny_model, study_corpora, tmp_path_factory.mktemp("done-study") / "out")
    lines: list[str] = []
    result = featx.study.run(study, echo=lines.append)
    return study, result, lines

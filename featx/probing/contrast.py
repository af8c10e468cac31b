"""Contrast pairs (``featx extract --contrast``): what a probe reads from such a file.

Each row's prompt ran once per answer; answer 0's states are the file's ordinary datasets and answer ``k``'s the
site ``answer_k`` (``featx.store.schema.contrast_site``). The supervised probe of ``featx probe`` reads the
difference of the first two answers' states, as elk's and CCS's probes of contrast pairs do. CCS itself (the
unsupervised consistency objective) is not implemented.
"""

from __future__ import annotations

import numpy as np

from .. import store
from ..errors import InputError
from ..safe_files import loads_json


def contrast_answers(features) -> list[str]:
    """The answers of a ``--contrast`` file (empty for any other file)."""
    raw = features.attrs.get(store.schema.CONTRAST)
    if not raw:
        return []
    answers = loads_json(raw)
    if not isinstance(answers, list) or len(answers) < 2 or not all(isinstance(answer, str) for answer in answers):
        raise InputError(f"{features.path}: attribute '{store.schema.CONTRAST}' is not a list of answers")
    return answers


def contrast_difference(features, pooling: str, layer: int) -> np.ndarray:
    """Answer 0's features minus answer 1's, in float32 (what the probe of a ``--contrast`` file reads)."""
    answers = contrast_answers(features)
    if len(answers) != 2:
        raise InputError(
            f"{features.path} holds {len(answers)} answers per row ({', '.join(answers)}); the probe of the "
            "difference needs two",
            "extract with two answers, e.g. --contrast 'True,False'",
        )
    first = np.asarray(features.features(pooling, layer), dtype=np.float32)
    return first - np.asarray(features.features(pooling, layer, site=store.schema.contrast_site(1)), dtype=np.float32)

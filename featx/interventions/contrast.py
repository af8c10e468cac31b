"""The steering dose-response read through a decoder's contrast answers (``featx intervene --edit steer --template
T --answers A``): each row's text inside the prompt ``T``, the model's own final norm and unembedding (the logit
lens's head, ``featx.logit_lens``) read at the prompt's last token for the answer of every class of the label,
and per alpha, with the steering direction and with a seeded random direction of equal norm:

- ``moved``: the share of rows whose answer logit difference (the ``--toward`` class's answer's logit minus the
  mean of the other answers') rose, with its 95% Wilson interval;
- ``flipped``: among the rows whose arg-max answer was not the ``--toward`` class's, the share whose arg-max
  answer is that class's after;
- ``score_change``: the mean change of the logit difference, with its 95% Student-t interval.

The rows measured, and the direction each is steered along, are ``steer_rows.py``'s (never a row the direction was
computed from); with ``--group`` the intervals are by whole groups. The answers, the head and the prompt are
checked before any forward pass (``prepare_contrast``). Alpha 0 moves nothing by construction (the logits are the
unedited pass's, bit for bit: each part's rows run in the same batches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..store import open_features
from .config import said
from .edits import run_steered
from .provenance import embed_options
from .result import STEER_COLUMNS, InterveneResult
from .stats import mean_interval, share_interval
from .steer_rows import Steering
from .steering import steer_meta, steer_record

ANSWER_COLUMNS = [*STEER_COLUMNS, "flipped", "flipped_low", "flipped_high"]


@dataclass(frozen=True)
class Contrast:
    """The head, each class's answer token (the label's class order), the class steered toward, and the prompt's
    in-memory extraction (the last token's state of the top layer)."""

    head: Any  # featx.logit_lens.LensHead
    token_ids: tuple[int, ...]
    column: int
    classes: tuple[str, ...]
    config: Any  # the ExtractConfig of the prompts
    described: str
    top: int  # the stored layer read: the last block's output (after a decoder's final norm)


def _classes(plan) -> list[str]:
    with open_features(plan.features) as features:
        names = [str(name) for name in features.label_names(plan.label)]
    toward = str(plan.config.toward)
    if toward not in names:
        raise InputError(
            f"{said('toward', toward)}: label '{plan.label}' has no such class (its classes: {', '.join(names)})",
            "steer toward one of the label's classes",
        )
    return names


def prepare_contrast(plan) -> Contrast | None:
    """The contrast answers of ``--answers`` checked against the model's tokenizer, head and label (None without
    ``--answers``): one line (``InputError`` or ``ModelError``) before any forward pass."""
    config, provenance = plan.config, plan.provenance
    if config.answers is None:
        return None
    from ..extraction import embed_config, load_tokenizer, weight_files
    from ..logit_lens import answer_token_ids, check_decoder_prompt, load_head, parse_answers

    if not provenance.causal:
        raise InputError(
            f"--answers reads a decoder's next-token answer, and {provenance.model} is an encoder",
            "read the steering with --bundle (a probe above the edit), or extract with a decoder",
        )
    answers = parse_answers(config.answers)
    names = _classes(plan)
    order = answers.classes_to_answers(names, plan.label)
    folder = provenance.model_folder
    head = load_head(folder, weight_files(folder), provenance.model)  # a ModelError without an LM head
    tokenizer = load_tokenizer(str(folder))
    ids = answer_token_ids(answers, tokenizer, provenance.model)
    top = provenance.n_layers - 1
    options = {**embed_options(provenance, config.device, config.progress), "layers": str(top), "poolings": "at"}
    prompts = embed_config([], None, **options, template=config.template, pool_at="last")  # @FILE read, as extract
    check_decoder_prompt(str(prompts.template), "text", tokenizer, provenance.model)
    token_ids = tuple(ids[index] for index in order)
    return Contrast(
        head,
        token_ids,
        names.index(str(config.toward)),
        tuple(names),
        prompts,
        answers.describe(names, plan.label),
        top,
    )


def answer_logits(forward, contrast: Contrast, steered=None, rows=None) -> np.ndarray:
    """Each row's (each of the file ``rows``', default every row's) logits of the classes' answers ``(rows,
    classes)`` at the prompt's last token, unedited or ``steered`` (``(plan, direction, alpha)``)."""
    import torch

    if steered is None:
        embeddings = forward.run((), contrast.config, rows)
    else:
        plan, direction, alpha = steered
        embeddings = run_steered(plan, forward, direction, alpha, contrast.config, rows)
    states = torch.as_tensor(np.asarray(embeddings.array(contrast.top, "at"), np.float32))
    with torch.inference_mode():
        logits = contrast.head.logits(states, last_layer=True, token_ids=list(contrast.token_ids))
    return logits.double().numpy()


def logit_difference(logits: np.ndarray, column: int) -> np.ndarray:
    """The ``column`` answer's logit minus the mean of the other answers' logits, per row."""
    return logits[:, column] - np.delete(logits, column, axis=1).mean(axis=1)


def _record(alpha: float, name: str, layer: int, before: np.ndarray, after: np.ndarray, column: int, groups) -> dict:
    rise = logit_difference(after, column) - logit_difference(before, column)
    candidates = before.argmax(axis=1) != column
    held = None if groups is None else groups[candidates]
    flipped = share_interval((after.argmax(axis=1) == column)[candidates], groups=held)
    moved, change = share_interval(rise > 0, groups=groups), mean_interval(rise, groups)
    return {
        **steer_record(alpha, name, layer, "answers", moved, change, len(rise)),
        **dict(zip(("flipped", "flipped_low", "flipped_high"), flipped, strict=True)),
    }


def answer_dose_response(plan, forward, contrast: Contrast, steering: Steering, started: float) -> InterveneResult:
    """The dose-response of ``steering`` (``steer_rows.steering_rows``: each part's rows along its direction, and
    the random one) read through the answers."""
    config = plan.config
    groups = steering.groups(plan)
    before = steering.gather(lambda rows, _: answer_logits(forward, contrast, rows=rows))
    records = []
    for alpha in config.alphas:
        for name in ("probe", "random"):

            def read(rows, vector, alpha=alpha):
                return answer_logits(forward, contrast, (plan, vector, alpha), rows)

            after = steering.gather(read, name)
            records.append(_record(alpha, name, plan.at[0], before, after, contrast.column, groups))
    reader = {
        "bundle": str(config.bundle) if config.bundle is not None else None,
        "label": plan.label,
        "read_at": "answers",
        "reader": f"the answers at the end of {contrast.config.template!r} ({contrast.described})",
    }
    notes = [*plan.notes, *steering.notes]
    meta = steer_meta(plan, steering, started, notes, reader)
    return InterveneResult(pd.DataFrame(records, columns=ANSWER_COLUMNS), meta, plan.output, notes)


__all__ = [
    "ANSWER_COLUMNS",
    "Contrast",
    "answer_dose_response",
    "answer_logits",
    "logit_difference",
    "prepare_contrast",
]

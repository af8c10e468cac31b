"""The language-modelling loss before and after an edit, where the checkpoint holds an LM head: masked-token loss for
encoders (15% of each row's tokens masked, chosen with the seed, the same for every pass) and next-token loss for
decoders, per row, the edit applied by the same hooks on the LM model's blocks. Whether the head is there is read
from the checkpoint itself: transformers reports every head weight it had to initialise, and a head made up at load
would measure nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from .config import MASK_RATE, said
from .stats import mean_interval, paired_p_value

BATCH = 16


def lm_model(plan):
    """``(model, None)`` with the checkpoint's LM head (on the CPU), or ``(None, why)`` without one; with ``--loss
    yes``, no head is an ``InputError`` (before the model is run at all)."""
    if plan.config.loss == "no":
        return None, f"not asked ({said('loss', 'no')})"
    why = None
    if plan.provenance.options.get("random_init"):
        why = "the features come from a randomly initialised model, which has no trained LM head"
    model = None
    if why is None:
        model, why = _load_head(plan)
    if model is None and plan.config.loss == "yes":
        raise InputError(
            f"{said('loss', 'yes')}: {why}",
            "leave --loss at auto (the loss is then skipped), or use a checkpoint with an LM head",
        )
    return model, why


def _load_head(plan):
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # as featx's own loading does

    kind = AutoModelForCausalLM if plan.provenance.causal else AutoModelForMaskedLM
    folder = str(plan.provenance.model_folder)
    from ..extraction import quiet_load_report

    try:
        with quiet_load_report():
            model, info = kind.from_pretrained(
                folder, output_loading_info=True, use_safetensors=True, trust_remote_code=False, dtype=torch.float32
            )
    except (ValueError, OSError, KeyError) as err:
        what = "causal" if plan.provenance.causal else "masked"
        first = str(err).splitlines()[0][:120] if str(err) else type(err).__name__
        return None, f"{plan.provenance.model} has no {what} LM head class ({first})"
    missing = sorted(info.get("missing_keys") or [])  # a set: its order changes with the hash seed
    if missing:
        return None, f"the checkpoint of {plan.provenance.model} holds no LM head weights (missing {missing[0]} ...)"
    return model.eval(), None


def _padded(tokenizer, texts, max_length: int):
    """Token ids and attention mask of ``texts``, padded on the right by hand (a decoder's tokenizer may have no
    pad token; the padded positions are masked and never scored, so the pad id does not matter)."""
    import torch

    encoded = tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    width = max(len(ids) for ids in encoded)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.full((len(encoded), width), pad, dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    for row, tokens in enumerate(encoded):
        ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        mask[row, : len(tokens)] = 1
    return ids, mask


def _masked(tokenizer, ids, mask, rng):
    """BERT's masking: 15% of each row's tokens (at least one; no special token) replaced by the mask token;
    the labels are the original ids there and -100 elsewhere."""
    import torch

    special = torch.zeros_like(mask, dtype=torch.bool)
    for token in tokenizer.all_special_ids:
        special |= ids == token
    candidates = (mask == 1) & ~special
    chosen = torch.zeros_like(candidates)
    for row in range(len(ids)):
        where = np.flatnonzero(candidates[row].numpy())
        if len(where):
            count = max(1, round(MASK_RATE * len(where)))
            chosen[row, rng.choice(where, size=count, replace=False)] = True
    labels = ids.masked_fill(~chosen, -100)
    return ids.masked_fill(chosen, tokenizer.mask_token_id), labels


def _batches(tokenizer, texts, max_length: int, causal: bool, seed: int):
    rng = np.random.default_rng(seed)
    for start in range(0, len(texts), BATCH):
        ids, mask = _padded(tokenizer, texts[start : start + BATCH], max_length)
        if causal:
            yield ids, mask, ids.masked_fill(mask == 0, -100)
        else:
            inputs, labels = _masked(tokenizer, ids, mask, rng)
            yield inputs, mask, labels


def _row_inputs(tokenizer, texts, max_length: int, causal: bool, seed: int) -> list[tuple]:
    """Each row's (input ids, labels), its masks drawn once with the seed in the rows' order: every pass, over any
    of the rows, scores each row with the same masks."""
    rows = []
    for ids, mask, labels in _batches(tokenizer, texts, max_length, causal, seed):
        for row in range(len(ids)):
            width = int(mask[row].sum())
            rows.append((ids[row, :width], labels[row, :width]))
    return rows


def _subset_batches(inputs: list[tuple], rows, pad: int):
    """Batches of the rows ``rows`` of ``inputs``, padded on the right (padded positions masked, never scored)."""
    import torch

    for start in range(0, len(rows), BATCH):
        chosen = [inputs[int(row)] for row in rows[start : start + BATCH]]
        width = max(len(ids) for ids, _ in chosen)
        ids = torch.full((len(chosen), width), pad, dtype=torch.long)
        labels = torch.full((len(chosen), width), -100, dtype=torch.long)
        mask = torch.zeros((len(chosen), width), dtype=torch.long)
        for row, (tokens, targets) in enumerate(chosen):
            ids[row, : len(tokens)], labels[row, : len(tokens)], mask[row, : len(tokens)] = tokens, targets, 1
        yield ids, mask, labels


@dataclass
class LMHead:
    """The checkpoint's LM model, where its blocks are, each row's inputs (masks drawn once) and its unedited
    per-row losses (computed once)."""

    model: Any
    path: str
    inputs: list = field(default_factory=list)
    base: np.ndarray | None = None


def head_of(model, forward, plan) -> LMHead:
    """The LM model on the forward passes' device, with where its blocks are and each row's masked inputs."""
    from ..extraction import edit_block_path

    model = model.to(forward.loaded.device)
    tokenizer, causal = forward.loaded.tokenizer, plan.provenance.causal
    inputs = _row_inputs(tokenizer, forward.texts, forward.loaded.max_length, causal, plan.config.seed)
    return LMHead(model, edit_block_path(model, forward.n_blocks, forward.loaded.device), inputs)


def row_losses(plan, forward, head: LMHead, maps=(), rows=None) -> np.ndarray:
    """Each row's (of the file rows ``rows``, default every row) mean loss over its masked (or predicted) tokens,
    with ``maps`` applied inside the pass."""
    import torch

    from ..extraction import EditHooks

    device, tokenizer = forward.loaded.device, forward.loaded.tokenizer
    causal, model = plan.provenance.causal, head.model
    rows = np.arange(len(head.inputs)) if rows is None else np.asarray(rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out = []
    with torch.inference_mode(), EditHooks(model, head.path, forward.n_blocks, maps):
        for ids, mask, labels in _subset_batches(head.inputs, rows, pad):
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()
            labels = labels.to(device)
            if causal:
                logits, labels = logits[:, :-1], labels[:, 1:]
            losses = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), labels, ignore_index=-100, reduction="none"
            )
            counts = (labels != -100).sum(dim=1).clamp(min=1)
            out.append((losses.sum(dim=1) / counts).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def _held_losses(plan, forward, head: LMHead, edits, maps: dict) -> np.ndarray:
    """The loss of every measured row (``edits.measured``) on the pass of ``maps``' edit whose fit never saw it
    (``edits.held``: its fold's eraser without a split)."""
    rows = edits.measured
    out = np.full(len(rows), np.nan)
    for key, held in edits.held.items():
        if len(held):
            out[np.searchsorted(rows, held)] = row_losses(plan, forward, head, (maps[key],), held)
    return out


def loss_row(plan, forward, head: LMHead, edits) -> dict:
    """The loss before, after and after the control (means over the measured rows, with intervals), and the paired
    t-tests of after against before and against the control (with ``--group``, both by whole groups). Each row is
    read on the pass of an edit (and its control) fitted without it (``passes.py``)."""
    from .outputs import output_record

    if head.base is None:
        head.base = row_losses(plan, forward, head)
    rows = edits.measured
    base = head.base[rows]
    after = _held_losses(plan, forward, head, edits, edits.erasers)
    controlled = _held_losses(plan, forward, head, edits, edits.controls)
    groups = None if plan.row_groups is None else plan.row_groups[rows]
    values = {key: mean_interval(losses, groups) for key, losses in (("before", base), ("after", after))}
    values["control"] = mean_interval(controlled, groups)
    name = "next-token loss" if plan.provenance.causal else "masked-token loss"
    record = output_record(name, "loss", max(plan.stored_layers), values)
    for key, other in (("p_after", base), ("p_control", controlled)):
        same = np.allclose(after, other)
        record[key] = 1.0 if same else paired_p_value(after, other, groups)
    return record


__all__ = ["LMHead", "head_of", "lm_model", "loss_row", "row_losses"]

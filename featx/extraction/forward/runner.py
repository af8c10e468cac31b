"""``Runner``: one batch's forward pass and the on-device pooling of every site, hidden included."""

from __future__ import annotations

import contextlib
import copy
import os
import weakref

import numpy as np
import torch

from ...store import contrast_site
from ..edits.hooks import EditHooks
from ..fast import fuse
from ..fast.deberta import band_relative_attention
from ..fast.onednn import min_packed_elements, prepack_linears
from ..fast.select import NATIVE
from ..model.loading import LoadedModel
from ..plan import ExtractionPlan
from ..tokens.long_windows import WindowGroup, window_passes, windows_per_pass
from .pair_runner import SEGMENT_FUNCTIONS, pair_inputs, takes_type_ids
from .pooling import POOLING_FUNCTIONS, PROMPT_FUNCTIONS, make_pooler_pool, prompt_masks
from .sites import SiteRecorder
from .truncation import truncated_states
from .word_pooling import pool_words

# The float32 copy of each half-precision model's pooler, made once: a later Runner on the same loaded model
# (featx.extraction.encode and featx predict build one per chunk) finds the pooler's linear layer already
# prepacked for oneDNN, whose opaque weights cannot be copied.
_FLOAT_POOLERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

# FEATX_COPY_STREAM=1 (CUDA only): the pooled outputs go to the host on a side stream, so that the next batch's
# forward pass does not queue behind their copies on the compute stream. Off by default until a GPU lease
# measures it (bench/gpu_loop.py runs the batch loop both ways).
COPY_STREAM_ENV = "FEATX_COPY_STREAM"


def _pooler_head(loaded: LoadedModel):
    """The model's pooler head and the dtype it runs in (float32 under bf16/fp16 compute). ALBERT's ``pooler`` is a
    bare linear layer whose tanh is a module apart (``pooler_activation``, applied in its forward after it): the
    head is both, as transformers' ``pooler_output`` is (the linear alone left the tanh out)."""
    pooler = getattr(loaded.model, "pooler", None)
    activation = getattr(loaded.model, "pooler_activation", None)
    if pooler is not None and isinstance(activation, torch.nn.Module):
        pooler = torch.nn.Sequential(pooler, activation)
    if pooler is not None and loaded.dtype in (torch.bfloat16, torch.float16):
        # At the middle layers the pooler's tanh saturates and the information sits in 1 - tanh(z),
        # which bf16 cannot hold (its spacing below 1 is 2^-8): probes of bf16 pooler features lost
        # 1.5-2.9 points there. The head is one small matrix product per row: run it in float32.
        if loaded.model not in _FLOAT_POOLERS:
            _FLOAT_POOLERS[loaded.model] = copy.deepcopy(pooler).float()
        return _FLOAT_POOLERS[loaded.model], torch.float32
    return pooler, None


class Runner:
    """Forward pass plus on-device pooling for one batch, as ``plan`` says.

    Returns ``({dataset path: CPU tensor}, event)``: for every site, each pooling's ``(B, L_site, W)``
    rows and, with ``--tokens``, the ``(real tokens, L_site, W)`` token-level states in batch order.
    ``event`` (CUDA only) marks when the copies to the host are done. Hooks for sites besides hidden
    are attached by ``hooks()``, after the model has been set up here.
    """

    def __init__(self, loaded: LoadedModel, plan: ExtractionPlan):
        self.model = loaded.model
        self.device = loaded.device
        self.plan = plan
        pooler, pooler_dtype = _pooler_head(loaded)
        # Modules read by hooks must compute what the plain model computes: never fuse them away.
        hooked = {tap.module for site in plan.hooked for tap in site.taps}
        self.packed_linears = prepack_linears(
            self.model, self.device, loaded.dtype, keep=hooked, min_elements=min_packed_elements()
        )
        self.banded_attention = band_relative_attention(self.model, self.device, loaded.dtype)  # DeBERTa, CPU
        # FEATX_FUSE=1, featx's own BERT prepacked: query/key/value as one linear, residual adds in the linears.
        self.fused_blocks = fuse.fuse_bert(self.model) if fuse.requested() and not hooked else 0
        self.functions = {
            name: (
                make_pooler_pool(pooler, pooler_dtype)
                if name == "pooler"
                else POOLING_FUNCTIONS.get(name) or PROMPT_FUNCTIONS.get(name) or SEGMENT_FUNCTIONS[name]
            )
            for name in plan.poolings
        }
        self.type_ids = takes_type_ids(loaded)  # sentence pairs: whether tokenizer(a, b) hands the model type ids
        self.store_dtype = torch.float16 if np.dtype(plan.store_dtype) == np.float16 else torch.float32
        self.recorder: SiteRecorder | None = None
        self.contrast_sites = {contrast_site(k) for k in range(1, len(plan.sites))}
        tokenizer = loaded.tokenizer
        self.special_ids = (tokenizer.cls_token_id, tokenizer.sep_token_id)
        self.n_blocks = loaded.n_layers - 1  # block calls per full pass (the edits count them)
        # featx's own encoders take the host's copy of the padding mask: they check it for padding there, not on
        # the device, whose answer would wait for every batch queued before (fast/bert.py, sdpa_mask)
        self.host_mask = loaded.implementation == NATIVE
        side = self.device.type == "cuda" and os.environ.get(COPY_STREAM_ENV, "0") == "1"
        self.copy_stream = torch.cuda.Stream(self.device) if side else None

    def hooks(self):
        """The hooks of the sites besides hidden and of the edits (``--intervene``), as a context manager (a
        no-op when there are none)."""
        self.recorder = SiteRecorder(self.model, list(self.plan.hooked))
        return self._edited(self.recorder) if self.plan.edits else self.recorder

    @contextlib.contextmanager
    def _edited(self, recorder: SiteRecorder):
        assert self.plan.edit_path is not None  # resolved with the edits
        with EditHooks(self.model, self.plan.edit_path, self.n_blocks, self.plan.edits), recorder:
            yield recorder

    def _forward(
        self,
        input_ids: torch.Tensor,
        mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        host_mask: torch.Tensor | None = None,
    ) -> dict[str, list[torch.Tensor]]:
        """``{site: [(B, T, W) per stored layer]}`` of one forward pass; ``host_mask``: ``mask``'s host copy, which
        featx's own encoders take instead."""
        recorder = self.recorder if self.plan.hooked else None
        forward_options: dict[str, object] = dict(recorder.forward_options) if recorder is not None else {}
        if token_type_ids is not None and self.type_ids:
            forward_options["token_type_ids"] = token_type_ids
        model_mask = host_mask if host_mask is not None and self.host_mask else mask
        inputs = {"input_ids": input_ids, "attention_mask": model_mask, **forward_options}
        if self.plan.cut is not None:  # no stored layer above block K: the pass stops there (truncation.py)
            output = None
            hidden = truncated_states(self.model, self.plan.cut, self.plan.layers, inputs)
        else:
            output = self.model(**inputs, output_hidden_states=True)
            hidden = [output.hidden_states[layer] for layer in self.plan.layers]
        states = {self.plan.hidden.name: hidden}  # L x (B, T, H)
        if recorder is not None:
            states.update(recorder.take(output, input_ids, mask, self.special_ids))
        # With --device-map the layers sit on several devices: pool where the batch is (a no-op otherwise).
        return {site: [layer.to(self.device) for layer in layers] for site, layers in states.items()}

    def _pool(
        self,
        states: dict[str, list[torch.Tensor]],
        mask: torch.Tensor,
        masks: dict | None = None,
        word_index: torch.Tensor | None = None,
    ):
        """Every site's poolings, copied to the host, and the event that marks the copies done (``_host``)."""
        return self._host(self._pooled(states, mask, masks, word_index))

    def _pooled(
        self,
        states: dict[str, list[torch.Tensor]],
        mask: torch.Tensor,
        masks: dict | None = None,
        word_index: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Every site's poolings on the device, in the store's dtype; ``masks`` gives some dataset paths their own
        mask (sentence pairs); ``word_index`` each token's word slot (word inputs)."""
        masks = masks or {}
        real = mask.bool() if self.plan.with_tokens else None
        values = {}
        if word_index is not None:  # word inputs: each word's subwords pooled into one vector per layer
            words = pool_words(states[self.plan.hidden.name], word_index.to(self.device), self.plan.word_poolings)
            for name, path in zip(self.plan.word_poolings, self.plan.word_paths, strict=False):
                values[path] = words[name].to(self.store_dtype)
        for site in self.plan.sites:
            # Pool layer by layer: stacking all layers first would copy every state once more.
            for name, path in site.pooled_paths.items():
                used = masks.get(path, mask)
                pooled = torch.stack([self.functions[name](layer, used) for layer in states[site.name]], dim=1)
                values[path] = pooled.to(self.store_dtype)
            if real is not None:
                tokens = torch.stack([layer[real] for layer in states[site.name]], dim=1).to(self.store_dtype)
                values[site.tokens_path] = tokens
        return values

    def _host(self, values: dict[str, torch.Tensor]):
        """``values`` copied to the host (``_to_host``) and, on CUDA, the event that marks the copies done."""
        return {path: self._to_host(value) for path, value in values.items()}, self._copies_done()

    def _copies_done(self):
        """On CUDA, an event recorded after every copy queued so far (None elsewhere)."""
        if self.device.type != "cuda":
            return None
        event = torch.cuda.Event()
        event.record(self.copy_stream)  # None: the compute stream, where the copies were queued
        return event

    def _to_host(self, value: torch.Tensor) -> torch.Tensor:
        """One output copied to the host without blocking (on CUDA into pinned memory). With a side stream
        (``FEATX_COPY_STREAM=1``) the copy waits only for the work queued so far, and the next batch's forward
        pass does not wait for it."""
        stream = self.copy_stream
        if stream is None:
            return value.to("cpu", non_blocking=True)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        value.record_stream(stream)  # the allocator must not hand its memory out again before the copy is done
        with torch.cuda.stream(stream):
            host = torch.empty(value.shape, dtype=value.dtype, pin_memory=True)
            host.copy_(value, non_blocking=True)
        return host

    def _prompt(self, input_ids: torch.Tensor, mask: torch.Tensor, span, at, sites=None):
        """States of a batch of prompts and the masks of its span and ``at`` poolings."""
        span = span.to(self.device, non_blocking=True) if span is not None else None
        at = at.to(self.device, non_blocking=True) if at is not None else None
        sites = [site for site in self.plan.sites if site.name not in self.contrast_sites] if sites is None else sites
        return self._forward(input_ids, mask), prompt_masks(sites, mask, span, at)

    def _answer(self, answer: int, batch: tuple, states: dict, masks: dict) -> None:
        """Answer ``answer``'s prompts (``collate``'s tuple) run and pooled into its own site, with its own masks."""
        ids, mask, extra = batch[0].to(self.device, non_blocking=True), batch[1].to(self.device), batch[2]
        site = next(site for site in self.plan.sites if site.name == contrast_site(answer))
        answer_states, answer_masks = self._prompt(ids, mask, extra.get("span"), extra.get("at"), [site])
        states[site.name] = answer_states[self.plan.hidden.name]
        masks.update({path: answer_masks.get(path, mask) for path in site.pooled_paths.values()})

    @torch.inference_mode()
    def __call__(self, input_ids: torch.Tensor, mask: torch.Tensor, extra: dict | None = None):
        """``extra``: a sentence pair batch's tensors (``collate``) or word inputs' ``word_index``."""
        input_ids = input_ids.to(self.device, non_blocking=True)
        host_mask, mask = mask, mask.to(self.device, non_blocking=True)
        extra = dict(extra or {})
        word_index = extra.pop("word_index", None)
        span, at = extra.pop("span", None), extra.pop("at", None)
        if span is not None or at is not None:  # prompts: the text's span and the --pool-at token
            states, masks = self._prompt(input_ids, mask, span, at)
            for answer, batch in enumerate(extra.pop("contrast", None) or [], start=1):  # --contrast: answers 1, 2...
                self._answer(answer, batch, states, masks)
            return self._pool(states, mask, masks, word_index)
        if extra:  # sentence pairs: token-type ids and segment masks, or side b's own forward pass
            states, masks = pair_inputs(self, input_ids, mask, extra)
            return self._pool(states, mask, masks, word_index)
        return self._pool(self._forward(input_ids, mask, host_mask=host_mask), mask, word_index=word_index)

    @torch.inference_mode()
    def windowed(self, group: WindowGroup):
        """A step of rows longer than the model's maximum (``--long window``, ``long_windows.window_groups``): the
        windows of all its rows run back to back in passes of ``windows_per_pass`` windows, a pass holding windows
        of several rows; each token's states are taken from its most central window, and each row, once its last
        window is through, is pooled over its stitched states exactly like a batch of one. Returns
        ``({path: [one host tensor per row]}, event)``, the rows in the step's order. With word ids (word inputs)
        each word's subwords all come from the one window where the whole word is most central."""
        windows = np.concatenate([row.input_ids for row in group.rows])
        per_pass = windows_per_pass(self.plan.max_tokens, self.plan.batch_size, windows.shape[1])
        pieces: list[dict[str, list[list[torch.Tensor]]]] = [{} for _ in group.rows]
        values: dict[str, list[torch.Tensor]] = {}
        for step in window_passes(group.rows, per_pass):
            ids = torch.from_numpy(windows[step.first : step.last]).to(self.device)
            states = self._forward(ids, torch.ones_like(ids))
            for index, window, at in step.takes:
                window, at = torch.from_numpy(window).to(self.device), torch.from_numpy(at).to(self.device)
                for site, layers in states.items():
                    pieces[index].setdefault(site, []).append([layer[window, at] for layer in layers])
            del states
            for index in step.done:
                row = self._stitched_row(pieces[index], group.word_ids[index], len(group.rows[index].owner))
                pieces[index] = {}  # its states are pooled: free them before the next pass
                for path, value in row.items():
                    values.setdefault(path, []).append(self._to_host(value))
        return values, self._copies_done()

    def _stitched_row(self, pieces: dict, word_ids: np.ndarray | None, n_tokens: int) -> dict[str, torch.Tensor]:
        """One windowed row's poolings (on the device) from its stitched token states, ``{site: [per pass: [per
        layer: (tokens, W)]]}``."""
        states = {
            site: [torch.cat(parts)[None] for parts in zip(*chunks, strict=False)] for site, chunks in pieces.items()
        }
        word_index = None if word_ids is None else torch.from_numpy(np.asarray(word_ids, dtype=np.int64))[None]
        mask = torch.ones((1, n_tokens), dtype=torch.long, device=self.device)
        return self._pooled(states, mask, word_index=word_index)

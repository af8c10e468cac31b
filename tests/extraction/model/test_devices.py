"""``--dtype`` on this machine: the one-line warning, before any work, where a half precision is slower here."""

from __future__ import annotations

import pytest
import torch

from featx.errors import FeatxWarning
from featx.extraction.fast import onednn
from featx.extraction.model import devices
from featx.extraction.model.loading import load_model


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_on_a_cpu_without_its_instructions_is_named_slow(monkeypatch, dtype):
    monkeypatch.setattr(onednn, "half_instructions", lambda _: False)
    name = devices.dtype_name(dtype)
    message = devices.slow_precision(dtype, torch.device("cpu"))
    assert message is not None and message.startswith(f"--dtype {name}: this CPU (")
    assert f"has no {name} instructions" in message and message.endswith("--dtype float32 is faster and exact")


def test_no_warning_where_the_precision_is_not_slow(monkeypatch):
    monkeypatch.setattr(onednn, "half_instructions", lambda _: True)
    assert devices.slow_precision(torch.bfloat16, torch.device("cpu")) is None
    monkeypatch.setattr(onednn, "half_instructions", lambda _: False)
    assert devices.slow_precision(torch.float32, torch.device("cpu")) is None
    assert devices.slow_precision(torch.bfloat16, torch.device("cuda")) is None  # GPUs are checked when loading


def test_bfloat16_instructions_are_those_onednn_needs(monkeypatch):
    assert onednn.available(torch.bfloat16) == (onednn.available() and onednn.half_instructions(torch.bfloat16))
    monkeypatch.setenv("FEATX_ONEDNN", "0")  # oneDNN turned off says nothing of what the CPU can do
    assert not onednn.available(torch.bfloat16)
    assert devices.slow_precision(torch.bfloat16, torch.device("cpu")) is None or not onednn.half_instructions(
        torch.bfloat16
    )


def test_loading_warns_before_the_weights_are_read(tiny_model, monkeypatch):
    monkeypatch.setattr(onednn, "half_instructions", lambda _: False)
    with pytest.warns(FeatxWarning, match="--dtype bfloat16: this CPU"):
        loaded = load_model(str(tiny_model), device="cpu", dtype="bfloat16")
    assert loaded.dtype == torch.bfloat16  # a warning, not a refusal: the run goes on as asked

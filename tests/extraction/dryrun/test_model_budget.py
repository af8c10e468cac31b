"""The dry run's matmul rate: bounded in time on a device where one product of the model's shape is slow."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from featx.extraction.dryrun import model_budget

SHAPE = SimpleNamespace(hidden=32, intermediate=48)


class FakeDevice:
    """A clock and a ``torch.matmul`` whose product takes ``per_row`` simulated seconds a row."""

    def __init__(self, per_row: float, stalls: dict[int, float] | None = None):
        self.now, self.per_row, self.rows, self.stalls = 0.0, per_row, [], stalls or {}

    def clock(self) -> float:
        return self.now

    def matmul(self, a, b):
        self.rows.append(a.shape[0])
        self.now += self.per_row * a.shape[0] + self.stalls.get(len(self.rows), 0.0)
        return a @ b


def rate_on(monkeypatch, per_row: float, stalls: dict[int, float] | None = None) -> tuple[float, FakeDevice]:
    fake = FakeDevice(per_row, stalls)
    monkeypatch.setattr(model_budget.time, "perf_counter", fake.clock)
    monkeypatch.setattr(torch, "matmul", fake.matmul)
    return model_budget.matmul_rate(torch.device("cpu"), torch.float32, SHAPE), fake


def test_a_slow_product_stops_the_ramp_at_one_row(monkeypatch):
    # one row already takes 1.5 s (bfloat16 without the instructions for it): no larger product is tried
    rate, fake = rate_on(monkeypatch, per_row=1.5)
    assert max(fake.rows) == 1
    assert len(fake.rows) == 3  # warm-up, then two timed products
    assert rate == 2.0 * 1 * SHAPE.hidden * SHAPE.intermediate / 1.5


def test_a_fast_device_reaches_the_full_shape_and_times_it_for_the_budget(monkeypatch):
    rate, fake = rate_on(monkeypatch, per_row=1e-4)
    assert max(fake.rows) == 128
    assert fake.rows[:9] == [1, 1, 2, 4, 8, 16, 32, 64, 128]
    timed = fake.rows[8:]
    assert set(timed) == {128} and sum(timed) * 1e-4 >= model_budget.MATMUL_SECONDS
    assert abs(rate - 2.0 * SHAPE.hidden * SHAPE.intermediate / 1e-4) < 1e-3 * rate


def test_the_ramp_stops_where_the_next_product_would_pass_the_budget(monkeypatch):
    # 0.1 s a row: 4 rows take 0.4 s, 8 rows would take 0.8 s, at most 4 * MATMUL_SECONDS (1 s): 8 is tried;
    # 16 rows would take 1.6 s: not tried
    _, fake = rate_on(monkeypatch, per_row=0.1)
    assert max(fake.rows) == 8


def test_a_product_stalled_by_a_busy_machine_does_not_set_the_rate(monkeypatch):
    # the first product timed at the full shape waits 0.2 s for a descheduled thread (the others take 0.0128 s):
    # a mean made the rate about 4 times too slow, the time's "lower bound" 4 times too high
    rate, fake = rate_on(monkeypatch, per_row=1e-4, stalls={9: 0.2})
    assert fake.rows[8:11] == [128, 128, 128]
    assert abs(rate - 2.0 * SHAPE.hidden * SHAPE.intermediate / 1e-4) < 1e-3 * rate

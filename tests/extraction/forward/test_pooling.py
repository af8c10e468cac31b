import numpy as np
import pytest
import torch

from featx.extraction.forward.pooling import cls_pool, last_pool, make_pooler_pool, max_pool, mean_pool


@pytest.fixture
def batch():
    torch.manual_seed(0)
    states = torch.randn(3, 2, 5, 4)  # (batch, layers, tokens, hidden)
    lengths = [5, 2, 3]
    mask = torch.tensor([[1] * n + [0] * (5 - n) for n in lengths])
    # Garbage in the padding must never leak into a pooled value.
    states = states.masked_fill(~mask.bool()[:, None, :, None], 1e4)
    return states, mask, lengths


def test_poolings_match_hand_computation(batch):
    states, mask, lengths = batch
    for row, n in enumerate(lengths):
        real = states[row, :, :n, :].numpy()
        np.testing.assert_allclose(cls_pool(states, mask)[row].numpy(), real[:, 0])
        np.testing.assert_allclose(mean_pool(states, mask)[row].numpy(), real.mean(axis=1), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(max_pool(states, mask)[row].numpy(), real.max(axis=1))
        np.testing.assert_allclose(last_pool(states, mask)[row].numpy(), real[:, n - 1])


def test_poolings_work_without_layer_axis(batch):
    states, mask, lengths = batch
    flat = states[:, 1]
    np.testing.assert_allclose(mean_pool(flat, mask).numpy(), mean_pool(states, mask)[:, 1].numpy())
    np.testing.assert_allclose(last_pool(flat, mask).numpy(), last_pool(states, mask)[:, 1].numpy())
    assert max_pool(flat, mask).shape == (3, 4)


def test_mean_pool_accumulates_in_float32_for_bfloat16(batch):
    states, mask, _ = batch
    low = mean_pool(states.bfloat16(), mask)
    assert low.dtype == torch.bfloat16
    np.testing.assert_allclose(low.float().numpy(), mean_pool(states, mask).numpy(), rtol=2e-2, atol=2e-2)


def test_pooler_pool_applies_head_to_first_token_of_every_layer(batch):
    states, mask, _ = batch

    class Head(torch.nn.Module):
        def forward(self, hidden):
            return torch.tanh(hidden[:, 0] * 2)

    pooled = make_pooler_pool(Head())(states, mask)
    np.testing.assert_allclose(pooled.numpy(), torch.tanh(states[:, :, 0] * 2).numpy())


def test_poolings_hold_for_left_padding(batch):
    """The same rows padded on the left pool to the same values: cls is the first real token, last the last."""
    states, mask, lengths = batch
    width = states.shape[2]
    left = torch.full_like(states, -1e4)
    left_mask = torch.zeros_like(mask)
    for row, n in enumerate(lengths):
        left[row, :, width - n :] = states[row, :, :n]
        left_mask[row, width - n :] = 1
    for pool in (cls_pool, mean_pool, max_pool, last_pool):
        torch.testing.assert_close(pool(left, left_mask), pool(states, mask), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("garbage", [float("inf"), float("nan"), float("-inf")])
def test_max_pool_ignores_non_finite_padding(batch, garbage):
    states, mask, lengths = batch
    dirty = states.masked_fill(~mask.bool()[:, None, :, None], garbage)
    for row, n in enumerate(lengths):
        np.testing.assert_array_equal(max_pool(dirty, mask)[row].numpy(), states[row, :, :n].numpy().max(axis=1))


def test_max_pool_without_padding_and_in_bfloat16(batch):
    states, mask, _ = batch
    full = torch.ones_like(mask)
    np.testing.assert_array_equal(max_pool(states, full).numpy(), states.amax(dim=-2).numpy())
    low = max_pool(states.bfloat16(), mask)
    assert low.dtype == torch.bfloat16
    np.testing.assert_array_equal(low.float().numpy(), max_pool(states, mask).bfloat16().float().numpy())

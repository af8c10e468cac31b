"""featx's softmax-regression solver (``softmax.py``) in torch, for logistic probes on a GPU.

The same problem (``softmax_problem.prepare``: scikit-learn's lbfgs objective, the binomial penalty of two
classes, balanced weights, unpenalised intercepts, ``-inf`` offsets of never-seen classes), the same
L-BFGS (10 pairs, Armijo backtracking, the same gradient / FTOL / ``max_iter`` stopping tests) and the
same batching: the problems still moving are evaluated together, each with its own history, line
search and stopping test. ``X`` goes to the device once per solve as float32; the weights, gradients
and history stay there in float64, as the numpy solver keeps them on the host, and only which problems
are still moving comes back each step. ``softmax.solve`` calls this module when a run's device is set.

Torch's float32 matrix products round differently from numpy's BLAS (and the batch's products are one
stacked product), so solutions agree with the numpy solver's within its tolerance, not bit for bit.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .softmax_problem import ARMIJO, FTOL, MAX_HALVINGS, MEMORY, Problem, Solution, prepare


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise dot products of two (P, size) matrices."""
    return (a * b).sum(dim=1)


class _Objective:
    """Loss and gradient of P problems sharing ``X`` (the numpy ``_Objective``, on ``device``)."""

    def __init__(self, problem: Problem, device: torch.device):
        with warnings.catch_warnings():  # a read-only X is only ever read
            warnings.simplefilter("ignore", UserWarning)
            self.X = torch.from_numpy(problem.X).to(device)  # the one copy of the features on the device
        self.n, self.d = problem.X.shape
        self.codes = torch.from_numpy(problem.codes).to(device)
        self.weights = None if problem.weights is None else torch.from_numpy(problem.weights).to(device)
        self.lam = torch.from_numpy(np.asarray(problem.lam, dtype=np.float64)).to(device)
        self.offsets = torch.from_numpy(problem.offsets.astype(np.float32)).to(device)

    def __call__(self, theta: torch.Tensor, problems: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        X, n, d = self.X, self.n, self.d
        P = theta.shape[0]
        weights = theta[:, :d, :].transpose(1, 2).to(torch.float32)  # (P, k, d)
        scores = torch.matmul(weights, X.T)  # (P, k, n)
        scores += (theta[:, d, :].to(torch.float32) + self.offsets[problems])[:, :, None]
        scores -= scores.amax(dim=1, keepdim=True)
        codes = self.codes[problems][:, None, :]
        true = scores.gather(1, codes)[:, 0, :]
        scores.exp_()
        total = scores.sum(dim=1, keepdim=True)
        nll = total[:, 0, :].log() - true  # (P, n)
        scores /= total  # now probabilities
        scores.scatter_add_(1, codes, torch.full((P, 1, n), -1.0, device=X.device))  # now d loss / d score
        if self.weights is None:
            loss = nll.sum(dim=1, dtype=torch.float64) / n
            scores *= 1.0 / n
        else:
            row_weights = self.weights[problems]
            loss = (nll * row_weights).sum(dim=1, dtype=torch.float64)
            scores *= row_weights[:, None, :]
        lam = self.lam[problems]
        grad = torch.empty_like(theta)
        grad[:, :d, :] = torch.matmul(scores, X).transpose(1, 2) + lam[:, None, None] * theta[:, :d, :]
        grad[:, d, :] = scores.sum(dim=2, dtype=torch.float64)
        loss = loss + 0.5 * lam * (theta[:, :d, :] * theta[:, :d, :]).sum(dim=(1, 2))
        return loss, grad


def _direction(g: torch.Tensor, s_hist: torch.Tensor, y_hist: torch.Tensor, rho: torch.Tensor):
    """The L-BFGS two-loop direction of each problem (its history newest first) and which have no
    history yet (they start with a step scaled to the gradient)."""
    q = g.clone()
    alphas = []
    for j in range(MEMORY):
        alpha = rho[:, j] * _dot(s_hist[:, j], q)
        q -= alpha[:, None] * y_hist[:, j]
        alphas.append(alpha)
    fresh = rho[:, 0] == 0
    sy = _dot(s_hist[:, 0], y_hist[:, 0])
    yy = _dot(y_hist[:, 0], y_hist[:, 0])
    gamma = torch.where(fresh, 1.0, sy / torch.where(yy > 0, yy, 1.0))
    r = gamma[:, None] * q
    for j in reversed(range(MEMORY)):
        beta = rho[:, j] * _dot(y_hist[:, j], r)
        r += s_hist[:, j] * (alphas[j] - beta)[:, None]
    return -r, fresh


def _line_search(objective, theta, live, loss, direction, slope, step):
    """Backtracking (Armijo) from ``step``, the problems still searching evaluated together each round.
    Returns the accepted losses and gradients of the ``live`` problems and which found no decrease."""
    shape, size = theta.shape[1:], direction.shape[1]
    new_loss, new_grad = loss.new_empty(len(live)), direction.new_empty((len(live), size))
    searching = torch.arange(len(live), device=theta.device)
    for _ in range(MAX_HALVINGS):
        ids = live[searching]
        trial = theta[ids] + (step[searching, None] * direction[searching]).reshape(len(ids), *shape)
        trial_loss, trial_grad = objective(trial, ids)
        ok = trial_loss <= loss[ids] + ARMIJO * step[searching] * slope[searching]
        done = torch.nonzero(ok)[:, 0]
        new_loss[searching[done]] = trial_loss[done]
        new_grad[searching[done]] = trial_grad.reshape(len(ids), size)[done]
        searching = searching[torch.nonzero(~ok)[:, 0]]
        if not len(searching):
            break
        step[searching] *= 0.5
    stalled = torch.zeros(len(live), dtype=torch.bool, device=theta.device)
    stalled[searching] = True
    return new_loss, new_grad, stalled


def _remember(history: tuple, ids, keep, s, y, curvature) -> None:
    """Push (s, y, 1 / curvature) as the newest pair of the problems ``ids`` where ``keep``."""
    s_hist, y_hist, rho = history
    for store, newest in ((s_hist, s), (y_hist, y), (rho, 1.0 / curvature)):
        rolled = torch.roll(store[ids], 1, dims=1)
        rolled[:, 0] = newest
        mask = keep.reshape(-1, *([1] * (store.dim() - 1)))
        store[ids] = torch.where(mask, rolled, store[ids])


def _lbfgs(objective: _Objective, theta: torch.Tensor, tol: float, max_iter: int):
    """Minimise every problem (the numpy ``_lbfgs``, step for step)."""
    P, shape = theta.shape[0], theta.shape[1:]
    device = theta.device
    loss, grad = objective(theta, torch.arange(P, device=device))
    grad = grad.reshape(P, -1)
    s_hist, y_hist = theta.new_zeros((P, MEMORY, grad.shape[1])), theta.new_zeros((P, MEMORY, grad.shape[1]))
    rho = theta.new_zeros((P, MEMORY))  # 0 marks an empty slot; slot 0 is the newest pair
    n_iter = torch.zeros(P, dtype=torch.int64, device=device)
    converged = grad.abs().amax(dim=1) <= tol
    active = ~converged
    for _ in range(max_iter):
        live = torch.nonzero(active)[:, 0]
        if not len(live):
            break
        g = grad[live]
        whole = len(live) == P  # no copies of the history when every problem is still moving
        direction, fresh = _direction(g, *((s_hist, y_hist, rho) if whole else (s_hist[live], y_hist[live], rho[live])))
        slope = _dot(direction, g)
        uphill = slope >= 0  # a stale history: restart those problems from steepest descent
        direction = torch.where(uphill[:, None], -g, direction)
        slope = torch.where(uphill, -_dot(g, g), slope)
        rho[live] = torch.where(uphill[:, None], 0.0, rho[live])
        fresh = fresh | uphill
        step = torch.where(fresh, torch.clamp(1.0 / torch.sqrt(torch.clamp(-slope, min=1e-300)), max=1.0), 1.0)
        new_loss, new_grad, stalled = _line_search(objective, theta, live, loss, direction, slope, step)
        active[live] &= ~stalled  # no decrease left at float precision: as good as it gets
        moved = torch.nonzero(~stalled)[:, 0]
        ids = live[moved]
        s = step[moved, None] * direction[moved]
        y = new_grad[moved] - grad[ids]
        theta[ids] += s.reshape(len(ids), *shape)
        curvature = _dot(s, y)
        _remember((s_hist, y_hist, rho), ids, curvature > 1e-10 * _dot(y, y), s, y, curvature)
        old, new = loss[ids], new_loss[moved]
        decrease = (old - new) / torch.clamp(torch.maximum(old.abs(), new.abs()), min=1.0)
        loss[ids], grad[ids] = new, new_grad[moved]
        n_iter[ids] += 1
        converged[ids] = (grad[ids].abs().amax(dim=1) <= tol) | (decrease <= FTOL)
        active[ids] = ~converged[ids]
    return theta, n_iter, converged


def solve(
    X: np.ndarray,
    labels,
    n_classes: int,
    Cs,
    balanced: bool = False,
    init=None,
    tol: float = 1e-3,
    max_iter: int = 500,
    device: str | torch.device = "cuda",
) -> Solution:
    """``softmax.solve`` on ``device``: the same arguments, the same ``Solution`` (numpy arrays)."""
    problem = prepare(X, labels, n_classes, Cs, balanced, init)
    device = torch.device(device)
    with torch.no_grad():
        objective = _Objective(problem, device)
        theta = torch.from_numpy(problem.theta).to(device)
        theta, n_iter, converged = _lbfgs(objective, theta, tol, max_iter)
        return Solution(theta.cpu().numpy(), problem.offsets, n_iter.cpu().numpy(), converged.cpu().numpy())

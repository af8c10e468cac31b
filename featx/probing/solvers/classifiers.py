"""The probes: linear models (featx's own solvers of scikit-learn's objectives) and two small torch heads (MLP,
attention pooling).

Every probe here is fitted on already standardised features; the scaler, the choice of C and the
early stopping all live in ``evaluation`` and only ever see the training part of a fold.
"""

from __future__ import annotations

import warnings

import numpy as np

LINEAR = ("logreg", "svm")
TORCH = ("mlp", "attn")  # torch is imported only when one of these runs


def class_weights(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Balanced class weights n / (k * count) over the classes present in ``y``."""
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    present = counts > 0
    weights = np.ones(n_classes)
    weights[present] = len(y) / (present.sum() * counts[present])
    return weights


# -- linear probes --------------------------------------------------------------------------------
LOGREG_TOL = 1e-3  # gradient tolerance of logreg fits (max |gradient| of the mean loss)


def make_linear(name: str, C: float, balanced: bool, seed: int):
    """An unfitted linear probe; logreg is warm-startable so a C path reuses the previous solution.

    logreg is featx's own softmax regression (``softmax.py``): scikit-learn's lbfgs objective, solved
    in float32 with the fits that share features batched together.
    """
    if name == "logreg":
        from .softmax import SoftmaxRegression

        return SoftmaxRegression(
            C=C, tol=LOGREG_TOL, max_iter=500, warm_start=True, class_weight="balanced" if balanced else None
        )
    if name == "svm":
        from .svm import SquaredHingeSVC

        # LinearSVC's objective, solved by featx's Newton method (``svm.py``): liblinear took seconds to minutes
        # at the large Cs of a C search; warm-started along the C path like logreg.
        return SquaredHingeSVC(
            C=C,
            tol=1e-4,
            max_iter=1000,
            class_weight="balanced" if balanced else None,
            warm_start=True,
            random_state=seed,
        )
    raise ValueError(f"not a linear probe: {name}")


def logreg_from(theta: np.ndarray, offsets: np.ndarray, C: float, balanced: bool):
    """A fitted logreg probe from one solved problem of ``softmax.solve`` (never-seen classes dropped)."""
    present = np.flatnonzero(np.isfinite(offsets))
    model = make_linear("logreg", C, balanced, seed=0)
    model._set_solution(theta[:, present].copy(), present, 0)
    return model


def fit_together(models: list, X, labels: list) -> None:
    """``model.fit(X, y)`` for each logreg probe of ``models`` (``SoftmaxRegression``) and label vector of ``labels``:
    the fits of as many classes and the same settings (C aside) solved in one batch, each solution bit for bit the
    one its own fit finds (``softmax.solve``), in one pass over X per step for all."""
    from .softmax import solve

    starts = [model._start(X, y) for model, y in zip(models, labels, strict=True)]
    batches: dict[tuple, list[int]] = {}
    for index, model in enumerate(models):
        batches.setdefault((len(starts[index][1]), model.class_weight, model.tol, model.max_iter), []).append(index)
    for (k, class_weight, tol, max_iter), members in batches.items():
        inits = [starts[i][3] for i in members]
        Cs, codes = [models[i].C for i in members], [starts[i][2] for i in members]
        init = None if all(start is None for start in inits) else inits
        solution = solve(starts[members[0]][0], codes, k, Cs, class_weight == "balanced", init, tol, max_iter)
        for p, i in enumerate(members):
            models[i]._set_solution(solution.theta[p], starts[i][1], int(solution.n_iter[p]))


def fit_quietly(model, X: np.ndarray, y: np.ndarray):
    """Fit, turning non-convergence at an extreme C into no noise: the C search judges the result."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    return model


def linear_scores(model, X: np.ndarray, n_classes: int) -> np.ndarray:
    """``(n, n_classes)`` class scores (probabilities for logreg, margins for svm), columns in class order."""
    if hasattr(model, "predict_proba"):
        raw = model.predict_proba(X)
    else:
        raw = model.decision_function(X)
        if raw.ndim == 1:
            raw = np.stack([-raw, raw], axis=1)
    out = np.full((len(X), n_classes), -np.inf if not hasattr(model, "predict_proba") else 0.0)
    out[:, model.classes_] = raw
    return out


# -- torch heads -------------------------------------------------------------------------------------
def _torch():
    import torch

    return torch


def build_mlp(n_inputs: int, n_classes: int, hidden: int = 256, dropout: float = 0.2):
    """dense -> ReLU -> dropout -> dense: the usual fully-connected probing head."""
    nn = _torch().nn
    return nn.Sequential(nn.Linear(n_inputs, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, n_classes))


def build_attention(n_inputs: int, n_classes: int, dropout: float = 0.1):
    """Learned token scores -> softmax over a row's real tokens -> weighted mean -> linear classifier."""
    import torch
    from torch import nn

    class AttentionPooling(nn.Module):
        def __init__(self):
            super().__init__()
            self.score = nn.Linear(n_inputs, 1)
            self.dropout = nn.Dropout(dropout)
            self.classify = nn.Linear(n_inputs, n_classes)

        def weights(self, states, mask):
            scores = self.score(states).squeeze(-1).masked_fill(~mask, float("-inf"))
            return torch.softmax(scores, dim=-1)

        def forward(self, batch):
            states, mask = batch
            pooled = torch.einsum("bt,bth->bh", self.weights(states, mask), states)
            return self.classify(self.dropout(pooled))

    return AttentionPooling()


class Adam:
    """``torch.optim.Adam`` (L2 weight decay, no amsgrad), written out op for op as its single-tensor path, which
    is the one it takes on the CPU: the same parameters bit for bit (tested).

    ``torch.optim``'s first optimizer imports ``torch._dynamo`` (``add_param_group`` is wrapped to disable it),
    about 1 s of every command that trains an MLP or attention head; this class needs no more than the tensors.
    """

    def __init__(self, params, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8):
        torch = _torch()
        self.params = [param for param in params if param.requires_grad]
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.steps = 0
        self.exp_avgs = [torch.zeros_like(param, memory_format=torch.preserve_format) for param in self.params]
        self.exp_avg_sqs = [torch.zeros_like(param, memory_format=torch.preserve_format) for param in self.params]

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    def step(self) -> None:
        torch = _torch()
        self.steps += 1
        beta1, beta2 = self.betas
        step_size = self.lr / (1 - beta1 ** float(self.steps))
        bias_correction2_sqrt = (1 - beta2 ** float(self.steps)) ** 0.5
        with torch.no_grad():
            for param, exp_avg, exp_avg_sq in zip(self.params, self.exp_avgs, self.exp_avg_sqs, strict=True):
                if param.grad is None:
                    continue
                grad = param.grad if self.weight_decay == 0 else param.grad.add(param, alpha=self.weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
                param.addcdiv_(exp_avg, denom, value=-step_size)


def train_head(
    model,
    inputs,
    y: np.ndarray,
    train_rows: np.ndarray,
    val_rows: np.ndarray,
    n_classes: int,
    seed: int,
    balanced: bool = False,
    lr: float = 1e-3,
    weight_decay: float = 1e-4,
    batch_size: int = 64,
    max_epochs: int = 100,
    patience: int = 5,
):
    """Adam with early stopping on ``val_rows`` (a part of the training rows); returns the best epoch's model.

    ``inputs(rows)`` returns the model input for those rows (a tensor, or a (states, mask) pair).
    """
    torch = _torch()
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    targets = torch.tensor(y, dtype=torch.long)  # a copy: y may be a read-only view of the features file
    weight = torch.as_tensor(class_weights(y[train_rows], n_classes), dtype=torch.float32) if balanced else None
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
    optimizer = Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best_loss, best_state, waited = float("inf"), None, 0
    val_inputs, val_targets = inputs(val_rows), targets[val_rows]
    for _ in range(max_epochs):
        model.train()
        order = train_rows[torch.randperm(len(train_rows), generator=generator).numpy()]
        for start in range(0, len(order), batch_size):
            rows = np.sort(order[start : start + batch_size])
            optimizer.zero_grad()
            loss_fn(model(inputs(rows)), targets[rows]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = float(loss_fn(model(val_inputs), val_targets))
        if val_loss < best_loss - 1e-4:
            best_loss, waited = val_loss, 0
            best_state = {key: value.detach().clone() for key, value in model.state_dict().items()}
        else:
            waited += 1
            if waited >= patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return model


def head_scores(model, inputs, rows: np.ndarray, batch_size: int = 512) -> np.ndarray:
    """Softmax probabilities of a trained torch head for ``rows``."""
    torch = _torch()
    out = []
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            out.append(torch.softmax(model(inputs(rows[start : start + batch_size])), dim=-1).numpy())
    return np.concatenate(out) if out else np.zeros((0, 0))

"""featx.probing.solvers.classifiers: the torch heads' training loop."""

import warnings

import numpy as np
import pytest

from featx.probing.solvers import classifiers as clf

torch = pytest.importorskip("torch")


def test_train_head_takes_read_only_labels_silently_and_learns_a_planted_signal():
    """Labels read from a features file arrive as read-only arrays; torch must not warn about sharing them."""
    rng = np.random.default_rng(0)
    y = np.arange(400) % 3
    X = rng.standard_normal((400, 8)).astype(np.float32)
    X[np.arange(400), y] += 4.0  # class c lights up feature c
    y.setflags(write=False)
    Xt = torch.from_numpy(X)
    torch.manual_seed(0)  # the head's initial weights come from torch's global generator
    model = clf.build_mlp(8, 3, hidden=16)
    train, val, test = np.arange(0, 240), np.arange(240, 300), np.arange(300, 400)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not writable")
        clf.train_head(model, lambda rows: Xt[rows], y, train, val, 3, seed=0, max_epochs=30)
    scores = clf.head_scores(model, lambda rows: Xt[rows], test)
    assert np.mean(scores.argmax(axis=1) == y[test]) > 0.9  # chance is 1/3
    assert not y.flags.writeable  # the caller's array is untouched


def test_adam_is_torch_optims_adam_bit_for_bit():
    """The written-out Adam gives torch.optim.Adam's parameters exactly, weight decay and a frozen tensor included."""
    batches = [torch.randn(16, 6, generator=torch.Generator().manual_seed(i)) for i in range(25)]
    models = []
    for optimizer_class in (torch.optim.Adam, clf.Adam):
        torch.manual_seed(0)
        model = clf.build_mlp(6, 3, hidden=8, dropout=0.0)
        model[0].bias.requires_grad_(False)
        optimizer = optimizer_class(model.parameters(), lr=3e-3, weight_decay=1e-4)
        for batch in batches:
            optimizer.zero_grad()
            model(batch).logsumexp(dim=1).mean().backward()
            optimizer.step()
        models.append(model)
    for (name, ours), theirs in zip(models[1].state_dict().items(), models[0].state_dict().values(), strict=True):
        assert torch.equal(ours, theirs), name


def test_training_a_head_imports_neither_torch_optim_nor_dynamo(monkeypatch):
    """torch.optim's first optimizer imports torch._dynamo (about 1 s per command); train_head needs neither."""
    import builtins

    seen, real_import = [], builtins.__import__

    def spy(name, *args, **kwargs):
        if name.startswith(("torch._dynamo", "torch.optim")):
            seen.append(name)
        return real_import(name, *args, **kwargs)

    y = np.arange(60) % 2
    X = torch.randn(60, 4, generator=torch.Generator().manual_seed(0))
    monkeypatch.setattr(builtins, "__import__", spy)
    clf.train_head(clf.build_mlp(4, 2, hidden=4), lambda rows: X[rows], y, np.arange(40), np.arange(40, 60), 2, 0)
    assert seen == []


def test_the_svm_probe_converges_where_liblinear_did_not():
    """300 TREC rows of 384 dims took 9 s per svm row in liblinear's primal (hundreds of passes at C >= 1, 2000
    without converging at C = 10): featx's Newton solver converges in tens of iterations at C = 10, on rows
    fewer than dimensions and on more rows than dimensions, to liblinear's objective or below."""
    from sklearn.svm import LinearSVC

    from featx.probing.solvers.svm import SquaredHingeSVC

    rng = np.random.default_rng(0)
    wide = rng.normal(size=(60, 300)).astype(np.float32)
    model = clf.fit_quietly(clf.make_linear("svm", 10.0, False, 0), wide, np.arange(60) % 3)
    assert isinstance(model, SquaredHingeSVC) and model.n_iter_ < 100
    assert (model.predict(wide) == np.arange(60) % 3).all()
    tall, y = rng.normal(size=(300, 20)).astype(np.float32), np.arange(300) % 3
    ours = clf.fit_quietly(clf.make_linear("svm", 10.0, False, 0), tall, y)
    primal = clf.fit_quietly(LinearSVC(C=10.0, dual=False, tol=1e-4, max_iter=2000, random_state=0), tall, y)
    assert ours.n_iter_ < 100 and np.mean(ours.predict(tall) == primal.predict(tall)) >= 0.99

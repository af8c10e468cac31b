"""featx.report.similarity and ``featx similarity``: linear CKA between layers, one file or two of the same rows."""

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from support.results import tiny_rows
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.errors import InputError
from featx.report import similarity as sim


def _gram_cka(X, Y):
    """The textbook form on n x n Gram matrices (HSIC of centred kernels), to check the p x q form against."""
    n = len(X)
    H = np.eye(n) - 1.0 / n
    K, L = H @ X @ X.T @ H, H @ Y @ Y.T @ H
    return float(np.sum(K * L) / np.sqrt(np.sum(K * K) * np.sum(L * L)))


def test_linear_cka_matches_the_gram_form_and_its_invariances():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(50, 6)), rng.normal(size=(50, 4))
    assert sim.linear_cka(X, Y) == pytest.approx(_gram_cka(X, Y))
    rotation, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    assert sim.linear_cka(X, 3 * X @ rotation + 1) == pytest.approx(1.0)  # rotation, scale, shift
    assert 0 <= sim.linear_cka(X, Y) < 0.5
    assert np.isnan(sim.linear_cka(np.ones((10, 3)), X[:10]))  # a constant layer has no CKA


def test_the_chance_level_is_the_mean_cka_over_every_shuffle_of_the_rows():
    """The baseline beside every CKA: the expected CKA of the same two layers with the rows matched at random,
    in closed form, equal to the mean over all 5! orders of 5 rows; high for few rows and many dimensions."""
    from itertools import permutations

    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    shuffled = [sim.linear_cka(X, Y[list(order)]) for order in permutations(range(5))]
    assert sim.linear_cka_chance(X, Y) == pytest.approx(np.mean(shuffled))
    assert sim.linear_cka_chance(*rng.normal(size=(2, 40, 32))) > 0.4  # 40 rows, 32 dimensions: far from 0
    assert np.isnan(sim.linear_cka_chance(np.ones((10, 3)), X[:10].repeat(2, axis=0)))


@pytest.mark.slow
def test_one_file_every_pair_of_layers(real_runs):
    result = sim.similarity(real_runs["features"], pooling="mean")
    with featx.open(real_runs["features"]) as opened:
        layers = opened.layers
        expected = sim.linear_cka(opened.features("mean", layers[0]), opened.features("mean", layers[-1]))
    assert result.layers_a == result.layers_b == layers
    assert np.diag(result.matrix) == pytest.approx(np.ones(len(layers)))
    assert result.matrix == pytest.approx(result.matrix.T)
    assert result.matrix[0, -1] == pytest.approx(expected)
    cls = sim.similarity(real_runs["features"], pooling="cls")
    assert np.isnan(cls.matrix[0]).all()  # [CLS] at layer 0 is the same vector for every row


@pytest.mark.slow
def test_streaming_without_the_cache_gives_the_same_matrix(real_runs, monkeypatch):
    cached = sim.similarity(real_runs["features"], real_runs["random"]).matrix
    monkeypatch.setattr(sim, "CACHE_BYTES", 0)  # as for a file too big to hold: layers re-read one at a time
    assert sim.similarity(real_runs["features"], real_runs["random"]).matrix == pytest.approx(cached)


@pytest.mark.slow
def test_two_files_of_the_same_rows(real_runs):
    result = sim.similarity(real_runs["features"], real_runs["random"])
    assert result.name_b.endswith("(random init)")
    assert result.matrix.shape == (3, 3) and np.isfinite(result.matrix).all()
    assert (result.matrix <= 1 + 1e-9).all() and not np.allclose(np.diag(result.matrix), 1.0)


def test_two_files_of_the_same_rows_from_other_corpus_files_are_compared(tiny_features, tmp_path, monkeypatch):
    """The rows are what CKA pairs, not the corpus file's digest: a file extracted from another corpus file holding
    the same rows (a label column added, the split dropped) was refused as 'not the same rows'; other texts, in
    the same number of rows under the same ids, are refused. The CSV holds each cell's chance level beside the
    matrix (it held the matrix only), and the outputs are checked once a run (twice before: similarity, then
    write_similarity), and by write_similarity called alone."""
    import shutil
    from types import SimpleNamespace

    import h5py

    same = tmp_path / "same.h5"
    shutil.copy(tiny_features, same)
    with h5py.File(same, "r+") as opened:
        opened.attrs["corpus_sha256"] = "0" * 64  # as another corpus file of the same rows records it
    checks = []
    monkeypatch.setattr(sim, "check_redrawn", lambda *args, **kw: checks.append(args[0]))
    monkeypatch.setattr(sim, "similarity_figure", lambda *args, **kw: (None, [out]))  # the table is what is read
    out = tmp_path / "cka.svg"
    result = sim.similarity(tiny_features, same, pooling="mean", output=out, formats=("svg",))
    table = pd.read_csv(out.with_suffix(".csv"), index_col=0)
    layers = [f"layer {layer}" for layer in result.layers_b]
    assert list(table.columns) == layers + [f"chance {column}" for column in layers]
    assert table[layers].to_numpy() == pytest.approx(result.frame().to_numpy(), nan_ok=True)  # as before
    assert table.iloc[:, len(layers) :].to_numpy() == pytest.approx(result.chance.round(4), nan_ok=True)
    assert sim.write_similarity(result, out, formats=("svg",)) == [out, out.with_suffix(".csv")]
    assert checks == [out, out]  # one check a run, one a library write
    assert np.diag(result.matrix) == pytest.approx(np.ones(len(result.layers_a)))
    with featx.open(tiny_features) as opened:  # every cell stands beside its chance level, printed with the matrix
        first, top = (opened.features("mean", layer) for layer in (opened.layers[0], opened.layers[-1]))
    assert result.chance.shape == result.matrix.shape
    assert result.chance[0, -1] == pytest.approx(sim.linear_cka_chance(first, top))
    low, high = np.nanmin(result.chance), np.nanmax(result.chance)
    assert f"chance (rows shuffled): {low:.3f} to {high:.3f}" in result.format()
    rows = dict(n_rows=2, ids=["0", "1"], pair_texts=None)
    a = SimpleNamespace(path="a.h5", texts=["the cat", "a dog"], **rows)
    b = SimpleNamespace(path="b.h5", texts=["a dog", "the cat"], **rows)
    with pytest.raises(InputError, match="a.h5 and b.h5 do not hold the same rows"):
        sim._check_same_rows(a, b)


@pytest.mark.slow
def test_files_of_other_rows_are_refused(real_runs, tiny_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus = write_csv(tmp_path / "other.csv", tiny_rows(40, seed=9), header=("text", "sentiment", "split"))
    other = featx.extract(
        corpus, model=str(tiny_model), output=tmp_path / "other.h5", poolings="mean", progress=False
    ).output
    with pytest.raises(InputError, match="CKA needs the same rows"):
        sim.similarity(real_runs["features"], other)


@pytest.mark.slow
def test_cli_similarity_writes_heatmap_and_csv(real_runs, tmp_path):
    out = tmp_path / "cka.png"
    outcome = CliRunner().invoke(
        main, ["similarity", str(real_runs["features"]), str(real_runs["random"]), "-o", str(out)]
    )
    assert outcome.exit_code == 0, outcome.output
    assert out.exists() and out.with_suffix(".svg").exists()
    matrix = pd.read_csv(out.with_suffix(".csv"), index_col=0)
    assert matrix.shape == (3, 6) and "linear CKA" in outcome.output  # the matrix, then its chance level
    assert "linear CKA" in out.with_suffix(".svg").read_text()


@pytest.mark.slow
def test_the_default_names_say_the_pooling_and_the_site(real_runs, tmp_path):
    """Without -o, a run of another --pooling (or --site) wrote the same FEATURES stem + .cka.png, overwriting
    the first run's figure and matrix; the name now holds both (-o still wins)."""
    import shutil

    features = shutil.copy(real_runs["features"], tmp_path / "corpus.features.h5")  # the fixture's folder untouched
    written = {
        pooling: sim.similarity(features, pooling=pooling, write=True, formats=("png",)).written
        for pooling in ("mean", "cls")
    }
    for pooling, files in written.items():
        figure = tmp_path / f"corpus.features.{pooling}.hidden.cka.png"
        assert files == [figure, figure.with_suffix(".csv")]
        assert all(path.exists() for path in files)
    chosen = tmp_path / "mine.png"
    assert sim.similarity(features, pooling="cls", output=chosen, formats=("png",)).written[0] == chosen


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.h5"], "does not exist"),
        (["FEATURES", "--pooling", "max"], "pooling 'max' is not stored"),
        (["FEATURES", "--words"], "has no word vectors (a features file of sentences)"),  # hint: leave --words out
    ],
)
def test_cli_similarity_errors_exit_2(real_runs, tmp_path, args, message):
    args = [str(real_runs["features"]) if arg == "FEATURES" else arg for arg in args]
    outcome = CliRunner().invoke(main, ["similarity", *args, "-o", str(tmp_path / "c.png")])
    assert outcome.exit_code == 2, outcome.output
    assert message in outcome.output and "Traceback" not in outcome.output and "hint: " in outcome.output


@pytest.mark.slow
def test_a_word_level_file_compares_its_word_vectors_or_says_how(word_features, tmp_path):
    """A word pooling (one vector per word) was refused as "not stored"; it is a word pooling: --words compares
    the word vectors, word by word, and without it the refusal says what it is and offers --words."""
    features, _ = word_features
    with featx.open(features) as opened:
        word_only = next(name for name in opened.word_poolings() if name not in opened.site_poolings("hidden"))
        first, top = opened.layers[0], opened.layers[-1]
        expected = sim.linear_cka(opened.word_features(word_only, first), opened.word_features(word_only, top))
        n_words = len(opened.word_forms())
    result = sim.similarity(features, pooling=word_only, words=True)
    assert result.unit == "words" and result.n_rows == n_words and result.matrix[0, -1] == pytest.approx(expected)
    assert f"linear CKA, {word_only} word pooling, {n_words:,} words" in result.format()
    with pytest.raises(InputError, match=f"'{word_only}' is a word pooling of") as refused:
        sim.similarity(features, pooling=word_only)
    assert "words=True" in refused.value.hint
    outcome = CliRunner().invoke(main, ["similarity", str(features), "--pooling", word_only, "-o", str(tmp_path / "c")])
    assert outcome.exit_code == 2 and "add --words to compare its word vectors" in outcome.output, outcome.output
    twice = sim.similarity(features, features, pooling=word_only, words=True)  # two files: word by word
    assert np.diag(twice.matrix) == pytest.approx(np.ones(len(twice.layers_a)))
    with pytest.raises(InputError, match="stored for site 'hidden' only"):
        sim.similarity(features, pooling=word_only, words=True, site="ffn")


class _Words:
    """What ``_check_same_words`` reads of a features file: its path, word offsets and forms."""

    def __init__(self, path, forms):
        self.path, self.forms = path, forms

    def word_offsets(self):
        return np.array([0, len(self.forms)])

    def word_forms(self):
        return self.forms


def test_word_vectors_of_other_words_are_refused():
    sim._check_same_words(_Words("a.h5", ["a", "b"]), _Words("b.h5", ["a", "b"]))
    with pytest.raises(InputError, match="a.h5 and b.h5 do not hold the same words"):
        sim._check_same_words(_Words("a.h5", ["a", "b"]), _Words("b.h5", ["a", "c"]))

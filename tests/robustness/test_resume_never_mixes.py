"""A resumed ``featx predict`` never mixes inputs (issue 46): a run stopped part-way and run again with another
``--encoding`` (or ``--text-col``, or for a word bundle other ``--columns``) used to resume from the first run's
rows, which kept the old input's probabilities. The resume key now covers the texts as read and every option
that changes them; a partial file of other inputs is not reused, and the run says so.

One row of ``CHANGES`` per hostile resume: the case id, the first run's options and the second run's."""

from __future__ import annotations

import pandas as pd
import pytest
from support.deploy_data import make_split_features
from support.tiny import write_csv

import featx
from featx.deploy import predict
from featx.deploy.probe import Probe

TEXTS = ["café crème brûlée", "naïve façade", "the cat sat", "über alles", "a dog ran", "piñata día"] * 2
CHANGES = [
    ("encoding", {"encoding": "latin-1"}, {"encoding": "utf-8"}),
    ("text_col", {"text_col": "text"}, {"text_col": "other"}),
]


@pytest.fixture(scope="module")
def bundle(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    features = make_split_features(folder, tiny_model, store_dtype="float32")
    return featx.fit(features, label="label", layer="1", pooling="mean", folds=3, output=folder / "m.featx").path


def _stopped_after_first_chunk(monkeypatch, run, encoder: str = "features"):
    """``run`` stopped as Ctrl-C stops it, once its first chunk was encoded (``encoder``: the ``Probe`` method,
    ``word_features`` for a word bundle)."""
    real, calls = getattr(Probe, encoder), []

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Probe, encoder, failing)
    with pytest.raises(KeyboardInterrupt):
        run()
    monkeypatch.setattr(Probe, encoder, real)


@pytest.mark.parametrize("first, second", [case[1:] for case in CHANGES], ids=[case[0] for case in CHANGES])
def test_a_partial_of_other_inputs_is_not_resumed(bundle, tmp_path, monkeypatch, first, second):
    rows = [(text, TEXTS[-1 - i]) for i, text in enumerate(TEXTS)]
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "other"))
    output = tmp_path / "p.csv"

    def run(**options):
        return predict(bundle, corpus=corpus, output=output, commit_rows=4, progress=False, **options)

    _stopped_after_first_chunk(monkeypatch, lambda: run(**first))
    assert output.with_name("p.csv.partial").exists()
    result = run(**second)
    assert result.resumed == 0 and any("not reused" in note for note in result.notes)
    mixed = pd.read_csv(output)
    clean = predict(bundle, corpus=corpus, output=tmp_path / "clean.csv", commit_rows=4, progress=False, **second)
    assert mixed.equals(pd.read_csv(clean.path))


def test_the_same_inputs_do_resume(bundle, tmp_path, monkeypatch):
    corpus = write_csv(tmp_path / "c.csv", [(text,) for text in TEXTS], header=("text",))
    output = tmp_path / "p.csv"

    def run():
        return predict(bundle, corpus=corpus, output=output, commit_rows=4, progress=False)

    _stopped_after_first_chunk(monkeypatch, run)
    assert run().resumed == 4


def _column_file(path, sentences):
    """A column file of ``(form, tag)`` words, one sentence a block."""
    blocks = ["\n".join(f"{form}\t{tag}" for form, tag in sentence) for sentence in sentences]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def test_a_word_partial_of_swapped_columns_is_not_resumed(word_features, tmp_path, monkeypatch):
    """The issue's word case: a word bundle's run stopped part-way, then run again with ``--columns`` swapped
    (the tags read as the words): the first run's words are not reused."""
    features, _ = word_features
    bundle = featx.fit(features, label="upos", layer="1", pooling="mean", folds=3, output=tmp_path / "w.featx").path
    words = [("the", "DET"), ("cat", "NOUN"), ("sat", "VERB"), ("a", "DET"), ("dog", "NOUN"), ("ran", "VERB")]
    corpus = _column_file(tmp_path / "c.txt", [words[i % 3 : i % 3 + 3] for i in range(12)])
    output = tmp_path / "p.csv"

    def run(columns):
        return predict(bundle, corpus=corpus, output=output, columns=columns, commit_rows=4, progress=False)

    _stopped_after_first_chunk(monkeypatch, lambda: run("form,upos"), "word_features")
    assert output.with_name("p.csv.partial").exists()
    result = run("upos,form")
    assert result.resumed == 0 and any("not reused" in note for note in result.notes)
    clean = predict(bundle, corpus=corpus, output=tmp_path / "clean.csv", columns="upos,form", progress=False)
    assert pd.read_csv(output).equals(pd.read_csv(clean.path))

"""Predictions from texts with the real encoder: texts -> embed -> the same features as the features file, so
``featx predict`` on the test rows scores exactly what ``featx fit`` reported."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from support.deploy_data import deploy_rows
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.deploy.features import stored_matrix
from featx.errors import InputError
from featx.sklearn import FittedProbe


def test_texts_give_the_stored_features_bit_for_bit(fitted, split_features):
    probe = featx.load(fitted.path)
    with featx.open(split_features) as features:
        texts, stored = features.texts, stored_matrix(features, probe.spec, probe.pooling)
    assert np.array_equal(probe.features(texts), stored)
    assert list(probe.predict(texts)) == list(probe.predict_features(stored))
    assert np.array_equal(probe.predict_proba(texts[:5]), probe.predict_proba_features(stored[:5]))


def test_predict_on_the_test_rows_scores_what_fit_reported(fitted, tmp_path):
    rows = [row for row in deploy_rows() if row[-1] == "test"]
    corpus = write_csv(tmp_path / "test.csv", [row[:2] for row in rows], header=("text", "label"))
    output = tmp_path / "p.csv"
    result = CliRunner().invoke(
        main, ["predict", str(fitted.path), str(corpus), "-o", str(output), "--label", "label", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    accuracy = float(re.search(r"accuracy (\d\.\d+) on (\d+) labelled rows", result.output).group(1))
    assert accuracy == round(fitted.test["score"], 4)
    table = pd.read_csv(output)
    assert np.mean(table.prediction.to_numpy() == np.array([row[1] for row in rows])) == fitted.test["score"]


def test_predict_counts_the_texts_it_truncates_as_extract_does(fitted, tmp_path):
    """A text longer than the bundle's max_length is cut, as extract cuts it; predict says how many (it said
    nothing, where extract's summary counts them)."""
    from support.tiny import WORDS

    max_length = featx.load(fitted.path).extraction["max_length"]
    texts = ["the cat sat", " ".join(WORDS[i % 20] for i in range(2 * max_length)), "a dog"]
    corpus = write_csv(tmp_path / "long.csv", [[text] for text in texts], header=("text",))
    result = CliRunner().invoke(main, ["predict", str(fitted.path), str(corpus), "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    last = result.stderr.splitlines()[-1]
    assert last == f"wrote 3 predictions to standard output (1 truncated at {max_length} tokens)"


def test_cross_mode_pairs_from_texts(tiny_model, tmp_path):
    rows = [[text, text[::-1], label, split] for text, label, _, _, split in deploy_rows(40)]
    corpus = write_csv(tmp_path / "pairs.csv", rows, header=("text", "other", "label", "split"))
    output = tmp_path / "pairs.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", text_pair_col="other",
                  progress=False)  # fmt: skip
    result = featx.fit(output, label="label", layer="2", output=tmp_path / "p.featx", folds=2)
    probe = featx.load(result.path)
    with featx.open(output) as features:
        stored = stored_matrix(features, probe.spec, probe.pooling)
    assert np.array_equal(probe.features([r[0] for r in rows], [r[1] for r in rows]), stored)
    pairs = [(r[0], r[1]) for r in rows]  # (text, text_pair) items, as cross-encoders take them
    assert np.array_equal(probe.features(pairs), stored)
    assert list(probe.predict(pairs)) == list(probe.predict_features(stored))
    assert list(FittedProbe(result.path).predict(pairs)) == list(probe.predict_features(stored))
    for alone in ([r[0] for r in rows], [(r[0],) for r in rows]):
        with pytest.raises(InputError, match="fitted on sentence pairs, and got no second texts"):
            probe.predict(alone)
    cli = CliRunner().invoke(main, ["predict", str(result.path), str(corpus), "-o", str(tmp_path / "o.csv"),
                                    "--no-progress"])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert list(pd.read_csv(tmp_path / "o.csv").prediction) == list(probe.predict_features(stored))


def test_another_model_given_is_refused_before_any_text_is_encoded(fitted, split_features, tmp_path, monkeypatch):
    """``--model`` (``model=``) names the bundle's model in another place; another model (its weights' sha256 not the
    bundle's) is one clear InputError before the model is loaded (it was refused after its forward pass, and the
    command line had no --model)."""
    from support.errors import assert_one_clear_error
    from support.tiny import build_tiny_bert

    from featx.deploy.probe import Probe

    other = build_tiny_bert(tmp_path / "other", seed=1)
    monkeypatch.setattr(Probe, "_encoder", lambda *a: pytest.fail("the model was loaded"))
    with pytest.raises(InputError, match=r"model='.*other' is not the model the bundle was fitted on .*sha256"):
        featx.load(fitted.path).features(["the cat"], model=str(other))
    corpus = split_features.parent / "corpus.csv"
    result = CliRunner().invoke(main, ["predict", str(fitted.path), str(corpus), "-o", "-", "-q", f"--model={other}"])
    assert result.exit_code == 2 and not result.stdout
    assert_one_clear_error(result.stderr, r"--model .*other is not the model the bundle was fitted on .*hint: give")


def test_a_random_init_bundle_draws_its_own_random_weights_again(tiny_model, tmp_path):
    """A probe fitted on a random-weights control (``--random-init --init-seed 5``) records the seed, and predict
    draws the same weights again: texts give the stored features bit for bit. A bundle of an older featx, which
    did not record the seed, is one clear error (its weights sha256 cannot tell one seed from another)."""
    rows = [[text, label, split] for text, label, _, _, split in deploy_rows(40)]
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "label", "split"))
    output = tmp_path / "random.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", random_init=True, init_seed=5,
                  progress=False)  # fmt: skip
    fitted = featx.fit(output, label="label", output=tmp_path / "random.featx", folds=3)
    probe = featx.load(fitted.path)
    assert probe.extraction["random_init"] is True and probe.extraction["option_seed"] == 5
    with featx.open(output) as features:
        texts, stored = features.texts, stored_matrix(features, probe.spec, probe.pooling)
    assert np.array_equal(probe.features(texts), stored)
    older = featx.load(fitted.path)
    del older.extraction["option_seed"]
    with pytest.raises(InputError, match="does not record their seed") as error:
        older.features(texts[:2])
    assert "featx fit" in error.value.hint


def test_a_bundle_whose_model_folder_moved_is_one_clear_error(tmp_path, monkeypatch):
    """The local model folder a bundle was fitted with, moved: predict says so (it said "model folder ... does
    not exist; give a Hugging Face id", for a path the user never typed); from Python the new place is taken,
    checked by its weights' sha256."""
    import shutil

    from support.errors import assert_one_clear_error
    from support.tiny import build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert")
    rows = [[text, label, split] for text, label, _, _, split in deploy_rows(40)]
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "label", "split"))
    featx.extract(corpus, model=str(model), output=tmp_path / "f.h5", poolings="mean", progress=False)
    fitted = featx.fit(tmp_path / "f.h5", label="label", output=tmp_path / "m.featx", folds=3)
    few = ["the cat", rows[0][0]]
    expected = featx.load(fitted.path).predict(few)
    moved = shutil.move(model, tmp_path / "moved")
    result = CliRunner().invoke(main, ["predict", str(fitted.path), str(corpus), "-o", "-", "-q"])
    assert result.exit_code == 2
    assert_one_clear_error(result.stderr, f"model folder {model} .*is not there any more.*--model FOLDER")
    assert featx.load(fitted.path).predict(few, model=str(moved)).tolist() == expected.tolist()
    # the command line takes the new place too (--model), found and checked as the library does
    small = write_csv(tmp_path / "few.csv", [[text] for text in few], header=("text",))
    given = CliRunner().invoke(main, ["predict", str(fitted.path), str(small), "-o", "-", "-q", "--model", str(moved)])
    assert given.exit_code == 0, given.output
    assert list(pd.read_csv(io.StringIO(given.stdout)).prediction) == expected.tolist()
    # the encoder loads the folder that was checked, never the name resolved again (from another working folder)
    monkeypatch.chdir(tmp_path)
    probe = featx.load(fitted.path)
    assert probe._options({"model": "moved"})["model"] == str(Path(moved).resolve())


def test_a_bundle_finds_its_default_or_hub_model_where_this_machine_keeps_it(fitted, tmp_path, monkeypatch):
    """A bundle used where its model lives elsewhere (another machine, venv or Hugging Face cache): the default
    model and a hub id are found by their names (the loader was handed the recorded path, "model folder ...
    does not exist"); a local folder given as a relative path (--model ./bert) that moved is the moved-model
    error, naming where it was."""
    import huggingface_hub.constants

    from featx.deploy.model_ref import model_folder
    from featx.errors import ModelError
    from featx.extraction import local_model_folder

    default = {"model": "default:all-MiniLM-L6-v2", "model_path": str(tmp_path / "old-venv" / "model")}
    assert model_folder(default) == local_model_folder("default")
    snapshot = tmp_path / "cache" / "models--org--tiny" / "snapshots" / "def456"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("def456")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub = {"model": "org/tiny", "model_path": "/elsewhere/hub/models--org--tiny/snapshots/abc123"}
    assert model_folder(hub) == snapshot.resolve()
    probe = featx.load(fitted.path)
    probe.extraction.update(model="bert", model_path=str(tmp_path / "bert"))  # typed --model bert, since moved
    with pytest.raises(ModelError, match=f"model folder {tmp_path / 'bert'} .*is not there any more"):
        probe.features(["the cat"])


def test_a_prompt_bundle_renders_each_text_into_the_stored_prompt(tmp_path):
    """A decoder's bundle of prompts (a template inside a chat template with a system message, contrast answers),
    read at the answer token of layer 1 of 2: ``probe.features`` renders each text into the prompts the file stored
    and gives its features (the answers' difference), which tests/extraction/inputs/test_templates.py checks against
    a plain transformers forward; a text alone gives its row among the others'."""
    from support.families import BY_NAME, build_family
    from support.prompt_models import add_chat_template

    model = add_chat_template(build_family(BY_NAME["qwen2"], tmp_path / "qwen2"))
    rows = [[text, label, split] for text, label, _, _, split in deploy_rows(12)]
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "label", "split"))
    prompts = dict(template="Review: {text}\nSentiment:", chat_template=True, system="Be brief.", contrast="yes, no")
    output = tmp_path / "prompts.h5"
    featx.extract(corpus, model=str(model), output=output, poolings="last", pool_at="last", store_dtype="float32",
                  batch_size=4, progress=False, **prompts)  # fmt: skip
    probe = featx.fit(output, label="label", layer="1", pooling="at", folds=2, cs=[1.0], write=False).probe
    assert probe.extraction["option_contrast"] and probe.extraction["option_system"] == "Be brief."
    with featx.open(output) as features:
        texts, stored = features.texts, stored_matrix(features, probe.spec, probe.pooling)
    got = probe.features(texts, batch_size=3)
    assert np.abs(got - stored).max() <= 1e-6 * np.abs(stored).max()
    np.testing.assert_allclose(probe.features(texts[5:6]), got[5:6], rtol=0, atol=1e-6)

"""``featx extract --intervene`` end to end on the tiny BERT: an identity edit gives the plain features bit for
bit; an edit is recorded in the attributes and the fingerprint (an edited file is never taken for a plain one);
stored features show the edit (mean pooling is linear, so the pooled layer-L vectors carry it exactly); the
native fast path is not selected; a source that does not fit the model is refused before any forward pass."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from support.edits import write_erasers, zero_rank
from support.errors import assert_one_clear_error

import featx
from featx.cli import main
from featx.errors import InputError, StoreError
from featx.extraction import ExtractConfig, extract, read_bundle_directions


def run(corpus, model, output, **options):
    options = {"poolings": "mean", "store_dtype": "float32", "progress": False, "batch_size": 4, **options}
    return extract(ExtractConfig(corpus=corpus, model=str(model), output=output, **options))


def stored(path) -> dict:
    with featx.open(path) as features:
        return {layer: features.features("mean", layer) for layer in features.layers}


@pytest.fixture(scope="module")
def plain(tiny_model, tmp_path_factory):
    """The plain extraction through transformers (``FEATX_NATIVE=0``: the path an edited run takes)."""
    import os

    from support.tiny import SENTENCES, write_csv

    folder = tmp_path_factory.mktemp("edit-plain")
    corpus = write_csv(folder / "corpus.csv", SENTENCES)
    os.environ["FEATX_NATIVE"] = "0"
    try:
        summary = run(corpus, tiny_model, folder / "plain.h5")
    finally:
        del os.environ["FEATX_NATIVE"]
    return corpus, summary.output


def test_identity_edits_give_the_plain_features_bit_for_bit(plain, tiny_model, topic_bundle, tmp_path):
    corpus, plain_file = plain
    with featx.open(plain_file) as features:
        sha, d = features.attrs["model_sha256"], features.hidden_size
        assert "intervention" not in features.attrs
    erasers = write_erasers(tmp_path, sha, {1: zero_rank(d)})
    spec = f"steer:{topic_bundle}:a:0@1,erase:{erasers}@1"
    edited = run(corpus, tiny_model, tmp_path / "identity.h5", intervene=spec)
    want, got = stored(plain_file), stored(edited.output)
    for layer in want:
        np.testing.assert_array_equal(got[layer], want[layer])
    with featx.open(edited.output) as features, featx.open(plain_file) as reference:
        records = json.loads(features.attrs["intervention"])
        assert [r["kind"] for r in records] == ["steer", "erase"] and records[0]["alpha"] == 0.0
        assert records[1]["source"] == str(erasers.resolve()) and len(records[1]["source_sha256"]) == 64
        assert features.attrs["implementation"] == "transformers"  # the native path is not selected
        assert any("native fast path is not used" in note for note in edited.notes)
        assert features.fingerprint != reference.fingerprint and '"intervene"' in features.fingerprint
        assert '"intervene"' not in reference.fingerprint


def test_project_and_mean_leave_the_span_stored(plain, tiny_model, topic_bundle, tmp_path):
    corpus, plain_file = plain
    part = read_bundle_directions(topic_bundle).layers[1]
    centred = part.directions - part.directions.mean(axis=1, keepdims=True)
    projected = stored(run(corpus, tiny_model, tmp_path / "p.h5", intervene=f"project:{topic_bundle}@1").output)
    ablated = stored(run(corpus, tiny_model, tmp_path / "m.h5", intervene=f"mean:{topic_bundle}@1").output)
    want = stored(plain_file)
    np.testing.assert_array_equal(projected[0], want[0])  # below the edit: untouched
    assert np.abs(projected[1] @ centred).max() < 1e-4 * np.abs(want[1] @ centred).max()
    np.testing.assert_allclose(ablated[1] @ centred, np.tile(part.mean @ centred, (len(want[1]), 1)), atol=1e-4)
    assert not np.allclose(projected[2], want[2], atol=1e-3)  # the layer above was recomputed


def test_an_edited_file_is_never_taken_for_a_plain_one(plain, tiny_model, tmp_path):
    import shutil

    corpus, plain_file = plain
    target = tmp_path / "out.h5"
    shutil.copy(plain_file, target)
    with pytest.raises(StoreError, match="made from a different corpus, model or options"):
        run(corpus, tiny_model, target, intervene="random:2@1")
    edited = run(corpus, tiny_model, tmp_path / "edited.h5", intervene="random:2@1")
    with pytest.raises(StoreError, match="made from a different corpus, model or options"):
        run(corpus, tiny_model, edited.output)
    assert run(corpus, tiny_model, edited.output, intervene="random:2@1").status == "up-to-date"
    with pytest.raises(InputError, match="featx predict does not make"):  # a bundle could not make them again
        featx.fit(edited.output, label="sentiment", write=False)
    with pytest.raises(StoreError, match="made from a different corpus, model or options"):
        run(corpus, tiny_model, edited.output, intervene="random:2@1", intervene_seed=1)


def test_a_source_for_another_model_is_refused_before_any_forward_pass(plain, tiny_model, tmp_path, monkeypatch):
    from featx.extraction.forward import runner

    corpus, plain_file = plain
    with featx.open(plain_file) as features:
        d = features.hidden_size
    erasers = write_erasers(tmp_path, "0" * 64, {1: zero_rank(d)})
    monkeypatch.setattr(runner.Runner, "__call__", lambda *args: pytest.fail("a forward pass ran"))
    args = ["extract", str(corpus), "--model", str(tiny_model), "-o", str(tmp_path / "e.h5")]
    result = CliRunner().invoke(main, [*args, "--intervene", f"erase:{erasers}@1"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "was made for model tiny" in result.output and "hint:" in result.output


def test_an_edited_forward_runs_in_memory_as_in_a_file(plain, tiny_model, tmp_path):
    """What ``featx intervene`` builds on: ``encode`` with an ``embed_config`` holding the edit, on a model loaded
    once, gives the edited file's features."""
    from support.tiny import SENTENCES

    from featx.extraction import embed_config, encode, load_model

    corpus, _ = plain
    spec = "random:3@1"
    edited = stored(run(corpus, tiny_model, tmp_path / "r.h5", intervene=spec).output)
    texts = [row[0] for row in SENTENCES]
    config = embed_config(texts, None, poolings="mean", store_dtype="float32", batch_size=4, intervene=spec)
    embeddings = encode(load_model(str(tiny_model), device="cpu"), config, texts)
    for layer, values in edited.items():
        np.testing.assert_array_equal(embeddings.array(layer, "mean"), values)


def _ffn_width(model) -> int:
    return int(json.loads((model / "config.json").read_text(encoding="utf-8"))["intermediate_size"])


def test_identity_site_edits_give_the_plain_features_bit_for_bit(plain, tiny_model, topic_bundle, tmp_path):
    corpus, plain_file = plain
    with featx.open(plain_file) as features:
        sha = features.attrs["model_sha256"]
    erasers = write_erasers(tmp_path, sha, {1: zero_rank(_ffn_width(tiny_model))})
    spec = f"steer:{topic_bundle}:a:0@1:attn_out,erase:{erasers}@1:ffn"
    edited = run(corpus, tiny_model, tmp_path / "identity.h5", intervene=spec)
    want, got = stored(plain_file), stored(edited.output)
    for layer in want:
        np.testing.assert_array_equal(got[layer], want[layer])
    with featx.open(edited.output) as features:
        records = json.loads(features.attrs["intervention"])
    assert [record["site"] for record in records] == ["attn_out", "ffn"]
    assert any("layer 1's ffn" in note for note in edited.notes)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("erase:{erasers}@1:ffn", "holds vectors of width 32, but .*'s layer 1's ffn has width 64"),
        ("random:65@1:ffn", "rank 65 is more than the width of .*'s layer 1's ffn, 64"),
        ("random:2@3:pre_ln", "site pre_ln at layer 3 is outside the model's blocks, which make layers 1..2"),
        ("random:2@1:ffn", "AlbertModel has no site ffn featx knows"),
    ],
)
def test_a_bad_site_edit_is_refused_before_any_forward_pass(
    spec, message, plain, tiny_model, family_models, tmp_path, monkeypatch
):
    from support.families import BY_NAME

    from featx.extraction.forward import runner

    corpus, plain_file = plain
    with featx.open(plain_file) as features:
        erasers = write_erasers(tmp_path, features.attrs["model_sha256"], {1: zero_rank(features.hidden_size)})
    model = family_models(BY_NAME["albert"]) if "Albert" in message else tiny_model
    monkeypatch.setattr(runner.Runner, "__call__", lambda *args: pytest.fail("a forward pass ran"))
    args = ["extract", str(corpus), "--model", str(model), "-o", str(tmp_path / "e.h5")]
    result = CliRunner().invoke(main, [*args, "--intervene", spec.format(erasers=erasers)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert_one_clear_error(result.output, message)


@pytest.mark.parametrize(
    "options, refused",
    [
        (["--layers", "1", "--intervene", "random:2@2"], True),
        (["--layers", "0", "--intervene", "random:2@1"], True),
        (["--layers", "0", "--intervene", "random:2@1:ffn"], True),
        (["--layers", "1", "--site", "ffn", "--intervene", "random:2@1"], False),  # the stored layer 1 is edited
        (["--layers", "1", "--site", "ffn", "--intervene", "random:2@1:attn_out"], False),
        (["--layers", "1,2", "--site", "ffn", "--intervene", "random:2@1"], False),  # and block 2's ffn
    ],
)
def test_an_edit_above_every_stored_layer_is_refused_before_any_forward_pass(
    options, refused, plain, tiny_model, tmp_path, monkeypatch
):
    """Below the top, only the blocks up to the highest stored layer run: an edit above it changed nothing, and the
    file held the plain features recorded as edited."""
    from featx.extraction.forward import runner

    corpus, _ = plain
    if refused:
        monkeypatch.setattr(runner.Runner, "__call__", lambda *args: pytest.fail("a forward pass ran"))
    args = ["extract", str(corpus), "--model", str(tiny_model), "-o", str(tmp_path / "e.h5"), "-q", *options]
    result = CliRunner().invoke(main, args)
    if refused:
        assert result.exit_code == 2, result.output
        assert_one_clear_error(result.output, "changes nothing stored: the highest stored layer is")
    else:
        assert result.exit_code == 0, result.output


def test_an_edit_at_the_top_is_marked_in_the_fingerprint(plain, tiny_model, tmp_path):
    """An edit at the top layer acts on the stored top layer (after a decoder's final norm); the fingerprint says so,
    so a file from before, whose top edit preceded the norm, is not resumed or reused as the same edit."""
    import json

    corpus, _ = plain
    fingerprints = {}
    for layer in (1, 2):
        with featx.open(run(corpus, tiny_model, tmp_path / f"at{layer}.h5", intervene=f"random:2@{layer}").output) as f:
            fingerprints[layer] = json.loads(f.attrs["fingerprint"])
    assert fingerprints[2]["top_edit"] == "stored top layer" and "top_edit" not in fingerprints[1]


def test_a_steer_too_large_for_the_states_names_the_edit_not_float16_storage(plain, tiny_model, topic_bundle, tmp_path):
    """A steer whose amount overflows float32 inside the layers above: the hint says the edit may be too large, and
    says nothing of float16 storage when the file stores float32."""
    corpus, _ = plain
    with pytest.raises(StoreError, match="inf or NaN") as caught:
        run(corpus, tiny_model, tmp_path / "huge.h5", intervene=f"steer:{topic_bundle}:b:1e38@1")
    assert "give a smaller steer amount" in caught.value.hint and "float16's range" not in caught.value.hint
    assert not (tmp_path / "huge.h5").exists()

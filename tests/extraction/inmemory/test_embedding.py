"""``featx.extraction.embed`` / ``featx.embed``: in-memory texts give, bit for bit, what ``featx extract`` with the
same options stores (texts, both pair modes, float16 rounding), a row never depends on its batch neighbours, and
bad inputs are one clear ``InputError`` before any model is loaded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.families import BY_NAME
from support.tiny import SENTENCES, write_csv

import featx
from featx.errors import InputError
from featx.extraction import ExtractConfig, embed, extract

TEXTS = [row[0] for row in SENTENCES]
SECOND = [row[0] for row in reversed(SENTENCES)]


def extract_file(corpus, output, model, **options):
    options.setdefault("store_dtype", "float32")
    return extract(ExtractConfig(corpus=corpus, output=output, model=str(model), progress=False, **options))


def assert_equal_to_file(embeddings, path, site="hidden"):
    with featx.open(path) as features:
        assert embeddings.layers == features.layers
        assert embeddings.poolings == features.poolings
        assert embeddings.rows == features.n_rows
        for pooling in features.site_poolings(site):
            for layer in features.site_layers(site):
                got = embeddings.array(layer, pooling, site=site)
                assert got.dtype == np.float32 and got.flags.c_contiguous
                np.testing.assert_array_equal(got, features.features(pooling, layer, site=site))


@pytest.mark.parametrize("store_dtype", ["float32", "float16"])
def test_embed_equals_extract_then_read(tiny_model, tmp_path, store_dtype):
    """Native BERT, every pooling, float16 rounded as the file rounds it."""
    corpus = write_csv(tmp_path / "corpus.csv", SENTENCES)
    summary = extract_file(corpus, tmp_path / "f.h5", tiny_model, poolings="all", store_dtype=store_dtype)
    embeddings = embed(TEXTS, model=str(tiny_model), poolings="all", store_dtype=store_dtype)
    assert_equal_to_file(embeddings, summary.output)
    assert embeddings.model["model_sha256"] == featx.open(summary.output).attrs["model_sha256"]
    assert embeddings.model["store_dtype"] == store_dtype
    assert embeddings.model["implementation"] == "native"


def test_embed_equals_extract_on_a_decoder_truncated(family_models, family_corpus, tmp_path):
    """Llama through transformers, layers 0:2 (one block of two runs in both)."""
    model = family_models(BY_NAME["llama"])
    summary = extract_file(family_corpus, tmp_path / "f.h5", model, layers="0:2", poolings="all", batch_size=3)
    embeddings = embed(TEXTS, model=str(model), layers="0:2", poolings="all", batch_size=3)
    assert_equal_to_file(embeddings, summary.output)
    assert embeddings.model["blocks_run"] == 1 and embeddings.model["n_model_layers"] == 3
    assert embeddings.model["causal"] and embeddings.poolings == ["mean", "max", "last"]


@pytest.mark.parametrize("mode", ["cross", "separate"])
def test_embed_pairs_equal_extract(tiny_model, tmp_path, mode):
    rows = [(a, b, "x") for a, b in zip(TEXTS, SECOND, strict=True)]
    corpus = write_csv(tmp_path / "pairs.csv", rows, header=("text", "text_pair", "label"))
    summary = extract_file(
        corpus, tmp_path / "p.h5", tiny_model, text_pair_col="text_pair", pair_mode=mode, poolings="all"
    )
    embeddings = embed(TEXTS, text_pairs=SECOND, pair_mode=mode, model=str(tiny_model), poolings="all")
    assert_equal_to_file(embeddings, summary.output)
    if mode == "separate":
        assert embeddings.sites == ["hidden", "pair_b"]
        assert_equal_to_file(embeddings, summary.output, site="pair_b")
    else:
        assert {"mean_a", "mean_b"} <= set(embeddings.poolings)


def test_rows_do_not_depend_on_their_batch_neighbours(tiny_model):
    """Each text alone, in a batch of one, equals its row among all the others (batched by length, padded)."""
    together = embed(TEXTS, model=str(tiny_model), poolings="mean,cls,max,last", layers="all")
    for row in (0, 3, len(TEXTS) - 1):
        alone = embed([TEXTS[row]], model=str(tiny_model), poolings="mean,cls,max,last", batch_size=1)
        for pooling in alone.poolings:
            for layer in alone.layers:
                np.testing.assert_allclose(
                    alone.array(layer, pooling)[0], together.array(layer, pooling)[row], rtol=1e-5, atol=1e-6
                )


def test_inputs_of_every_kind_give_the_same_rows(tiny_model):
    """A list, a tuple, a numpy array (1-D or one column), a pandas Series and a one-column DataFrame."""
    expected = embed(TEXTS, model=str(tiny_model), layers="1").array(1, "mean")
    for texts in (
        tuple(TEXTS),
        np.array(TEXTS),
        np.array(TEXTS, dtype=object)[:, None],
        pd.Series(TEXTS, index=range(10, 10 + len(TEXTS))),
        pd.DataFrame({"sentence": TEXTS}),
    ):
        np.testing.assert_array_equal(embed(texts, model=str(tiny_model), layers="1").array(1, "mean"), expected)


def test_featx_embed_gives_one_array(tiny_model):
    """``featx.embed``: one layer (negative counts from the top) and one pooling."""
    whole = embed(TEXTS, model=str(tiny_model), layers="all", poolings="cls")
    top = featx.embed(TEXTS, model=str(tiny_model), layer=-1, pooling="cls")
    assert isinstance(top, np.ndarray) and top.shape == (len(TEXTS), 32)
    np.testing.assert_array_equal(top, whole.array(2, "cls"))
    mean = embed(TEXTS, model=str(tiny_model), layers="1").array(1, "mean")
    np.testing.assert_array_equal(featx.embed(TEXTS, model=str(tiny_model), layer=1), mean)


def test_featx_embed_gives_the_site_it_is_asked_for(tiny_model):
    """``site=`` picks the array; ``sites=`` (the plural of featx.extraction.embed) is refused, never ignored."""
    whole = embed(TEXTS[:2], model=str(tiny_model), layers="1", poolings="max", sites="ffn")
    ffn = featx.embed(TEXTS[:2], model=str(tiny_model), layer=1, pooling="max", site="ffn")
    np.testing.assert_array_equal(ffn, whole.array(1, "max", site="ffn"))
    assert ffn.shape[1] != whole.array(1, "max").shape[1]  # the intermediate's width, not the hidden state's


ONE_ARRAY_REFUSED = [
    ({"layers": "all"}, "featx.embed takes one layer=, not layers="),
    ({"poolings": "cls"}, "featx.embed takes one pooling=, not poolings="),
    ({"sites": "ffn"}, "featx.embed takes one site=, not sites="),
    ({"layer": "all"}, "layer='all' is not one layer"),
    ({"layer": [1, 2]}, r"layer=\[1, 2\] is not one layer"),
    ({"layer": True}, "layer=True is not one layer"),
    ({"pooling": "mean,cls"}, "pooling='mean,cls' is not one pooling"),
    ({"pooling": ["mean"]}, r"pooling=\['mean'\] is not one pooling"),
    ({"site": "hidden,ffn"}, "site='hidden,ffn' is not one site"),
    # separate pairs are two arrays (side a, side b): one of them alone was returned, side b dropped
    ({"text_pairs": ["another text"], "pair_mode": "separate"}, "pair_mode='separate' encodes two arrays"),
]


@pytest.mark.parametrize("options,message", ONE_ARRAY_REFUSED, ids=[case[1][:30] for case in ONE_ARRAY_REFUSED])
def test_featx_embed_refuses_several_before_loading(options, message, monkeypatch):
    """One InputError before the model loads, never a TypeError, a ValueError after the forward pass, or a
    keyword ignored."""
    from featx.extraction.model import loading as modeling

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded before the inputs were checked")

    monkeypatch.setattr(modeling, "load_model", no_load)
    with pytest.raises(InputError, match=message) as error:
        featx.embed(["a text"], model="no/such-model", **options)
    assert "featx.extraction.embed" in error.value.hint


BAD_INPUTS = [
    ([], {}, "texts is empty"),
    ("one text", {}, "texts is a single string"),
    (["fine", None], {}, r"texts\[1\] is NoneType"),
    (["fine", 3], {}, r"texts\[1\] is int"),
    (pd.Series(["fine", np.nan]), {}, r"texts\[1\] is float"),
    (["fine", "  ", ""], {}, r"texts: 2 empty or whitespace-only text\(s\), at position\(s\) 1, 2"),
    (["fine", "\u200b\u00ad"], {}, r"texts: 1 empty or whitespace-only text\(s\), at position\(s\) 1"),
    (pd.DataFrame({"a": ["x"], "b": ["y"]}), {}, "texts is a table of 2 columns"),
    (np.array([["a", "b"], ["c", "d"]]), {}, r"texts is an array of shape \(2, 2\)"),
    ({"a": 1}, {}, "texts is a dict, not a list of texts"),
    (["a", "b"], {"text_pairs": ["c"]}, "text_pairs has 1 texts but texts has 2"),
    (["a"], {"text_pairs": [""]}, "text_pairs: 1 empty"),
    (["a"], {"pair_mode": "separate"}, "pair_mode applies to sentence pairs only"),
    (["a"], {"text_pairs": ["b"], "pair_mode": "both"}, "^pair_mode='both' is not understood"),
    (["a"], {"batch_size": 0}, "^batch_size=0 must be a whole number"),
    (["a"], {"store_dtype": "int8"}, "^store_dtype='int8' is not understood"),
]


@pytest.mark.parametrize("texts,options,message", BAD_INPUTS, ids=[case[2][:30] for case in BAD_INPUTS])
def test_bad_inputs_are_one_clear_error_before_loading(texts, options, message, monkeypatch):
    from featx.extraction.model import loading as modeling

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded before the inputs were checked")

    monkeypatch.setattr(modeling, "load_model", no_load)
    with pytest.raises(InputError, match=message) as error:
        embed(texts, model="no/such-model", **options)
    assert "\n" not in error.value.message


def test_array_of_what_was_not_embedded_is_refused(tiny_model):
    embeddings = embed(TEXTS[:2], model=str(tiny_model), layers="1", poolings="mean")
    with pytest.raises(InputError, match="layer 2 was not embedded: these embeddings hold layers 1"):
        embeddings.array(2, "mean")
    with pytest.raises(InputError, match="pooling 'cls' was not embedded"):
        embeddings.array(1, "cls")
    with pytest.raises(InputError, match="site 'ffn' was not embedded"):
        embeddings.array(1, "mean", site="ffn")
    # FeatureFile.features takes (pooling, layer): the same order here was a raw ValueError; 1.5 was layer 1
    for layer in ("mean", 1.5, None, "\u00b2", "--1"):  # '²' and '--1' passed isdigit after lstrip('-'): int raised
        with pytest.raises(InputError, match=f"layer {layer!r} is not a layer number") as error:
            embeddings.array(layer, "mean")
        assert "array(layer, pooling" in error.value.hint
    np.testing.assert_array_equal(embeddings.array("1", "mean"), embeddings.array(np.int64(1), "mean"))


@pytest.mark.parametrize("texts", [["a text"], pd.Series(["a text"]), np.array(["a text"])])
def test_extract_refuses_in_memory_texts_clearly(texts):
    with pytest.raises(InputError, match="featx.extract takes a corpus file path") as error:
        featx.extract(texts, model="default")
    assert "featx.embed" in error.value.hint


def test_extract_of_a_list_of_files_names_more_corpora(tmp_path):
    """The CLI's ``featx extract a.conllu b.conllu`` is ``featx.extract(a, more_corpora=[b])``: a list of files
    names that, not featx.embed (which the hint of in-memory texts says)."""
    files = [tmp_path / "g-train.conllu", tmp_path / "g-test.conllu"]
    for path in files:
        path.write_text("1\tHi\t_\tINTJ\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="featx.extract takes a corpus file path") as error:
        featx.extract([str(files[0]), files[1]], model="default")
    assert "more_corpora=" in error.value.hint and "featx.embed" not in error.value.hint


def test_embed_long_window_equals_extract(tiny_model, tmp_path):
    """``long="window"``: rows longer than ``max_length`` run as overlapping windows, in memory as in the file."""
    corpus = write_csv(tmp_path / "corpus.csv", SENTENCES)
    options = dict(long="window", max_length=6, stride=2, poolings="mean,max,cls", layers="0:2")
    summary = extract_file(corpus, tmp_path / "w.h5", tiny_model, **options)
    embeddings = embed(TEXTS, model=str(tiny_model), **options)
    assert summary.windowed_rows > 0
    assert embeddings.model["long"] == "window" and embeddings.model["stride"] == 2
    assert_equal_to_file(embeddings, summary.output)


@pytest.mark.parametrize("native", [True, False])
def test_a_loaded_bf16_model_encodes_chunk_after_chunk_with_its_pooler(tiny_model, native):
    """``featx predict`` encodes chunk after chunk with one loaded model: the second ``Runner`` on it must not copy
    the pooler again (its linear layer is prepacked for oneDNN by then, and packed weights cannot be copied),
    and both chunks' ``pooler`` rows equal one ``embed`` of all the texts at bf16."""
    from featx.extraction.inmemory.sentences import as_texts, embed_config, encode
    from featx.extraction.model.loading import load_model

    options = {"model": str(tiny_model), "poolings": "pooler,mean", "layers": "all", "dtype": "bfloat16"}
    options |= {"device": "cpu", "progress": False}
    loaded = load_model(str(tiny_model), "cpu", "bfloat16", native=native)
    texts = as_texts(TEXTS)
    first = encode(loaded, embed_config(texts[:4], None, pair_mode=None, **options), texts[:4])
    second = encode(loaded, embed_config(texts[4:], None, pair_mode=None, **options), texts[4:])
    whole = embed(TEXTS, **{k: v for k, v in options.items() if k != "progress"})
    for layer in whole.layers:
        rows = np.concatenate([first.array(layer, "pooler"), second.array(layer, "pooler")])
        np.testing.assert_allclose(rows, whole.array(layer, "pooler"), rtol=2e-2, atol=2e-2)

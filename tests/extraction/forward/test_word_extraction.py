"""Extracting word inputs: word vectors equal a hand computation with plain transformers, do not
depend on batch neighbours, survive windows and interrupts, and bad input stops before any forward pass."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from support.helpers import interrupt_after_commits
from support.tiny import build_tiny_bert
from transformers import AutoModel, AutoTokenizer

import featx
from featx.cli import main
from featx.errors import InputError, StoreError
from featx.extraction import ExtractConfig, extract
from featx.extraction.tokens.long_windows import window_starts
from featx.store import partial_path

# Out-of-vocabulary words (zebras, quokka, xylophones) split into one subword per letter in the tiny vocabulary.
CONLLU = """# sent_id = s1
# text = the cat didn't see zebras
1\tthe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\tNumber=Sing\t5\tnsubj\t_\t_
3-4\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_
3\tdid\tdo\tAUX\tVBD\tTense=Past\t5\taux\t_\t_
4\tn't\tnot\tPART\tRB\t_\t5\tadvmod\t_\t_
4.1\tsee\tsee\tVERB\tVB\t_\t_\t_\t0:root\t_
5\tsee\tsee\tVERB\tVB\t_\t0\troot\t_\t_
6\tzebras\tzebra\tNOUN\tNNS\tNumber=Plur\t5\tobj\t_\t_

# sent_id = s2
1\tquokka\tquokka\tNOUN\tNN\tNumber=Sing\t2\tnsubj\t_\t_
2\truns\trun\tVERB\tVBZ\tTense=Pres\t0\troot\t_\t_

# sent_id = s3
1\tthe\tthe\tDET\tDT\t_\t3\tdet\t_\t_
2\tred\tred\tADJ\tJJ\t_\t3\tamod\t_\t_
3\txylophones\txylophone\tNOUN\tNNS\tNumber=Plur\t0\troot\t_\t_
"""
SENTENCE_WORDS = [["the", "cat", "did", "n't", "see", "zebras"], ["quokka", "runs"], ["the", "red", "xylophones"]]


def run(corpus, model, output, **options):
    return extract(
        ExtractConfig(corpus=corpus, output=output, model=str(model), progress=False, store_dtype="float32", **options)
    )


def reference_words(model_path, sentences):
    """{pooling: (words, layers, hidden)} from plain transformers, one sentence at a time (no padding)."""
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    model = AutoModel.from_pretrained(str(model_path), dtype=torch.float32, attn_implementation="eager").eval()
    out = {"first": [], "last": [], "mean": []}
    with torch.no_grad():
        for words in sentences:
            encoded = tokenizer(words, is_split_into_words=True, return_tensors="pt")
            states = torch.stack(model(**encoded, output_hidden_states=True).hidden_states, 1)[0]  # (L, T, H)
            word_ids = encoded.word_ids(0)
            for word in range(len(words)):
                tokens = [i for i, w in enumerate(word_ids) if w == word]
                assert tokens, "every word has subwords"
                out["first"].append(states[:, tokens[0]])
                out["last"].append(states[:, tokens[-1]])
                out["mean"].append(states[:, tokens].mean(1))
    return {name: torch.stack(values).numpy() for name, values in out.items()}


@pytest.fixture
def treebank(tmp_path):
    path = tmp_path / "tb.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    return path


def test_word_vectors_equal_a_hand_computation(tiny_model, treebank, tmp_path):
    summary = run(treebank, tiny_model, tmp_path / "w.h5")
    expected = reference_words(tiny_model, SENTENCE_WORDS)
    with featx.open(summary.output) as features:
        assert features.word_forms() == [word for words in SENTENCE_WORDS for word in words]
        assert features.word_n_subwords()[5] == 6  # z ##e ##b ##r ##a ##s
        assert features.texts[0] == "the cat didn't see zebras" and features.ids == ["s1", "s2", "s3"]
        np.testing.assert_array_equal(features.word_heads(), [1, 4, 4, 4, -1, 4, 1, -1, 2, 2, -1])
        for pooling in ("first", "last", "mean"):
            for position, layer in enumerate(features.layers):
                np.testing.assert_allclose(
                    features.word_features(pooling, layer), expected[pooling][:, position], atol=1e-4, rtol=0
                )
        # sentence-level poolings are stored as usual
        assert features.features("mean", 1).shape == (3, 32)


def test_word_vectors_do_not_depend_on_batch_neighbours(tiny_model, treebank, tmp_path):
    together = run(treebank, tiny_model, tmp_path / "a.h5", word_pooling="first,mean")
    alone = run(treebank, tiny_model, tmp_path / "b.h5", word_pooling="first,mean", batch_size=1)
    with featx.open(together.output) as a, featx.open(alone.output) as b:
        assert a.word_poolings() == ["first", "mean"]
        for pooling in ("first", "mean"):
            np.testing.assert_allclose(a.word_features(pooling, 2), b.word_features(pooling, 2), atol=1e-5, rtol=0)


MAX_POSITIONS = 16


def test_a_sentence_longer_than_the_model_runs_in_windows_each_word_from_its_most_central(tmp_path):
    model_path = build_tiny_bert(tmp_path / "short", max_positions=MAX_POSITIONS)
    words = [
        "the",
        "cat",
        "loved",
        "zebras",
        "and",
        "the",
        "dog",
        "saw",
        "quokkas",
        "in",
        "the",
        "old",
        "city",
        "today",
    ]
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"tokens": words}) + "\n" + json.dumps({"tokens": ["blue"]}) + "\n")
    summary = run(path, model_path, tmp_path / "w.h5", stride=6)
    assert summary.windowed_rows == 1 and summary.truncated_rows == 0 and "1 windowed" in summary.line()
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    model = AutoModel.from_pretrained(str(model_path), dtype=torch.float32, attn_implementation="eager").eval()
    encoded = tokenizer(words, is_split_into_words=True)
    ids, word_ids = encoded["input_ids"][1:-1], encoded.word_ids()[1:-1]
    budget = MAX_POSITIONS - 2
    assert len(ids) > budget
    starts = window_starts(len(ids), budget, 6)
    expected = []
    with torch.no_grad():
        for word in range(len(words)):  # brute force: the window where the word's least central token is most central
            tokens = [i for i, w in enumerate(word_ids) if w == word]
            margins = [
                min(min(i - start, start + budget - 1 - i) for i in tokens)
                if tokens[0] >= start and tokens[-1] < start + budget
                else -1
                for start in starts
            ]
            start = starts[int(np.argmax(margins))]
            window = torch.tensor([[tokenizer.cls_token_id, *ids[start : start + budget], tokenizer.sep_token_id]])
            states = torch.stack(model(input_ids=window, output_hidden_states=True).hidden_states, 1)[0]
            expected.append(states[:, [1 + i - start for i in tokens]].mean(1))
    expected = torch.stack(expected).numpy()
    with featx.open(summary.output) as features:
        assert features.word_offsets().tolist() == [0, len(words), len(words) + 1]
        for position, layer in enumerate(features.layers):
            np.testing.assert_allclose(
                features.word_features("mean", layer)[: len(words)], expected[:, position], atol=1e-4, rtol=0
            )


def test_an_interrupted_extraction_resumes_to_the_same_words(tiny_model, tmp_path, monkeypatch):
    lines = [json.dumps({"tokens": words, "n": [str(len(w)) for w in words]}) for words in SENTENCE_WORDS * 4]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    whole = run(path, tiny_model, tmp_path / "whole.h5", commit_rows=3)
    interrupt_after_commits(monkeypatch, 2)
    with pytest.raises(featx.errors.Interrupted):
        run(path, tiny_model, tmp_path / "cut.h5", commit_rows=3)
    assert partial_path(tmp_path / "cut.h5").exists()
    monkeypatch.undo()
    resumed = run(path, tiny_model, tmp_path / "cut.h5", commit_rows=3)
    assert resumed.status == "resumed" and resumed.resumed_from == 6
    with featx.open(whole.output) as a, featx.open(resumed.output) as b:
        for pooling in ("first", "last", "mean"):
            np.testing.assert_array_equal(a.word_features(pooling, 1), b.word_features(pooling, 1))
        np.testing.assert_array_equal(a.word_labels("n"), b.word_labels("n"))


def test_fingerprint_names_word_options_only_for_word_inputs(tiny_model, treebank, corpus_csv, tmp_path):
    plain = run(corpus_csv, tiny_model, tmp_path / "p.h5")
    words = run(treebank, tiny_model, tmp_path / "w.h5", word_pooling="mean")
    with featx.open(plain.output) as p, featx.open(words.output) as w:
        assert "words" not in json.loads(p.fingerprint) and not p.has_words
        assert json.loads(w.fingerprint)["words"] == {"format": "conllu", "columns": None, "word_poolings": ["mean"]}
    with pytest.raises(StoreError, match="different corpus, model or options"):
        run(treebank, tiny_model, tmp_path / "w.h5", word_pooling="first")


def test_a_word_without_subwords_is_refused_before_the_model_runs(tiny_model, tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps({"tokens": ["the", "cat"], "id": "ok"})
        + "\n"
        + json.dumps({"tokens": ["the", "\u0007"], "id": "bell"})
        + "\n"
    )
    with pytest.raises(InputError, match=r"sentence 'bell': word 2 \('\\x07'\) gives the tokenizer no token"):
        run(path, tiny_model, tmp_path / "c.h5")
    assert not partial_path(tmp_path / "c.h5").exists() and not (tmp_path / "c.h5").exists()


def test_cli_reads_several_files_as_splits(tiny_model, treebank, tmp_path):
    dev = tmp_path / "x-ud-dev.conllu"
    dev.write_text(CONLLU.replace("sent_id = s", "sent_id = d"), encoding="utf-8")
    train = tmp_path / "x-ud-train.conllu"
    train.write_text(CONLLU, encoding="utf-8")
    output = tmp_path / "ud.h5"
    result = CliRunner().invoke(
        main,
        [
            "extract",
            str(train),
            str(dev),
            "-o",
            str(output),
            "--model",
            str(tiny_model),
            "-q",
            "--word-pooling",
            "first",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "splits from the file names: train 3 sentences, dev 3 sentences" in result.output
    with featx.open(output) as features:
        assert list(features.split) == ["train"] * 3 + ["dev"] * 3 and features.word_poolings() == ["first"]
        assert len(features.word_forms()) == 22 and "upos" in features.word_label_columns()


@pytest.mark.parametrize("seed", range(20))
def test_whole_words_come_from_one_window_in_order(seed):
    from featx.extraction.tokens.long_windows import split_row

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 4, size=rng.integers(8, 30))
    words = np.repeat(np.arange(len(sizes)), sizes)
    ids = np.r_[101, np.arange(len(words)) + 1000, 102]
    budget, stride = int(rng.integers(6, 12)), int(rng.integers(2, 5))
    row = split_row(ids, 1, 1, budget, stride, np.r_[-1, words, -1])
    assert np.all(np.diff(row.owner) >= 0)  # the stitching needs windows in order
    np.testing.assert_array_equal(row.input_ids[row.owner, row.position], ids)  # every token, from its window
    starts = window_starts(len(words), budget, stride)
    for word in range(len(sizes)):
        tokens = np.flatnonzero(words == word)
        owners = set(row.owner[1 + tokens].tolist())
        holders = [w for w, start in enumerate(starts) if tokens[0] >= start and tokens[-1] < start + budget]
        if holders:
            assert len(owners) == 1 and owners <= set(holders)


# One family per tokenizer layout (WordPiece with [CLS]/[SEP], byte-level BPE with <s>/</s>, with none, with a BOS
# alone, with a trailing </s> alone, SentencePiece) and featx's native MPNet: each run costs suite time; the whole zoo
# matched within 1e-6 when checked by script.
WORD_FAMILIES = ["bert", "roberta", "gpt2", "llama", "t5-encoder", "mpnet", "llama-sentencepiece"]


@pytest.mark.parametrize("name", WORD_FAMILIES)
def test_word_vectors_of_each_family_equal_the_sentence_read_as_text(name, family_models, tmp_path):
    """The words joined by spaces, tokenised as text by plain transformers: the same tokens (byte-level BPE
    too, whose words keep their spaces, and SentencePiece's ``▁`` word marks, as Llama's, T5's and XLM-R's
    tokenizers have them), and each word's mean subword state equal to featx's (fp32, 1e-4; the sentences batched
    together, against each alone)."""
    from support.families import BY_NAME, reference_states
    from support.prompt_models import build_sentencepiece_llama

    family = BY_NAME[name.removesuffix("-sentencepiece")]
    sentencepiece = name.endswith("-sentencepiece")
    folder = build_sentencepiece_llama(tmp_path / name) if sentencepiece else family_models(family)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"tokens": words}) + "\n" for words in SENTENCE_WORDS))
    summary = run(path, folder, tmp_path / "w.h5", word_pooling="mean,first")
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    texts = [" ".join(words) for words in SENTENCE_WORDS]
    states = reference_states(family, folder, texts)
    expected = []
    for words, text, layers in zip(SENTENCE_WORDS, texts, states, strict=False):
        encoded = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
        ends = np.cumsum([len(word) + 1 for word in words]) - 1  # each word's end in the text
        owner = [
            None if special else int(np.searchsorted(ends, end - 1, side="right"))
            for (start, end), special in zip(encoded["offset_mapping"], encoded["special_tokens_mask"], strict=False)
        ]
        for word in range(len(words)):
            tokens = [i for i, w in enumerate(owner) if w == word]
            expected.append(layers[:, tokens].mean(1))
    with featx.open(summary.output) as features:
        assert int(features.n_tokens.sum()) == sum(layers.shape[1] for layers in states)
        got = np.stack([features.word_features("mean", layer) for layer in features.layers], 1)
    print(name, f"words {np.abs(got - np.stack(expected)).max():.1e}")
    np.testing.assert_allclose(got, np.stack(expected), atol=1e-4, rtol=0)


def test_cli_names_a_broken_treebank_line_and_exits_2(tiny_model, tmp_path):
    broken = tmp_path / "broken.conllu"
    broken.write_text(CONLLU.replace("\tobj\t_\t_", "\tobj"), encoding="utf-8")
    result = CliRunner().invoke(
        main, ["extract", str(broken), "-o", str(tmp_path / "b.h5"), "--model", str(tiny_model), "-q"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "broken.conllu, line 10: a CoNLL-U word line needs 10 tab-separated fields, this one has 8" in result.output


def test_word_inputs_with_a_pair_column_are_refused_before_the_model_runs(tiny_model, treebank, tmp_path):
    with pytest.raises(InputError, match="word inputs have no second text"):
        run(treebank, tiny_model, tmp_path / "p.h5", text_pair_col="second")
    assert not partial_path(tmp_path / "p.h5").exists() and not (tmp_path / "p.h5").exists()

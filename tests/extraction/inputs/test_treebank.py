"""Reading word inputs: CoNLL-U, column files, JSON Lines of tokens, several files as splits, and
every bad input refused with an InputError naming the file and line before any model is loaded."""

from __future__ import annotations

import json

import numpy as np
import pytest

from featx.errors import InputError
from featx.extraction import ExtractConfig
from featx.extraction.inputs.treebank import split_of
from featx.extraction.inputs.word_corpus import read_input, read_word_corpus
from featx.store import HEAD_ROOT, HEAD_UNKNOWN

CONLLU = """# newdoc id = doc1
# sent_id = s1
# text = I don't know zebras
1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\tMood=Ind|Tense=Pres\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
3.1\tknow\tknow\tVERB\tVB\t_\t_\t_\t4:conj\t_
4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\t_
5\tzebras\tzebra\tNOUN\tNNS\tNumber=Plur\t4\tobj\t_\t_

# sent_id = s2
1\tCats\tcat\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t_\t_
2\twalk\twalk\tVERB\tVBP\t_\t0\troot\t_\t_
"""


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_conllu_words_labels_and_heads(tmp_path):
    corpus = read_word_corpus([write(tmp_path / "a.conllu", CONLLU)], "conllu")
    words = corpus.words
    assert corpus.texts == ["I don't know zebras", "Cats walk"] and corpus.ids == ["s1", "s2"]
    assert corpus.split is None  # one file: no split
    # the range 2-3 is not a word (do, n't are) and the empty node 3.1 is skipped
    assert words.forms == ["I", "do", "n't", "know", "zebras", "Cats", "walk"]
    np.testing.assert_array_equal(words.offsets, [0, 5, 7])
    np.testing.assert_array_equal(words.heads, [3, 3, 3, -1, 3, 1, -1])
    upos = words.labels["upos"]
    assert [upos.names[code] for code in upos.codes] == ["PRON", "AUX", "PART", "VERB", "NOUN", "NOUN", "VERB"]
    number = words.labels["feats.Number"]
    assert [number.names[code] if code >= 0 else None for code in number.codes] == [
        "Sing",
        None,
        None,
        None,
        "Plur",
        "Plur",
        None,
    ]
    assert {"xpos", "deprel", "feats.Case", "feats.Tense", "feats.Mood", "feats.VerbForm"} <= set(words.labels)


def test_an_unknown_head_is_stored_apart_from_the_root(tmp_path):
    """'_' in HEAD is no head given: HEAD_UNKNOWN, never HEAD_ROOT, so the arc items leave the word out instead of
    pairing it with the root; a JSON Lines sentence without a head list has unknown heads too."""
    from featx.probing import gold_attachments

    text = CONLLU.replace("Number=Plur\t4\tobj", "Number=Plur\t_\tobj")
    words = read_word_corpus([write(tmp_path / "u.conllu", text)], "conllu").words
    np.testing.assert_array_equal(words.heads, [3, 3, 3, HEAD_ROOT, HEAD_UNKNOWN, 1, HEAD_ROOT])
    dependents, heads = gold_attachments(words.offsets, words.heads)
    assert dependents.tolist() == [0, 1, 2, 3, 5, 6] and heads.tolist() == [3, 3, 3, 3, 6, 6]  # zebras left out


def test_a_byte_order_mark_and_windows_line_ends_are_read(tmp_path):
    path = tmp_path / "bom.conllu"
    path.write_bytes(b"\xef\xbb\xbf" + CONLLU.replace("\n", "\r\n").encode("utf-8"))
    corpus = read_word_corpus([path], "conllu")
    assert corpus.ids == ["s1", "s2"] and corpus.words.forms[-1] == "walk"


def test_conllu_is_chosen_by_its_suffix(tmp_path):
    config = ExtractConfig(corpus=write(tmp_path / "a.conllu", CONLLU), output=tmp_path / "o.h5")
    assert config.long == "window"  # word inputs are never truncated
    assert read_input(config).words is not None


def test_column_files(tmp_path):
    text = "-DOCSTART- -X- O\n\nEU B-ORG 2\nrejects O 0\n\nPeter\tB-PER\t0\n"
    corpus = read_word_corpus([write(tmp_path / "ner.txt", text)], "columns", "form,ner,head")
    assert corpus.words.forms == ["EU", "rejects", "Peter"] and corpus.texts == ["EU rejects", "Peter"]
    np.testing.assert_array_equal(corpus.words.heads, [1, -1, -1])
    assert corpus.words.labels["ner"].names == ["B-ORG", "B-PER", "O"]
    assert corpus.ids == ["ner-1", "ner-2"]
    skipped = read_word_corpus([write(tmp_path / "s.txt", "EU x B-ORG\n")], "columns", "form,_,ner")
    assert list(skipped.words.labels) == ["ner"]


def test_json_lines_of_tokens(tmp_path):
    lines = [
        {"tokens": ["The", "cat"], "upos": ["DET", "NOUN"], "head": [2, 0], "topic": "pets", "id": "x1"},
        {"tokens": ["Dogs"], "upos": [None], "topic": "pets", "split": "test", "id": "x2"},
    ]
    path = write(tmp_path / "t.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    config = ExtractConfig(corpus=path, output=tmp_path / "o.h5")
    corpus = read_input(config)  # chosen because the first object has a "tokens" list and no "text"
    assert corpus.words.forms == ["The", "cat", "Dogs"] and corpus.ids == ["x1", "x2"]
    np.testing.assert_array_equal(corpus.words.labels["upos"].codes, [0, 1, -1])
    np.testing.assert_array_equal(corpus.words.heads, [1, HEAD_ROOT, HEAD_UNKNOWN])  # "Dogs": no head list
    assert corpus.labels["topic"].names == ["pets"] and corpus.split == ["t", "test"]


def test_several_files_give_each_sentence_its_split(tmp_path):
    second = CONLLU.replace("s1", "d1").replace("s2", "d2")
    third = CONLLU.replace("s1", "t1").replace("s2", "t2")
    paths = [
        write(tmp_path / "en_gum-ud-train.conllu", CONLLU),
        write(tmp_path / "en_gum-ud-dev.conllu", second),
        write(tmp_path / "extra.conllu", third),
    ]
    config = ExtractConfig(corpus=paths[0], more_corpora=tuple(paths[1:]), output=tmp_path / "o.h5")
    corpus = read_input(config)
    assert corpus.split == ["train", "train", "dev", "dev", "extra", "extra"]
    assert len(corpus.words.forms) == 21 and corpus.words.offsets[-1] == 21
    assert split_of(tmp_path / "en-ud-test.conllu") == "test" and split_of(tmp_path / "contest.conllu") == "contest"


BAD_CONLLU = {
    "9 fields": (CONLLU.replace("\tnsubj\t_\t_\n2-3", "\tnsubj\t_\n2-3"), "line 4: a CoNLL-U word line needs 10"),
    "a bad id": (CONLLU.replace("5\tzebras", "x\tzebras"), "line 10: not valid CoNLL-U"),
    "a bad head": (CONLLU.replace("\t4\tobj", "\tz\tobj"), "line 10: not valid CoNLL-U"),
    "a head outside": (CONLLU.replace("\t4\tobj", "\t9\tobj"), "line 10: head 9 is outside the sentence of 5"),
    "ids out of order": (CONLLU.replace("2\twalk", "3\twalk"), "line 14: word id 3 where 2 comes next\n"),
    "no blank line between sentences": (
        CONLLU.replace("\n\n# sent_id = s2", "\n# sent_id = s2"),
        r"line 12: word id 1 where 6 comes next \(a new sentence with no blank line before it\?\)",
    ),
    "a sentence without words": (CONLLU + "\n# sent_id = s3\n# text = nothing\n", "line 16: the sentence has no"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONLLU))
def test_broken_conllu_names_file_and_line(tmp_path, case):
    text, message = BAD_CONLLU[case]
    with pytest.raises(InputError, match=message) as error:
        read_word_corpus([write(tmp_path / "bad.conllu", text)], "conllu")
    assert "bad.conllu" in error.value.message and error.value.hint  # every refusal says what to do
    if case == "no blank line between sentences":
        assert "blank line" in error.value.hint


def test_bad_word_inputs_are_refused(tmp_path):
    ragged = write(tmp_path / "r.jsonl", json.dumps({"tokens": ["a", "b"], "upos": ["DET"]}) + "\n")
    with pytest.raises(InputError, match=r"r.jsonl, line 1: \"upos\" has 1 values for 2 tokens"):
        read_word_corpus([ragged], "jsonl")
    empty = write(tmp_path / "e.jsonl", json.dumps({"tokens": ["a"]}) + "\n" + json.dumps({"tokens": []}) + "\n")
    with pytest.raises(InputError, match="e.jsonl, line 2: the sentence has no words"):
        read_word_corpus([empty], "jsonl")
    blank = write(tmp_path / "b.jsonl", json.dumps({"tokens": ["a", " "]}) + "\n")
    with pytest.raises(InputError, match="b.jsonl, line 1: word 2 of the sentence is empty"):
        read_word_corpus([blank], "jsonl")
    no_tokens = write(tmp_path / "n.jsonl", json.dumps({"words": ["a"]}) + "\n")
    with pytest.raises(InputError, match='n.jsonl, line 1: each line needs a "tokens" list'):
        read_word_corpus([no_tokens], "jsonl")
    columns = write(tmp_path / "c.txt", "EU B-ORG\nrejects\n")
    with pytest.raises(InputError, match="c.txt, line 2: 1 fields, --columns names 2"):
        read_word_corpus([columns], "columns", "form,ner")
    other_digits = write(tmp_path / "h.txt", "EU 0\nrejects \u0661\n")  # Arabic-Indic one: int read it as 1
    with pytest.raises(InputError, match="h.txt, line 1: head '\u0661' is not a word number"):
        read_word_corpus([other_digits], "columns", "form,head")
    twice = write(tmp_path / "twice.conllu", CONLLU + "\n" + CONLLU)
    with pytest.raises(InputError, match="sentence id 's1' appears twice"):
        read_word_corpus([twice], "conllu")
    with pytest.raises(InputError, match="does not exist") as error:
        read_word_corpus([tmp_path / "missing.conllu"], "conllu")
    assert error.value.hint
    # one file given twice: its sentences without ids were numbered on (train-1..4), each read twice, silently
    train = write(tmp_path / "train.jsonl", json.dumps({"tokens": ["a", "b"]}) + "\n" + json.dumps({"tokens": ["c"]}))
    with pytest.raises(InputError, match=r"train.jsonl is given twice") as error:
        read_word_corpus([train, tmp_path / "." / "train.jsonl"], "jsonl")
    assert "once" in error.value.hint


def test_bad_word_options_are_refused(tmp_path):
    conllu = write(tmp_path / "a.conllu", CONLLU)
    csv = write(tmp_path / "a.csv", "text\nhello\n")
    with pytest.raises(InputError, match="--word-pooling 'max'"):
        ExtractConfig(corpus=conllu, word_pooling="max")
    with pytest.raises(InputError, match="--word-format 'conll'"):
        ExtractConfig(corpus=conllu, word_format="conll")
    with pytest.raises(InputError, match="--columns 'upos,ner' must name every field"):
        ExtractConfig(corpus=csv, columns="upos,ner")
    with pytest.raises(InputError, match="--columns applies to column files"):
        ExtractConfig(corpus=conllu, columns="form,upos")
    with pytest.raises(InputError, match="several input files are read only as word inputs"):
        ExtractConfig(corpus=csv, more_corpora=(csv,))
    with pytest.raises(InputError, match="cannot be extracted in shards"):
        ExtractConfig(corpus=conllu, shards=2, shard_index=0)
    with pytest.raises(InputError, match="--text-col 'sentence' names a column of a table of texts; this is conllu"):
        ExtractConfig(corpus=conllu, text_col="sentence")
    with pytest.raises(InputError, match="--id-col 'id' .* named by their '# sent_id' comments, else FILE-N"):
        ExtractConfig(corpus=conllu, id_col="id")
    with pytest.raises(InputError, match="--template applies to tables of texts, not word inputs"):
        ExtractConfig(corpus=conllu, template="Sentence: {text}")  # not '--long window', which no one typed
    with pytest.raises(InputError, match="--word-pooling applies to word inputs .* not to a table of texts"):
        ExtractConfig(corpus=csv, word_pooling="first")  # would be ignored: a table has no word vectors
    assert ExtractConfig(corpus=conllu, word_pooling="all").word_pooling == "all"

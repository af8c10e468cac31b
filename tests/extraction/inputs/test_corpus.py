import json

import numpy as np
import pytest

from featx.errors import InputError
from featx.extraction.inputs.corpus import read_corpus


def write(tmp_path, content, name="c.csv", mode="w"):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def test_reads_labels_split_and_ids(tmp_path):
    path = write(
        tmp_path,
        "id,text,label,topic,split\na,hello there,1,sport,train\nb,good bye,0,news,TEST\nc,third,,sport,train\n",
    )
    corpus = read_corpus(path, id_col="id")
    assert corpus.texts == ["hello there", "good bye", "third"]
    assert corpus.ids == ["a", "b", "c"]
    assert corpus.split == ["train", "test", "train"]
    assert list(corpus.labels) == ["label", "topic"]
    assert corpus.labels["label"].names == ["0", "1"]
    np.testing.assert_array_equal(corpus.labels["label"].codes, [1, 0, -1])
    assert corpus.labels["topic"].names == ["news", "sport"]
    assert len(corpus.sha256) == 64


def test_numeric_labels_sort_numerically(tmp_path):
    path = write(tmp_path, "text,stars\na,10\nb,9\nc,2\n")
    assert read_corpus(path).labels["stars"].names == ["2", "9", "10"]


def test_bom_and_windows_line_endings(tmp_path):
    path = write(tmp_path, b'\xef\xbb\xbftext,label\r\nhello,1\r\n"multi\r\nline",0\r\n')
    corpus = read_corpus(path)
    assert corpus.texts == ["hello", "multi\r\nline"]
    assert corpus.labels["label"].names == ["0", "1"]


def test_nan_labels_are_missing_with_the_pandas_markers(tmp_path):
    path = write(tmp_path, "text,label\na,pos\nb,NaN\nc,\nd,neg\n")
    np.testing.assert_array_equal(read_corpus(path, missing_labels="pandas").labels["label"].codes, [1, -1, -1, 0])
    np.testing.assert_array_equal(read_corpus(path).labels["label"].codes, [2, 0, -1, 1])  # default: empty only


def test_tsv_and_jsonl_and_parquet(tmp_path):
    tsv = write(tmp_path, "text\tlabel\na, b\tx\n", name="c.tsv")
    assert read_corpus(tsv).texts == ["a, b"]
    jsonl = write(
        tmp_path,
        json.dumps({"text": "hi", "label": 1}) + "\n\n" + json.dumps({"text": "yo", "label": None}) + "\n",
        name="c.jsonl",
    )
    corpus = read_corpus(jsonl)
    assert corpus.texts == ["hi", "yo"]
    np.testing.assert_array_equal(corpus.labels["label"].codes, [0, -1])
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["x y", "z"], "label": ["a", "b"]}), tmp_path / "c.parquet")
    assert read_corpus(tmp_path / "c.parquet").labels["label"].names == ["a", "b"]


BAD_INPUTS = [
    ("missing file", None, "does not exist"),
    ("empty file", "", "is empty"),
    ("whitespace file", "\n\n", "is empty"),
    ("header only", "text,label\n", "header but no rows"),
    ("missing text column", "sentence,label\nhi,1\n", "no text column 'text'; columns found: sentence, label"),
    (
        "empty text",
        "text,label\nhi,1\n   ,0\n,1\n",
        "2 empty or whitespace-only text.*row 1 \\(line 3\\), row 2 \\(line 4\\)",
    ),
    ("ragged row", "text,label\nhi,1\nhey,0,extra\n", "line 3 has 3 fields but the header has 2"),
    ("open quote", 'text,label\n"hi,1\nyo,0\n', "quote is probably left open|cannot parse"),
    ("latin-1", b"text,label\ncaf\xe9,1\n", "line 2, column 4 is not valid utf-8"),
    ("numbers only", "text,label\n1,1\n2.5,0\n", "holds only numbers"),
    ("duplicate header", "text,text\na,b\n", "repeats column"),
    ("unnamed column", "text,,label\na,b,c\n", "column 2 of the header has no name"),
]


@pytest.mark.parametrize("case, content, message", BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_is_refused_clearly(tmp_path, case, content, message):
    path = tmp_path / "missing.csv" if content is None else write(tmp_path, content)
    with pytest.raises(InputError, match=message):
        read_corpus(path)


def test_skip_empty_reports_rows(tmp_path):
    path = write(tmp_path, "text,label\nhi,1\n  ,0\nyo,1\n")
    corpus = read_corpus(path, skip_empty=True)
    assert corpus.texts == ["hi", "yo"]
    assert corpus.skipped_rows == [1]  # data row numbers, 0-based, like the ids
    assert corpus.ids == ["0", "2"]
    np.testing.assert_array_equal(corpus.labels["label"].codes, [0, 0])


def test_a_text_of_invisible_characters_only_is_empty(tmp_path):
    """Zero-width space, soft hyphens, a control character: nothing to read, only the special tokens would run."""
    path = write(tmp_path, "text,label\nhi,1\n\u200b,0\n\u00ad\u00ad ,1\n\x01,0\nna\u00efve\u200b,1\n")
    with pytest.raises(InputError, match="3 empty or whitespace-only text.*row 1 .*row 2 .*row 3 "):
        read_corpus(path)
    corpus = read_corpus(path, skip_empty=True)
    assert corpus.texts == ["hi", "na\u00efve\u200b"] and corpus.skipped_rows == [1, 2, 3]


def test_duplicate_ids_are_refused(tmp_path):
    path = write(tmp_path, "id,text\nx,hi\ny,yo\nx,hey\n")
    with pytest.raises(InputError, match="id 'x' appears twice.*line 2 and line 4"):
        read_corpus(path, id_col="id")
    with pytest.raises(InputError, match="no id column 'key'"):
        read_corpus(path, id_col="key")


def test_latin1_with_explicit_encoding(tmp_path):
    path = write(tmp_path, b"text\ncaf\xe9 au lait\n")
    assert read_corpus(path, encoding="latin-1").texts == ["caf\u00e9 au lait"]


def test_unicode_text_kept_verbatim(tmp_path):
    texts = ["\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd", "emoji \U0001f600 ok", "tab\tand\x07bell"]
    path = tmp_path / "u.csv"
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text"])
        writer.writerows([[text] for text in texts])
    assert read_corpus(path).texts == texts


def test_label_columns_of_json_lists_or_objects_are_named_in_a_note(tmp_path):
    records = [
        {"text": "the cat sat", "tokens": ["the", "cat", "sat"], "upos": ["DET", "NOUN", "VERB"], "label": 1},
        {"text": "dogs bark", "tokens": ["dogs", "bark"], "upos": ["NOUN", "VERB"], "label": 0},
    ]
    path = write(tmp_path, "".join(json.dumps(record) + "\n" for record in records), "c.jsonl")
    corpus = read_corpus(path)
    assert corpus.labels["upos"].names == ["['DET', 'NOUN', 'VERB']", "['NOUN', 'VERB']"]  # one class per list
    (note,) = [note for note in corpus.notes if "JSON lists or objects" in note]
    assert "label column(s) tokens, upos hold" in note and "--word-format jsonl" in note
    meta = write(tmp_path, '{"text": "hi", "meta": {"a": 1}}\n{"text": "yo", "meta": {"a": 2}}\n', "m.jsonl")
    assert any("label column(s) meta hold" in note and "word" not in note for note in read_corpus(meta).notes)
    plain = write(tmp_path, '{"text": "hi", "label": 1}\n{"text": "yo", "label": "x"}\n', "p.jsonl")
    assert not any("JSON lists" in note for note in read_corpus(plain).notes)


WORDS = "1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n2\tthere\tthere\tADV\t_\t_\t1\tadvmod\t_\t_\n"


@pytest.mark.parametrize(
    "content",
    [
        "# sent_id = a-1\n# text = Hi there\n" + WORDS,
        WORDS,  # no comment lines
    ],
)
def test_a_treebank_named_txt_is_pointed_at_word_format(tmp_path, content):
    """A CoNLL-U file with another suffix is read as a table, whose refusal said only what is wrong with the
    table; the hint now says how to read it as words."""
    path = tmp_path / "gum.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_corpus(path)
    assert (
        err.value.hint
        == "it looks like a CoNLL-U treebank: read it as one with --word-format conllu (or name it .conllu)"
    )
    table = write(tmp_path, "text,label\nhi,1\nhey,0,extra\n")  # a table's own refusal keeps its own hint
    with pytest.raises(InputError) as err:
        read_corpus(table)
    assert err.value.hint.startswith("fix the row")

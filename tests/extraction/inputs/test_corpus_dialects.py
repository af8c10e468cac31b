"""Corpora as users have them: sniffed delimiters, BOM + CRLF, gzip, ids that count skipped rows,
explicit missing-label markers, continuous-looking label columns."""

import csv
import gzip
import io

import numpy as np
import pytest

from featx.errors import InputError
from featx.extraction.inputs.corpus import read_corpus


def write(tmp_path, content, name="c.csv"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def test_tab_separated_file_named_csv_is_sniffed_and_said(tmp_path):
    corpus = read_corpus(write(tmp_path, "text\tlabel\nhello, world\tpos\nbye\tneg\n"))
    assert corpus.texts == ["hello, world", "bye"] and corpus.labels["label"].names == ["neg", "pos"]
    assert corpus.notes == [
        "%s: read as tab-separated (sniffed from the first lines; the name suggests comma); "
        "--sep forces one" % (tmp_path / "c.csv")
    ]


def test_tab_separated_without_commas_is_sniffed_too(tmp_path):
    corpus = read_corpus(write(tmp_path, "text\tlabel\nhello\tpos\nbye\tneg\n"))
    assert corpus.texts == ["hello", "bye"]


def test_excel_export_bom_semicolons_crlf(tmp_path):
    raw = '\ufefftext;label;score\r\nnice, really;pos;1\r\n"a; b";neg;0\r\n'.encode("utf-8")
    corpus = read_corpus(write(tmp_path, raw))
    assert corpus.texts == ["nice, really", "a; b"]
    assert list(corpus.labels) == ["label", "score"] and corpus.labels["label"].names == ["neg", "pos"]
    assert "semicolon-separated" in corpus.notes[0]


@pytest.mark.parametrize("sep, char", [("pipe", "|"), ("|", "|"), ("semicolon", ";"), ("tab", "\t"), ("\\t", "\t")])
def test_sep_forces_the_delimiter(tmp_path, sep, char):
    path = write(tmp_path, f"text{char}label\na,b{char}x\n", name="c.txt")
    corpus = read_corpus(path, sep=sep)
    assert corpus.texts == ["a,b"] and corpus.notes == []


def test_unknown_sep_is_refused(tmp_path):
    with pytest.raises(InputError, match="--sep 'colon' is not understood"):
        read_corpus(write(tmp_path, "text\nhi\n"), sep="colon")


def test_pipe_is_sniffed(tmp_path):
    assert read_corpus(write(tmp_path, "text|label\na, b|x\nc|y\n")).labels["label"].names == ["x", "y"]


def test_ragged_comma_file_keeps_its_line_error(tmp_path):
    with pytest.raises(InputError, match="line 3 has 3 fields but the header has 2"):
        read_corpus(write(tmp_path, "text,label\nhi,1\nhey,0,extra\n"))


@pytest.mark.parametrize(
    "name, content",
    [
        ("c.csv.gz", "text,label\nhi,1\nyo,0\n"),
        ("c.tsv.gz", "text\tlabel\nhi\t1\nyo\t0\n"),
        ("c.jsonl.gz", '{"text": "hi", "label": 1}\n{"text": "yo", "label": 0}\n'),
    ],
)
def test_gzip_inputs(tmp_path, name, content):
    raw = gzip.compress(content.encode())
    corpus = read_corpus(write(tmp_path, raw, name=name))
    assert corpus.texts == ["hi", "yo"] and corpus.labels["label"].names == ["0", "1"]
    import hashlib

    assert corpus.sha256 == hashlib.sha256(raw).hexdigest()


def test_ids_are_data_row_numbers_with_skipped_rows_counted(tmp_path):
    rows = [["t0", "a"], ["", "b"], ["t2", "c"], ["  ", "d"], ["t4", "e"]]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["text", "label"])
    writer.writerows(rows)
    path = write(tmp_path, buffer.getvalue())
    corpus = read_corpus(path, skip_empty=True)
    assert corpus.ids == ["0", "2", "4"] and corpus.skipped_rows == [1, 3]
    with open(path, newline="") as handle:
        original = list(csv.DictReader(handle))
    for text, row_id in zip(corpus.texts, corpus.ids, strict=False):
        assert original[int(row_id)]["text"] == text  # the id joins back to the original file


def test_empty_text_message_uses_the_id_numbering(tmp_path):
    with pytest.raises(InputError, match=r"1 empty or whitespace-only text\(s\) in column 'text': row 1 \(line 3\)"):
        read_corpus(write(tmp_path, "text,label\nhi,1\n,0\nyo,1\n"))


def test_a_class_named_none_is_kept_by_default_and_missing_is_named(tmp_path):
    path = write(tmp_path, "text,label\na,None\nb,NA\nc,\nd,pos\ne,null\n")
    column = read_corpus(path).labels["label"]
    assert column.names == ["NA", "None", "null", "pos"] and column.n_missing == 1
    assert column.missing == {"": 1}
    pandas = read_corpus(path, missing_labels="pandas").labels["label"]
    assert pandas.names == ["pos"] and pandas.missing == {"None": 1, "NA": 1, "": 1, "null": 1}
    listed = read_corpus(path, missing_labels="NA, null")
    assert listed.labels["label"].names == ["None", "pos"]
    assert listed.label_notes == ["label 'label': 3 row(s) missing ('NA' 1, empty 1, 'null' 1)"]
    assert listed.notes == []  # what it noticed of the labels is kept apart: predict does not print it


def test_continuous_column_is_flagged_with_its_values(tmp_path):
    lines = ["text,score,stars"] + [f"t{i},{i / 40:.3f},{i % 5}" for i in range(40)]
    corpus = read_corpus(write(tmp_path, "\n".join(lines) + "\n"))
    score, stars = corpus.labels["score"], corpus.labels["stars"]
    assert score.looks_continuous and not stars.looks_continuous
    np.testing.assert_allclose(score.values(), [i / 40 for i in range(40)], atol=1e-3)
    note = "label 'score' looks continuous (40 distinct numbers): featx probe will fit a regression probe"
    assert any(text.startswith(note) and "--task classification --bins N" in text for text in corpus.label_notes)


def test_a_score_with_a_cell_that_is_not_a_number_is_noted_before_the_forward_pass(tmp_path):
    lines = ["text,score"] + [f"t{i},{'inf' if i == 4 else f'{i / 40:.3f}'}" for i in range(40)]
    corpus = read_corpus(write(tmp_path, "\n".join(lines) + "\n"))
    assert not corpus.labels["score"].numeric
    assert "label 'score' holds numbers except 'inf' (1): mark those missing (--missing-labels)" in corpus.label_notes
    fixed = read_corpus(write(tmp_path, "\n".join(lines) + "\n"), missing_labels="inf")
    assert fixed.labels["score"].looks_continuous and fixed.labels["score"].n_missing == 1


@pytest.mark.parametrize(
    "header, hint",
    [
        ("pair_id,Sentence_A,Sentence_B,score", "--text-col Sentence_A --text-pair-col Sentence_B"),
        ("premise,hypothesis,label", "--text-col premise --text-pair-col hypothesis"),
        ("id,review,stars", "--text-col review?"),
        ("a;b;c", "semicolon-separated"),
        ("words,label", "pass the right one with --text-col NAME"),
    ],
)
def test_a_missing_text_column_names_the_columns_to_pass(tmp_path, header, hint):
    width = len(header.split(","))
    with pytest.raises(InputError) as raised:
        read_corpus(write(tmp_path, f"{header}\n" + ",".join(["x1"] * width) + "\n"))
    assert hint in str(raised.value.hint) and "no text column 'text'" in str(raised.value)


def test_an_id_column_is_named_as_ids_not_a_continuous_label(tmp_path):
    lines = ["pair_id,text,score,rank"] + [f"{i + 7},t{i},{i / 40:.3f},{i + 7}" for i in range(40)]
    corpus = read_corpus(write(tmp_path, "\n".join(lines) + "\n"))
    ids = [note for note in corpus.label_notes if note.startswith("label 'pair_id'")]
    assert ids == [
        "label 'pair_id' looks like row ids (a distinct whole number on every row): "
        "pass --id-col pair_id to name the rows by it; as a label it means nothing to probe"
    ]
    assert any(note.startswith("label 'score' looks continuous") for note in corpus.label_notes)
    assert any(note.startswith("label 'rank' looks continuous") for note in corpus.label_notes)  # not named as an id
    by_id = read_corpus(write(tmp_path, "\n".join(lines) + "\n", name="d.csv"), id_col="pair_id")
    assert by_id.ids[:2] == ["7", "8"] and "pair_id" not in by_id.labels
    assert not any("pair_id" in note for note in by_id.notes + by_id.label_notes)

"""Values that are not text in a corpus's text column (issue 46): a JSON Lines number, boolean, object or list,
or Parquet bytes that are not UTF-8, used to be stringified silently (1.5e300 became a 40-digit integer, bytes
their Python repr ``b'...'``). They are refused naming the lines; Parquet UTF-8 bytes are decoded, with a note.

One row of ``REFUSED`` per hostile input: the case id, the file's rows and the expected words of the message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from featx.errors import InputError
from featx.extraction.inputs.corpus import read_corpus

GOOD = {"text": "a fine text", "label": "pos"}
REFUSED = [
    ("object", {"text": {"a": 1}, "label": "pos"}, "line 2 (an object)"),
    ("list", {"text": ["a", "b"], "label": "pos"}, "line 2 (a list)"),
    ("boolean", {"text": True, "label": "pos"}, "line 2 (a boolean)"),
    ("float", {"text": 1.5e300, "label": "pos"}, "line 2 (a number)"),
    ("integer", {"text": 7, "label": "pos"}, "line 2 (a number)"),
]


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("record, expected", [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_a_jsonl_text_that_is_no_text_is_refused_naming_its_line(tmp_path, record, expected):
    path = _jsonl(tmp_path / "corpus.jsonl", [GOOD, record, GOOD])
    with pytest.raises(InputError) as caught:
        read_corpus(path)
    assert "text column 'text' holds 1 value(s) that are not text" in str(caught.value)
    assert expected in str(caught.value)


def test_numbers_and_booleans_stay_labels(tmp_path):
    path = _jsonl(tmp_path / "corpus.jsonl", [{"text": "one", "score": 1.0, "ok": True}, {"text": "two", "score": 2}])
    corpus = read_corpus(path)
    assert corpus.texts == ["one", "two"]
    assert list(corpus.labels["score"].names) == ["1", "2"]


def _parquet(path: Path, values: list[bytes]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"text": pa.array(values, pa.binary()), "label": pa.array(["a", "b"][: len(values)])})
    pq.write_table(table, path)
    return path


def test_parquet_bytes_not_utf8_are_refused(tmp_path):
    path = _parquet(tmp_path / "corpus.parquet", [b"caf\xc3\xa9 ok", b"\xff\xfe bad"])
    with pytest.raises(InputError, match=r"line 2 \(bytes that are not UTF-8\)"):
        read_corpus(path)


def test_parquet_utf8_bytes_are_decoded_and_said(tmp_path):
    corpus = read_corpus(_parquet(tmp_path / "corpus.parquet", [b"Le caf\xc3\xa9 est bon", b"deux"]))
    assert corpus.texts == ["Le café est bon", "deux"]
    assert any("decoded as UTF-8" in note for note in corpus.notes)

"""``featx.io`` on its own: the format-level reading both stages share (the corpus tests cover it through
``read_corpus``, the label-file tests through ``featx labels``)."""

import gzip

import numpy as np
import pytest

from featx.errors import InputError
from featx.io import (
    NUMBER,
    blank_text,
    corpus_name,
    corpus_stem,
    decode_text,
    label_column,
    missing_markers,
    normalise_sep,
    parse_table,
    read_source,
    refuse_other_formats,
    unwrap_gzip,
)


def read(path, sep=None):
    raw = read_source(path)
    suffix, data = unwrap_gzip(raw, path)
    refuse_other_formats(data, path, suffix)
    notes = []
    return parse_table(data, path, suffix, "utf-8", normalise_sep(sep), notes), notes


def test_a_gzipped_csv_reads_like_the_plain_one(tmp_path):
    plain, packed = tmp_path / "t.csv", tmp_path / "t.csv.gz"
    plain.write_text('id,text\n1,"a, b"\n\n2,c\n')
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert read(plain) == read(packed) == ((["id", "text"], [["1", "a, b"], ["2", "c"]], [2, 4]), [])


def test_a_bomb_of_many_small_gzip_members_is_refused_as_early_as_one_member(tmp_path):
    """A bomb split into many members used to count the members not yet inflated as read (they sit after the first
    member's end in the same block), so it was refused only at 100 times the whole file, not 100 times what was
    read so far."""
    member = gzip.compress(b"x,y\n" * 2**18)  # 1 MiB of rows in about 1 KiB
    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(member * 300)  # 300 MiB in about 300 KiB: refused after RATIO_FREE_BYTES (16 MiB)
    with pytest.raises(InputError, match="refused as a likely gzip bomb") as raised:
        unwrap_gzip(path.read_bytes(), path)
    gave = int(str(raised.value).split(" bytes gave ")[1].split(")")[0].replace(",", ""))
    assert gave <= 18 * 2**20  # about 17 members in: not 100 x 300 KiB = 30 MiB


def test_a_gzip_limit_names_the_readers_option_only_where_it_has_one(tmp_path):
    """Only featx extract has --max-corpus-bytes: predict, a label file and the lens read .gz files too."""
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(b"x,y\n" * 100))
    with pytest.raises(InputError, match="inflates to more than 100 bytes") as bare:
        unwrap_gzip(path.read_bytes(), path, 100)
    assert "--" not in str(bare.value)
    assert bare.value.hint == "if the file is genuine, decompress it and give the plain file"
    with pytest.raises(InputError, match=r"\(the --max-corpus-bytes limit\)") as flagged:
        unwrap_gzip(path.read_bytes(), path, 100, "--max-corpus-bytes")
    assert "raise the limit, e.g. --max-corpus-bytes 8589934592" in flagged.value.hint


def test_a_sniffed_delimiter_is_said_in_the_notes(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id;text\n1;a\n2;b\n")
    (header, rows, _), notes = read(path)
    assert header == ["id", "text"] and rows == [["1", "a"], ["2", "b"]]
    assert notes and "semicolon-separated" in notes[0]


def test_json_lines_rows_follow_the_keys_in_order_of_appearance(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "a", "n": 1.0}\n\n{"text": "b", "extra": null}\n')
    (header, rows, lines), _ = read(path)
    assert header == ["text", "n", "extra"] and rows == [["a", "1", ""], ["b", "", ""]] and lines == [1, 3]


@pytest.mark.parametrize(
    "content, name, message",
    [
        (b"BZh91AY", "t.csv", "bzip2-compressed"),
        (b'[{"text": "a"}]', "t.json", "JSON array"),
        (b"", "t.csv", "is empty"),
        (b"a,b\n1\n", "t.csv", "line 2 has 1 fields but the header has 2"),
    ],
)
def test_unreadable_files_are_named(tmp_path, content, name, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read(path)


def test_a_bad_byte_is_named_by_line_and_column(tmp_path):
    with pytest.raises(InputError, match="line 2, column 3 is not valid utf-8"):
        decode_text(b"ok\nab\xff\n", tmp_path / "t.csv", "utf-8")


@pytest.mark.parametrize(
    "text, blank",
    [
        ("", True),
        (" \t\n", True),
        ("\u200b", True),  # zero-width space
        ("\u00ad\ufeff\x01 \u2028", True),  # soft hyphen, a byte order mark, a control, a line separator
        ("a", False),
        ("\u200ba", False),
        ("\u4e2d\u6587", False),
        ("\U0001f600", False),
        ("\x01x", False),
    ],
)
def test_blank_text_is_nothing_but_whitespace_control_and_format_characters(text, blank):
    assert blank_text(text) is blank


WIDE_TEXT = "text,label\ncaf\u00e9 au lait,1\nthe film,0\n"


@pytest.mark.parametrize(
    "raw, codec",
    [
        (WIDE_TEXT.encode("utf-16"), "utf-16"),  # a byte order mark, as spreadsheets save "Unicode text"
        (WIDE_TEXT.encode("utf-32"), "utf-32"),
        (WIDE_TEXT.encode("utf-16-le"), "utf-16-le"),  # no mark: a NUL after every ASCII character
        (WIDE_TEXT.encode("utf-16-be"), "utf-16-be"),
    ],
)
@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_a_utf16_or_utf32_file_read_in_another_encoding_names_the_encoding_to_pass(tmp_path, raw, codec, encoding):
    with pytest.raises(InputError, match=f"t.csv is {codec.upper()} text .*not {encoding}") as error:
        decode_text(raw, tmp_path / "t.csv", encoding)
    assert f"--encoding {codec}" in error.value.hint
    assert decode_text(raw, tmp_path / "t.csv", codec) == WIDE_TEXT


def test_a_byte_order_mark_is_dropped_whatever_the_codec(tmp_path):
    raw = b"\xff\xfe" + WIDE_TEXT.encode("utf-16-le")  # utf-16-le keeps the mark as text
    assert decode_text(raw, tmp_path / "t.csv", "utf-16-le") == WIDE_TEXT
    assert decode_text(WIDE_TEXT.encode("utf-8-sig"), tmp_path / "t.csv", "utf-8") == WIDE_TEXT


@pytest.mark.parametrize("sep, char", [("tab", "\t"), ("\\t", "\t"), (";", ";"), ("pipe", "|"), (None, None)])
def test_sep_names(sep, char):
    assert normalise_sep(sep) == char


def test_a_label_column_is_typed_once():
    column = label_column("score", [" 10", "9", "", "NA", "10"], missing_markers("pandas"))
    assert column.names == ["9", "10"] and column.numeric  # numeric classes in numeric order
    assert column.codes.tolist() == [1, 0, -1, -1, 1] and column.missing == {"": 1, "NA": 1}
    assert np.isnan(column.values()[2]) and column.values()[0] == 10.0
    assert NUMBER.match("-1.5e3") and not NUMBER.match("1,5")
    assert not NUMBER.match("\u0663") and not NUMBER.match("1.\u0665")  # other scripts' digits: text, not numbers


@pytest.mark.parametrize(
    "name, stem",
    [("x.csv", "x"), ("x.csv.gz", "x"), ("x.JSONL.GZ", "x"), ("reviews.2024.csv", "reviews.2024"), ("x", "x")],
)
def test_corpus_stem_drops_the_format_suffix_and_a_gz_after_it(name, stem):
    assert corpus_stem(f"data/{name}") == stem


@pytest.mark.parametrize(
    "name, named",
    [
        *[("agnews.train.csv", "agnews.train"), ("agnews.test.TSV", "agnews.test"), ("sst2.csv.gz", "sst2")],
        *[("ud.en.conllu", "ud.en"), ("x.parquet", "x"), ("past.v2.txt", "past.v2"), ("y.jsonl.gz", "y")],
        *[("notes.v2", "notes.v2"), ("x.parquet.gz", "x.parquet.gz"), ("z.gz", "z.gz"), (".csv", ".csv")],
    ],
)
def test_corpus_name_drops_only_a_known_format_suffix_and_a_gz_after_a_table_format(name, named):
    """A study's corpus named after its file: the name less the suffix featx reads it by, every other dot kept (a
    ``.gz`` after Parquet or alone is no format featx reads, so it stays)."""
    assert corpus_name(f"data/{name}") == named


@pytest.mark.parametrize("name, stem", [("x.csv", "x"), ("x.csv.gz", "x"), ("r.2024.csv.gz", "r.2024")])
def test_every_default_output_named_from_a_corpus_drops_its_gz_and_format_suffix(tmp_path, name, stem):
    from types import SimpleNamespace

    from featx.deploy.prediction import _output
    from featx.extraction import make_config
    from featx.extraction.checks import output_path
    from featx.logit_lens.config import LensConfig

    corpus = tmp_path / name
    assert output_path(make_config(str(corpus))) == tmp_path / f"{stem}.features.h5"
    assert output_path(make_config(str(corpus), random_init=True)) == tmp_path / f"{stem}.random-init.features.h5"
    assert _output(SimpleNamespace(output=None), corpus) == tmp_path / f"{stem}.predictions.csv"
    lens = LensConfig(corpus=str(corpus), template="{text} is", answers=" yes, no")
    assert lens.prefix() == tmp_path / f"{stem}.lens"


def test_standard_input_of_json_lines_or_parquet_is_read_as_such():
    """Standard input has no name to say its format: JSON Lines (a first object) and Parquet (its magic bytes) are
    known by their first bytes, as a JSON array already is, instead of read as a CSV whose header is an object (or
    decoded as text: "not valid utf-8 ... pass --encoding latin-1")."""
    stdin = __import__("pathlib").Path("-")
    lines = b'\n {"text": "a warm film", "label": "1"}\n{"text": "awful", "label": "0"}\n'
    assert unwrap_gzip(lines, stdin) == (".jsonl", lines)
    header, rows, _ = parse_table(lines, stdin, ".jsonl", "utf-8", None, [])
    assert header == ["text", "label"] and rows == [["a warm film", "1"], ["awful", "0"]]
    assert unwrap_gzip(b"PAR1\x15\x04" + b"\x00" * 16 + b"PAR1", stdin)[0] == ".parquet"  # a Parquet file's ends
    assert unwrap_gzip(b"text\n{not json}\n", stdin)[0] == ""  # a CSV whose first line is its header

"""Bad input, data-driven: every case is refused through the CLI with exit code 2 and one clear message
(naming the file, row or column, and what to do) and no traceback; accepted oddities round-trip.

Add a case by adding a line to ``REFUSED`` (corpus content, extra CLI arguments, expected message).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.tiny import SENTENCES, write_csv

import featx
from featx.cli import main
from featx.errors import StoreError
from featx.extraction import ExtractConfig, extract
from featx.safe_files import is_hdf5_file

REPO = Path(featx.__file__).resolve().parent.parent

# (case id, corpus bytes or text, extra arguments, regex the message must match)
REFUSED = [
    ("empty file", "", [], r"c\.csv is empty.*hint: give a file with a header row"),
    ("blank lines only", "\n\r\n\n", [], r"c\.csv is empty"),
    ("header only", "text,label\n", [], r"c\.csv has a header but no rows.*hint: add at least one row"),
    (
        "missing text column",
        "sentence,label\nhi,1\n",
        [],
        r"has no text column 'text'; columns found: sentence, label.*hint: pass the right one with --text-col",
    ),
    ("wrong --text-col", "text,label\nhi,1\n", ["--text-col", "body"], r"no text column 'body'"),
    (
        "numbers-only text column",
        "text,label\n1,a\n2.5,b\n-3e4,a\n",
        [],
        r"text column 'text' holds only numbers.*hint: is --text-col the right column",
    ),
    (
        "empty texts",
        "text,label\nhi,1\n,0\nyo,1\n",
        [],
        r"1 empty or whitespace-only text\(s\) in column 'text': row 1 \(line 3\).*hint: .*--skip-empty",
    ),
    (
        "whitespace texts",
        "text,label\nhi,1\n  \t ,0\n   ,1\n",
        [],
        r"2 empty or whitespace-only text\(s\).*row 1 \(line 3\), row 2 \(line 4\).*--skip-empty",
    ),
    (
        "all texts empty with --skip-empty",
        "text,label\n ,1\n,0\n",
        ["--skip-empty"],
        r"every text in column 'text' is empty",
    ),
    (
        "ragged row, too many fields",
        "text,label\nhi,1\nhey,0,extra\n",
        [],
        r"c\.csv: line 3 has 3 fields but the header has 2.*hint: fix the row",
    ),
    (
        "ragged row, too few fields",
        "text,label,tense\nhi,1,past\nhey\n",
        [],
        r"line 3 has 1 fields but the header has 3",
    ),
    (
        "quote left open",
        'text,label\nhi,1\n"unterminated,0\nyo,1\n',
        [],
        r"c\.csv: cannot parse the row starting at line 3.*quote is probably left open",
    ),
    (
        "stray quote inside a field",
        'text,label\nsay "hi" now,1\n"a"b,0\n',
        [],
        r"cannot parse the row starting at line 3",
    ),
    (
        "latin-1 bytes",
        b"text,label\nok,1\ncaf\xe9 cr\xe8me,0\n",
        [],
        r"c\.csv: line 3, column 4 is not valid utf-8 \(byte 0xe9\).*hint: .*--encoding latin-1",
    ),
    ("unknown --encoding", "text\nhi\n", ["--encoding", "klingon"], r"unknown encoding 'klingon'"),
    ("duplicate column names", "text,label,label\nhi,1,2\n", [], r"repeats column\(s\) label"),
    ("unnamed column", "text,,label\nhi,x,1\n", [], r"column 2 of the header has no name"),
    (
        "duplicate ids",
        "id,text\nx,hi\nx,yo\n",
        ["--id-col", "id"],
        r"id 'x' appears twice in column 'id' \(line 2 and line 3\)",
    ),
    (
        "empty id",
        "id,text\nx,hi\n,yo\n",
        ["--id-col", "id"],
        r"row 1 \(line 3\) has an empty id in column 'id'.*hint: every row needs an id",
    ),
    ("corpus is a directory", None, ["@dir"], r"is a directory, not a corpus file"),
    ("corpus missing", None, [], r"corpus file .*c\.csv does not exist"),
    ("bad JSON line", '{"text": "hi"}\n{"text": oops}\n', ["@jsonl"], r"c\.jsonl: line 2 is not valid JSON.*hint: "),
    (
        "JSON line not an object",
        '{"text": "hi"}\n[1, 2]\n',
        ["@jsonl"],
        r"c\.jsonl: line 2 is not a JSON object.*hint: ",
    ),
    (
        "JSON line naming a key twice",
        '{"text": "hi"}\n{"text": "a", "label": "x", "text": "b"}\n',
        ["@jsonl"],
        r"c\.jsonl: line 2 names key 'text' twice.*hint: give each key once",
    ),
    (
        "output in a missing directory",
        "text\nhi\n",
        ["-o", "no/such/dir/out.h5"],
        r"output directory no/such/dir does not exist.*hint: create it first",
    ),
    (
        "output in a read-only directory (/proc)",
        "text\nhi\n",
        ["-o", "/proc/out.h5"],
        r"output directory /proc is not writable.*hint: choose a writable location",
    ),
    ("output is not .h5", "text\nhi\n", ["-o", "out.csv"], r"output out\.csv should end in \.h5"),
    (
        "output exists but is not HDF5",
        "text\nhi\n",
        ["@output:text"],
        r"out\.h5 already exists and cannot be used: .*out\.h5 is not an HDF5 file.*hint: choose another output",
    ),
    (
        "output is another HDF5 file",
        "text\nhi\n",
        ["@output:foreign"],
        r"cannot be used: .*is an HDF5 file but not a featx features file.*hint: pass --overwrite",
    ),
]


def _write(path: Path, content) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def _prepare(tmp_path: Path, content, args: list[str]) -> tuple[Path, list[str]]:
    corpus = tmp_path / ("c.jsonl" if "@jsonl" in args else "c.csv")
    if "@dir" in args:
        corpus.mkdir()
    elif content is not None:
        _write(corpus, content)
    extra = []
    for arg in args:
        if arg == "@output:text":
            (tmp_path / "out.h5").write_text("not features\n")
            extra += ["-o", "out.h5"]
        elif arg == "@output:foreign":
            with h5py.File(tmp_path / "out.h5", "w") as file:
                file["x"] = np.arange(3)
            extra += ["-o", "out.h5"]
        elif not arg.startswith("@"):
            extra.append(arg)
    if "-o" not in extra:
        extra += ["-o", "out.h5"]
    return corpus, extra


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("case, content, args, pattern", REFUSED, ids=[case[0] for case in REFUSED])
def test_refused_with_exit_2_and_one_clear_message(tiny_model, in_tmp, case, content, args, pattern):
    corpus, extra = _prepare(in_tmp, content, args)
    result = CliRunner().invoke(main, ["extract", str(corpus.name), "--model", str(tiny_model), "-q", *extra])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert_one_clear_error(result.output, pattern)


@pytest.mark.slow
def test_read_only_mount_is_detected_as_root(tiny_model, in_tmp):
    """os.access says "writable" to root on a read-only mount; featx tries to create a file instead."""
    read_only = in_tmp / "ro"
    read_only.mkdir()
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(read_only)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        _write(in_tmp / "c.csv", "text\nhi\n")
        result = CliRunner().invoke(main, ["extract", "c.csv", "--model", str(tiny_model), "-o", "ro/out.h5"])
        assert result.exit_code == 2
        assert_one_clear_error(result.output, r"output directory ro is not writable \(Read-only file system\)")
    finally:
        subprocess.run(["umount", "-l", str(read_only)], capture_output=True)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["ragged row, too many fields"])  # each real process costs seconds
def test_real_process_exit_2_without_traceback(tiny_model, in_tmp, case):
    _, content, args, pattern = next(item for item in REFUSED if item[0] == case)
    corpus, extra = _prepare(in_tmp, content, args)
    process = subprocess.run(
        [sys.executable, "-m", "featx", "extract", corpus.name, "--model", str(tiny_model), "-q", *extra],
        capture_output=True,
        text=True,
        cwd=in_tmp,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert process.returncode == 2 and process.stdout == ""
    assert_one_clear_error(process.stderr, pattern)


# -- features files that cannot be read -------------------------------------------------------------


@pytest.fixture(scope="module")
def features_file(tiny_model, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("features")
    corpus = write_csv(folder / "corpus.csv", SENTENCES)
    return extract(
        ExtractConfig(corpus=corpus, output=folder / "good.h5", model=str(tiny_model), progress=False)
    ).output


def _not_hdf5(good: Path, bad: Path) -> None:
    bad.write_bytes(b"text,label\nhello,1\n")


def _other_schema(good: Path, bad: Path) -> None:
    bad.write_bytes(good.read_bytes())
    with h5py.File(bad, "r+") as file:
        file.attrs["schema_version"] = 99


def _truncated(good: Path, bad: Path) -> None:
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 3])


def _overwritten_metadata(good: Path, bad: Path) -> None:
    data = bytearray(good.read_bytes())
    data[96:2048] = os.urandom(2048 - 96)  # the root group's object header and symbol table
    bad.write_bytes(bytes(data))


def _empty(good: Path, bad: Path) -> None:
    bad.write_bytes(b"")


def _foreign(good: Path, bad: Path) -> None:
    with h5py.File(bad, "w") as file:
        file["x"] = np.arange(3)


BAD_FEATURES = [
    ("not HDF5", _not_hdf5, r"bad\.h5 is not an HDF5 file"),
    ("empty file", _empty, r"bad\.h5 is not an HDF5 file"),
    ("another schema version", _other_schema, r"uses featx features schema 99, this featx reads schema 1.*--overwrite"),
    ("truncated HDF5", _truncated, r"bad\.h5 (cannot be read; it looks damaged|is not an HDF5 file)"),
    (
        "overwritten HDF5 metadata",
        _overwritten_metadata,
        r"bad\.h5 (cannot be read; it looks damaged|is not an HDF5 file)",
    ),
    ("HDF5 but not featx", _foreign, r"is an HDF5 file but not a featx features file"),
]


@pytest.mark.parametrize("case, damage, pattern", BAD_FEATURES, ids=[case[0] for case in BAD_FEATURES])
def test_unreadable_features_file_is_refused_clearly(features_file, tmp_path, case, damage, pattern):
    bad = tmp_path / "bad.h5"
    damage(features_file, bad)
    with pytest.raises(StoreError) as raised:
        featx.open(bad)
    assert re.search(pattern, str(raised.value).replace("\n", " ")), str(raised.value)
    with pytest.raises(StoreError):
        featx.open(bad, allow_partial=True)


@pytest.mark.parametrize("case, damage, pattern", BAD_FEATURES, ids=[case[0] for case in BAD_FEATURES])
def test_extract_onto_an_unreadable_features_file_says_so(tiny_model, features_file, in_tmp, case, damage, pattern):
    damage(features_file, in_tmp / "bad.h5")
    write_csv(in_tmp / "c.csv", SENTENCES)
    result = CliRunner().invoke(main, ["extract", "c.csv", "--model", str(tiny_model), "-q", "-o", "bad.h5"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, r"bad\.h5 already exists and cannot be used: .*" + pattern.split(".*")[0])
    # --overwrite is suggested only where it replaces the file (an HDF5 file, not a text or empty file)
    assert ("pass --overwrite" in result.output) == is_hdf5_file(in_tmp / "bad.h5"), result.output


# -- accepted and handled right ------------------------------------------------------------------

ODD_TEXTS = [
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",  # Hebrew, right to left
    "\u0645\u0631\u062d\u0628\u0627 \u202eevil\u202c bidi override",  # Arabic and a bidi control
    "emoji \U0001f600\U0001f44d\U0001f3fd and a flag \U0001f1eb\U0001f1f7",
    "control\x07bell\x1b[31m escape\x0bvertical\x0cfeed",
    'quotes "inside", commas, and\nan embedded newline',
    "zero\u200bwidth joiner\u200d and combining e\u0301",
    "  leading and trailing spaces  ",
]


def test_odd_but_valid_corpus_round_trips(tiny_model, tmp_path):
    """BOM, Windows line endings, NaN labels, odd characters, a 1 MB text and an 'a/b' column, in one file."""
    huge = " ".join(["the cat loved the film"] * 50_000)  # about 1.1 MB
    assert len(huge.encode()) > 1_000_000
    texts = ODD_TEXTS + [huge, "plain"]
    labels = ["pos", "nan", "NaN", "", "NA", "neg", "pos", "neg", "null"]
    weird = ["x", "y", "x", "y", "x", "y", "x", "y", "x"]
    path = tmp_path / "odd.csv"
    with open(path, "w", newline="", encoding="utf-8-sig") as handle:  # BOM
        writer = csv.writer(handle, lineterminator="\r\n")  # Windows line endings
        writer.writerow(["text", "label", "a/b", ".", "%2F"])
        writer.writerows(zip(texts, labels, weird, labels, weird, strict=False))
    assert path.read_bytes().startswith(b"\xef\xbb\xbftext,") and b"\r\n" in path.read_bytes()

    summary = extract(
        ExtractConfig(
            corpus=path, output=tmp_path / "odd.h5", model=str(tiny_model), progress=False, missing_labels="pandas"
        )
    )  # nan, NaN, NA, null missing (default: empty only)
    assert summary.rows == len(texts) and summary.truncated_rows == 1
    limit = 64 * 64  # the 1 MB text is cut before tokenising: 64 characters per token of the tiny model's 64
    assert any(note.startswith(f"1 row(s) had a text over {limit:,} characters") for note in summary.notes)
    with featx.open(summary.output) as features:
        assert features.texts == [text[:limit] for text in texts]  # what was tokenised
        assert features.label_columns == ["label", "a/b", ".", "%2F"]
        assert features.label_names("label") == ["neg", "pos"]
        np.testing.assert_array_equal(features.labels("label"), [1, -1, -1, -1, -1, 0, 1, 0, -1])
        assert [features.label_names("a/b")[code] for code in features.labels("a/b")] == weird
        np.testing.assert_array_equal(features.labels("."), features.labels("label"))
        np.testing.assert_array_equal(features.labels("%2F"), features.labels("a/b"))
        assert list(features.truncated) == [False] * len(ODD_TEXTS) + [True, False]
        # n_tokens counts the tokens of the stored (cut) text, still far over the maximum
        assert features.n_tokens[len(ODD_TEXTS)] > 500 and features.n_kept[len(ODD_TEXTS)] == 64
        assert np.isfinite(features.features("mean", 2)).all()
    with h5py.File(summary.output) as file:
        assert sorted(file["labels"]) == sorted(["label", "a%2Fb", "%2E", "%252F"])  # no groups from 'a/b'


def test_skip_empty_accepts_and_reports(tiny_model, in_tmp):
    _write(in_tmp / "c.csv", "text,label\nhi there,1\n   ,0\nyo,1\n")
    result = CliRunner().invoke(main, ["extract", "c.csv", "--model", str(tiny_model), "-q", "--skip-empty"])
    assert result.exit_code == 0, result.output
    assert "2 rows" in result.output and "1 empty skipped" in result.output
    with featx.open(in_tmp / "c.features.h5") as features:
        assert features.texts == ["hi there", "yo"]


MEMORY_CHILD = r"""
import json, resource, sys
from featx.extraction.inputs.corpus import read_corpus
from featx.extraction.model.loading import load_tokenizer
from featx.extraction.tokens.tokenize import tokenize_texts
tokenizer = load_tokenizer(sys.argv[2])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
corpus = read_corpus(sys.argv[1])
tokenized = tokenize_texts(tokenizer, corpus.texts, 64)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rows": len(corpus), "tokens": int(tokenized.offsets[-1]), "growth": peak - base}))
"""


@pytest.mark.slow
def test_many_tiny_rows_cost_a_small_constant_per_row(tiny_model, tmp_path):
    """100,000 one-character rows through the reader and tokenizer, peak RSS measured in a fresh process.

    The full 1,000,000 rows take ~20 s here, so they run in ``bench/million_rows.py`` (measured ~330
    bytes per row); this keeps the same check in the suite at a tenth of the size.
    """
    n = 100_000
    path = tmp_path / "tiny_rows.csv"
    with open(path, "w") as handle:
        handle.write("text,label\n")
        handle.writelines(f"{'abcdefghij'[i % 10]},{i % 3}\n" for i in range(n))
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(path), str(tiny_model)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    measured = json.loads(out.stdout)
    assert measured["rows"] == n and measured["tokens"] == 3 * n  # [CLS] x [SEP]
    assert measured["growth"] / n < 2000, measured  # a few hundred bytes of metadata per row, nothing more

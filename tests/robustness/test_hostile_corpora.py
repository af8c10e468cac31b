"""Hostile corpora and labels: inputs small on disk, or in their row count, that used to cost gigabytes, hours
or a traceback. Each is refused with exit 2 and one line before the work it would blow up (a text too long to
matter is cut instead, and the run says so). The cases that ate memory or time run together in one subprocess
under an address-space limit (``RLIMIT_AS``), so a regression fails there instead of eating the machine.

Add a case by adding a line to ``REFUSED`` (in process) or ``MEMORY`` (in the limited subprocess): the case
id, a function that writes the hostile input into a folder and returns the command's arguments, and the
expected message.
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.planted_words import PlantedWords
from support.store_files import Rows
from support.tiny import SENTENCES, write_csv

import featx
from featx.cli import main
from featx.errors import InputError
from featx.extraction.inputs.corpus import CHARS_PER_TOKEN, WINDOW_CHARS_PER_TOKEN
from featx.probing.config import ProbeConfig
from featx.probing.tasks.words import probe_words
from featx.store import FeatureFile, FeatureWriter, hidden_layout, schema

REPO = Path(featx.__file__).resolve().parent.parent
ADDRESS_SPACE = 3 * 2**30  # a tiny model's extraction peaks at about 1.4 GiB of address space
LONG_TEXT = "word " * 10_000_000  # 50 MB in one row
TINY_MAX_LENGTH = 64  # the tiny model's maximum (support.tiny.build_tiny_bert)


def _extract(corpus: Path, *extra: str):
    return lambda folder, model: ["extract", str(corpus), "--model", model, "-o", str(folder / "out.h5"), "-q", *extra]


def _labelled_features(path: Path, n_rows: int, n_classes: int) -> Path:
    """A features file (no model needed) whose label ``label`` has ``n_classes`` classes over ``n_rows`` rows."""
    rows = Rows(n_rows, tokens_per_row=1)
    codes = (np.arange(n_rows) % n_classes).astype(np.int32)
    rows.labels = {"label": type("Label", (), {"codes": codes, "names": [f"c{i}" for i in range(n_classes)]})()}
    sites = [hidden_layout([0, 1], 8, ["mean"])]
    writer = FeatureWriter.create(
        path, {schema.FINGERPRINT: "fp", schema.MODEL: "m"}, rows, rows, sites, np.float32, False
    )
    rng = np.random.default_rng(0)
    pooled = {name: rng.normal(size=(n_rows, 2, 8)).astype(np.float32) for name in sites[0].pooled_paths.values()}
    writer.write_block(0, n_rows, pooled)
    writer.commit(n_rows)
    writer.finish()
    return path


# -- the hostile inputs ---------------------------------------------------------------------------------------
def _long_text(*extra: str):
    """One 50 MB row; the corpus is written once, beside the case folders, for both cases that read it."""

    def make(folder: Path, model: str) -> list[str]:
        corpus = folder.parent / "long.csv"
        if not corpus.exists():
            write_csv(corpus, [(LONG_TEXT, "pos")], ("text", "label"))
        return _extract(corpus, *extra)(folder, model)

    return make


def _gzip_bomb(folder: Path, model: str) -> list[str]:
    """512 MiB of rows in a gzip file of about 1 MB (old: inflated whole, then parsed into tens of millions of rows).

    One gzip member, as ``gzip.open(path, "wb", 9)`` writes it, but the MiB of rows is deflated once, not 512
    times (1.4 s): each deflated piece ends in a full flush, which drops the history, so copies of it follow one
    another as one valid deflate stream."""
    path = folder / "bomb.csv.gz"
    header, block, copies = b"text,label\n", b"hello world,1\n" * (2**20 // 14), 512
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = deflate.compress(header) + deflate.flush(zlib.Z_FULL_FLUSH)
    piece = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(header)
    for _ in range(copies):
        crc = zlib.crc32(block, crc)
    with path.open("wb") as handle:
        handle.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first)  # deflate, no name, no time
        for _ in range(copies):
            handle.write(piece)
        handle.write(deflate.flush() + struct.pack("<II", crc, len(header) + copies * len(block)))
    return _extract(path)(folder, model)


def _wide_csv(folder: Path, model: str) -> list[str]:
    """A million columns (old: the header's names were compared pairwise, for hours)."""
    names = ",".join(f"c{i}" for i in range(10**6 - 1))
    (folder / "wide.csv").write_text(f"text,{names}\nhello world{',1' * (10**6 - 1)}\n")
    return _extract(folder / "wide.csv")(folder, model)


def _wide_jsonl(folder: Path, model: str) -> list[str]:
    """A million keys on one line: the text ``json.dumps`` writes for that record, joined directly (5 times faster)."""
    keys = ", ".join(f'"c{i}": 1' for i in range(10**6))
    (folder / "wide.jsonl").write_text(f'{{"text": "hello world", {keys}}}\n')
    return _extract(folder / "wide.jsonl")(folder, model)


def _many_classes(*command: str):
    """10^5 classes of 5 rows each (old: class x row arrays of tens of GiB, then a traceback); one file for all."""

    def make(folder: Path, model: str) -> list[str]:
        path = folder.parent / "classes.h5"
        if not path.exists():
            _labelled_features(path, 5 * 10**5, 10**5)
        return [command[0], str(path), *command[1:]]

    return make


CLASSES = r"label column 'label' of \S+ has 100,000 classes in 500,000 labelled rows \(featx probes at most 10,000\)"

# Cases that used to allocate (or loop) without bound: one subprocess under RLIMIT_AS.
MEMORY = [
    ("a 50 MB text, --long truncate", _long_text(), None),
    ("a 50 MB text, --long window", _long_text("--long", "window"), None),
    ("a gzip bomb", _gzip_bomb, r"bomb\.csv\.gz inflates more than 100 times its compressed size .*--max-corpus-bytes"),
    ("a million CSV columns", _wide_csv, r"the header has 1,000,000 columns; featx reads at most 10,000"),
    ("a million JSON keys", _wide_jsonl, r"line 1 has 1,000,001 columns; featx reads at most 10,000"),
    ("10^5 classes, probe", _many_classes("probe", "--no-control"), CLASSES),
    ("10^5 classes, probe --sweep", _many_classes("probe", "--sweep"), CLASSES),
    ("10^5 classes, erase", _many_classes("erase"), CLASSES),
    ("10^5 classes, neurons", _many_classes("neurons"), CLASSES),
]

SCRIPT = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from click.testing import CliRunner
from featx.cli import main
results = {{}}
for case, arguments in json.loads(sys.argv[1]).items():
    result = CliRunner().invoke(main, arguments)
    results[case] = [result.exit_code, result.output, repr(result.exception)]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def memory_results(tiny_model, tmp_path_factory) -> dict:
    """Every ``MEMORY`` case through the CLI, in one subprocess limited to ``ADDRESS_SPACE`` bytes."""
    base = tmp_path_factory.mktemp("hostile-corpora")
    commands = {}
    for index, (case, make, _) in enumerate(MEMORY):
        folder = base / f"case{index}"
        folder.mkdir()
        commands[case] = make(folder, str(tiny_model))
    process = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(limit=ADDRESS_SPACE), json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert process.returncode == 0, process.stderr[-3000:]
    return {"base": str(base), **json.loads(process.stdout.strip().splitlines()[-1])}


@pytest.mark.slow
@pytest.mark.parametrize("case, make, pattern", [c for c in MEMORY if c[2]], ids=[c[0] for c in MEMORY if c[2]])
def test_hostile_input_is_refused_within_bounded_memory(memory_results, case, make, pattern):
    exit_code, output, exception = memory_results[case]
    assert exit_code == 2, (output, exception)
    assert_one_clear_error(output, pattern)


@pytest.mark.slow
@pytest.mark.parametrize("window", [False, True])
def test_a_50_mb_text_is_cut_before_tokenising_and_said(memory_results, window):
    """The text is cut to a bound (64 characters per token of the maximum, or --long window's larger bound),
    the run says how many rows were cut, and the file stores the text that was tokenised."""
    index, case = next((i, c[0]) for i, c in enumerate(MEMORY) if c[0].endswith("window" if window else "truncate"))
    exit_code, output, exception = memory_results[case]
    assert exit_code == 0, (output, exception)
    limit = (WINDOW_CHARS_PER_TOKEN if window else CHARS_PER_TOKEN) * TINY_MAX_LENGTH
    assert f"1 row(s) had a text over {limit:,} characters, cut to that before tokenising" in output
    with FeatureFile(Path(memory_results["base"]) / f"case{index}" / "out.h5") as features:
        assert features.texts == [LONG_TEXT[:limit]]
        assert bool(features.truncated[0]) != window


# -- in process -----------------------------------------------------------------------------------------------
def _deep_jsonl(folder: Path, model: str) -> list[str]:
    deep = '{"text": "hi", "x": ' + "[" * 10**5 + "]" * 10**5 + "}"
    (folder / "deep.jsonl").write_text('{"text": "hello world"}\n' + deep + "\n")
    return _extract(folder / "deep.jsonl")(folder, model)


def _deep_first_line(folder: Path, model: str) -> list[str]:
    """Nested on its first line, which featx reads to tell a file of tokens from a table."""
    (folder / "deep.jsonl").write_text('{"x": ' + "[" * 10**5 + "]" * 10**5 + "}\n")
    return _extract(folder / "deep.jsonl")(folder, model)


def _deep_tokens(folder: Path, model: str) -> list[str]:
    deep = '{"tokens": ["hi"], "x": ' + "[" * 10**5 + "]" * 10**5 + "}"
    (folder / "deep.jsonl").write_text('{"tokens": ["hello", "world"]}\n' + deep + "\n")
    return _extract(folder / "deep.jsonl")(folder, model)


def _half_a_surrogate(first: str, second: str):
    """A JSON escape of half of a surrogate pair on line 2 (the tokenizer's TypeError ended extract in a traceback)."""

    def make(folder: Path, model: str) -> list[str]:
        (folder / "half.jsonl").write_text(first + "\n" + second + "\n")
        return _extract(folder / "half.jsonl")(folder, model)

    return make


def _small_gzip(*extra: str):
    def make(folder: Path, model: str) -> list[str]:
        path = folder / "corpus.csv.gz"
        path.write_bytes(gzip.compress(write_csv(folder / "corpus.csv", SENTENCES[:4]).read_bytes()))
        return _extract(path, *extra)(folder, model)

    return make


def _few_rows_per_class(folder: Path, model: str) -> list[str]:
    return ["probe", str(_labelled_features(folder / "classes.h5", 300, 300)), "--no-control"]


REFUSED = [
    ("JSON Lines nested 10^5 deep", _deep_jsonl, r"deep\.jsonl: line 2 is nested too deeply to read"),
    ("JSON Lines nested on line 1", _deep_first_line, r"deep\.jsonl: line 1 is nested too deeply to read"),
    ("JSON Lines of tokens nested", _deep_tokens, r"deep\.jsonl, line 2: nested too deeply to read"),
    (
        "JSON Lines with half a surrogate pair",
        _half_a_surrogate('{"text": "hello world"}', '{"text": "hello \\ud800 world"}'),
        r"half\.jsonl: line 2 is not valid JSON \(a string holds \\ud800, half of a surrogate pair, which is no text\)",
    ),
    (
        "JSON Lines of tokens with half a surrogate pair",
        _half_a_surrogate('{"tokens": ["hello"]}', '{"tokens": ["hello", "\\udc80"]}'),
        r"half\.jsonl, line 2: not valid JSON \(a string holds \\udc80, half of a surrogate pair",
    ),
    (
        "a .gz corpus over --max-corpus-bytes",
        _small_gzip("--max-corpus-bytes", "100"),
        r"corpus\.csv\.gz inflates to more than 100 bytes \(the --max-corpus-bytes limit\)",
    ),
    ("--max-corpus-bytes 0", _small_gzip("--max-corpus-bytes", "0"), r"--max-corpus-bytes 0 must be a whole number"),
    (
        "300 classes in 300 rows",
        _few_rows_per_class,
        r"label column 'label' of \S+ has 300 classes in 300 labelled rows \(fewer than 2 rows a class\).*--min-class",
    ),
]


@pytest.mark.parametrize("case, make, pattern", REFUSED, ids=[case[0] for case in REFUSED])
def test_hostile_input_is_refused(tiny_model, tmp_path, case, make, pattern):
    result = CliRunner().invoke(main, make(tmp_path, str(tiny_model)))
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert_one_clear_error(result.output, pattern)


def test_a_gzip_corpus_within_the_limits_is_read(tiny_model, tmp_path):
    result = CliRunner().invoke(main, _small_gzip()(tmp_path, str(tiny_model)))
    assert result.exit_code == 0, result.output
    with FeatureFile(tmp_path / "out.h5") as features:
        assert features.texts == [row[0] for row in SENTENCES[:4]]


class _OneClassPerWord(PlantedWords):
    def word_labels(self, column):
        return np.arange(len(self.upos), dtype=np.int32) if column == "upos" else super().word_labels(column)

    def word_label_names(self, column):
        return [f"t{i}" for i in range(len(self.upos))] if column == "upos" else super().word_label_names(column)


def test_a_word_label_with_a_class_per_word_is_refused():
    source = _OneClassPerWord(n_sentences=100)
    config = ProbeConfig(features="planted", write=False, jobs=1, label="upos")
    with pytest.raises(InputError, match=r"has \d+ classes in \d+ labelled rows \(fewer than 2 rows a class\)"):
        probe_words(config, "planted", [], 0.0, source=source)


@pytest.mark.parametrize("model", ["tiny", "minilm"])
def test_the_cut_keeps_every_token_of_an_ordinary_long_text(tiny_model, minilm_path, model):
    """Cutting before tokenising changes nothing kept: the first max_length tokens of the whole text and of the
    cut text are the same ids (so features of ordinary texts are exactly as before)."""
    from transformers import AutoTokenizer

    from featx.extraction.inputs.corpus import text_char_limit
    from featx.extraction.tokens.tokenize import tokenize_texts

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model if model == "tiny" else minilm_path))
    texts = [" ".join(SENTENCES[i % len(SENTENCES)][0] for i in range(3000)), "the  end, " * 10_000]
    max_length = 64 if model == "tiny" else 512
    limit = text_char_limit(max_length, window=False)
    assert all(len(text) > limit for text in texts)
    whole = tokenize_texts(tokenizer, texts, max_length)
    cut = tokenize_texts(tokenizer, [text[:limit] for text in texts], max_length)
    np.testing.assert_array_equal(whole.input_ids, cut.input_ids)
    np.testing.assert_array_equal(whole.offsets, cut.offsets)


def test_both_texts_of_a_pair_are_cut(tiny_model, tmp_path):
    long = "word " * 2_000  # 10,000 characters, over the tiny model's 4,096
    corpus = write_csv(tmp_path / "pairs.csv", [("a short text", long), (long, "short")], ("text", "other"))
    arguments = _extract(corpus, "--text-pair-col", "other")(tmp_path, str(tiny_model))
    result = CliRunner().invoke(main, [a for a in arguments if a != "-q"])
    assert result.exit_code == 0, result.output
    limit = CHARS_PER_TOKEN * TINY_MAX_LENGTH
    assert f"2 row(s) had a text over {limit:,} characters" in result.output
    with FeatureFile(tmp_path / "out.h5") as features:
        assert features.texts == ["a short text", long[:limit]]
        assert features.pair_texts == [long[:limit], "short"]

"""Reading a labelled corpus (CSV, TSV, JSON Lines, Parquet) into a validated ``Corpus``."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import os
import re
import stat
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError

# ``--missing-labels pandas``: the markers pandas reads as missing by default (the empty cell always is).
PANDAS_MISSING = frozenset({"nan", "NaN", "NAN", "NA", "N/A", "n/a", "null", "NULL", "None", "<NA>", "-NaN", "-nan"})
MISSING_VALUES = PANDAS_MISSING | {""}  # kept for callers of 0.x
CONTINUOUS_MIN_DISTINCT = 20  # a numeric label column with more distinct values than this (and
CONTINUOUS_MIN_FRACTION = 0.05  # than this fraction of its rows, or with decimals) looks continuous
_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")


def looks_continuous(names: list[str], present: int) -> bool:
    """Numeric class names that look like a score: more than 20 distinct values, with decimals or
    more distinct values than 5% of the labelled rows."""
    if len(names) <= CONTINUOUS_MIN_DISTINCT or not all(_NUMBER.match(name) for name in names):
        return False
    decimals = any("." in name or "e" in name.lower() for name in names)
    return decimals or len(names) > CONTINUOUS_MIN_FRACTION * present


@dataclass
class LabelColumn:
    """A candidate label: integer codes per row (-1 = missing) and the class names."""

    name: str
    codes: np.ndarray
    names: list[str]
    missing: dict[str, int] = field(default_factory=dict)  # value read as missing -> rows ("" = empty cell)
    numeric: bool = False  # every present value is a number

    @property
    def n_missing(self) -> int:
        return int((self.codes < 0).sum())

    @property
    def looks_continuous(self) -> bool:
        """Numeric with many distinct values (a score, not classes)."""
        return self.numeric and looks_continuous(self.names, int((self.codes >= 0).sum()))

    def values(self) -> np.ndarray:
        """Each row's value as a float (NaN where missing); for numeric columns only."""
        table = np.array([float(name) for name in self.names] + [np.nan])
        return table[np.where(self.codes >= 0, self.codes, len(self.names))]


@dataclass
class Corpus:
    """Texts plus everything else that rode along in the file, in file order."""

    path: Path
    texts: list[str]
    ids: list[str]
    text_col: str
    id_col: str | None
    labels: dict[str, LabelColumn]
    split: list[str] | None
    sha256: str
    skipped_rows: list[int] = field(default_factory=list)  # data row numbers (0-based) left out by --skip-empty
    notes: list[str] = field(default_factory=list)  # what the reader decided, for the user (delimiter, missing)
    words: object | None = None  # word inputs (CoNLL-U...): the sentences' words, a ``treebank.WordTable``
    pair_texts: list[str] | None = None  # sentence pairs: each row's second text (--text-pair-col)
    pair_col: str | None = None

    def __len__(self) -> int:
        return len(self.texts)


STDIN = "-"  # the corpus argument that reads standard input


def is_stdin(path) -> bool:
    return str(path) == STDIN


def rereadable(path) -> bool:
    """Whether reading ``path`` again gives the same bytes back: a regular file named by a stable path.

    Standard input, pipes, FIFOs, process substitution (``<(zcat x.gz)``) and ``/dev/stdin``-style
    names can be read once only; their fingerprint is the sha256 of the bytes read in this run.
    """
    if is_stdin(path) or str(path).startswith(("/dev/", "/proc/")):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def source_name(path) -> str:
    """How a corpus is named in messages and in the file: ``<stdin>`` for ``-``."""
    return "<stdin>" if is_stdin(path) else str(path)


def _read_source(path: Path) -> bytes:
    """Every byte of the corpus, read once (the fingerprint is taken from these very bytes)."""
    if is_stdin(path):
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError(
                "corpus '-' means standard input, but nothing is piped in",
                "pipe the corpus in: featx extract - < corpus.csv, or give its path",
            )
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


COMPRESSED = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ": "xz", b"PK\x03\x04": "zip", b"(\xb5/\xfd": "zstd"}


def _refuse_other_formats(raw: bytes, path: Path, suffix: str) -> None:
    """Compressed files and JSON arrays, named as such (decoding them as text would give a misleading error)."""
    for magic, kind in COMPRESSED.items():
        if raw.startswith(magic):
            tool = {"gzip": "zcat", "bzip2": "bzcat", "xz": "xzcat", "zstd": "zstdcat"}.get(kind)
            how = f"featx extract <({tool} {path}) -o OUT.h5" if tool else "unzip it first"
            raise InputError(
                f"{path} is {kind}-compressed; featx reads plain CSV/TSV/JSON Lines or Parquet",
                f"decompress it first, or stream it: {how}",
            )
    start = raw.lstrip()[:2]
    if (suffix == ".json" and start[:1] == b"[") or (suffix in ("", ".jsonl", ".ndjson") and start == b"[{"):
        raise InputError(
            f"{path} is a JSON array; featx reads JSON Lines (one object per line)",
            f"convert it, e.g. jq -c '.[]' {path} > corpus.jsonl",
        )


DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}
SEP_ALIASES = {**{name: char for char, name in DELIMITER_NAMES.items()}, "\\t": "\t", "tsv": "\t", "csv": ","}
SNIFF_BYTES = 64 * 1024
SNIFF_ROWS = 50


def normalise_sep(sep: str | None) -> str | None:
    """``--sep``: one of , TAB ; | (or its name: comma, tab, semicolon, pipe; ``\\t``); None to sniff."""
    if sep is None or sep == "":
        return None
    chosen = sep if sep in DELIMITER_NAMES else SEP_ALIASES.get(str(sep).strip().lower())
    if chosen is None:
        raise InputError(
            f"--sep '{sep}' is not understood", "use --sep comma, tab, semicolon or pipe (or the character itself)"
        )
    return chosen


def _suffix_delimiter(text: str, suffix: str) -> str:
    if suffix == ".tsv":
        return "\t"
    if suffix == ".csv":
        return ","
    first_line = text.split("\n", 1)[0]
    return "\t" if first_line.count("\t") > first_line.count(",") else ","


def _sample_width(sample: str, delimiter: str) -> int:
    """The header's width when the sample's whole rows all have it (and it is at least 2), else 0."""
    reader = csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter, strict=True)
    try:
        widths = [len(row) for row, _ in zip(reader, range(SNIFF_ROWS), strict=False) if row]
    except csv.Error:
        return 0
    if len(widths) > 2:
        widths = widths[:-1]  # the last row of a cut sample may be cut too
    return widths[0] if widths and widths[0] >= 2 and len(set(widths)) == 1 else 0


def choose_delimiter(text: str, suffix: str, sep: str | None) -> str:
    """``--sep``, else the suffix's delimiter when the first lines agree with it, else the candidate
    (comma, tab, semicolon, pipe) that splits the header and the first rows into the same, largest width.
    When none does, the suffix's (its parse error then names the line)."""
    if sep is not None:
        return sep
    default = _suffix_delimiter(text, suffix)
    sample = text[:SNIFF_BYTES]
    if _sample_width(sample, default):
        return default
    widths = {char: _sample_width(sample, char) for char in DELIMITER_NAMES}
    best = max(widths, key=lambda char: widths[char])
    return best if widths[best] else default


GZIP_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".txt")


def _unwrap_gzip(raw: bytes, path: Path) -> tuple[str, bytes]:
    """The suffix that says the format, and the bytes to parse: ``x.csv.gz`` is read as ``x.csv``."""
    suffix = "" if is_stdin(path) else path.suffix.lower()
    if suffix == ".gz" and raw.startswith(b"\x1f\x8b"):
        inner = Path(path.stem).suffix.lower()
        if inner in GZIP_SUFFIXES:
            try:
                return inner, gzip.decompress(raw)
            except (OSError, EOFError, zlib.error) as err:
                raise InputError(
                    f"{path} is not a readable gzip file ({err})", "check the download, or decompress it yourself"
                ) from None
    return suffix, raw


def _semicolon_hint(header: list[str]) -> str | None:
    if len(header) == 1 and header[0].count(";") >= 1:
        return "the header looks semicolon-separated; save the file as comma- or tab-separated (.csv/.tsv)"
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _decode(raw: bytes, path: Path, encoding: str) -> str:
    try:
        return raw.decode("utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding)
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(
            f"{path}: line {line}, column {column} is not valid {encoding} (byte 0x{raw[err.start]:02x})",
            "re-save the file as UTF-8, or pass its encoding, e.g. --encoding latin-1",
        ) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", "use a Python codec name such as utf-8 or latin-1") from None


def _read_delimited(text: str, path: Path, delimiter: str) -> tuple[list[str], list[list[str]], list[int]]:
    # The csv module refuses fields over 128 KiB by default; one text may be a whole document.
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text) + 1))
    try:
        return _parse_delimited(text, path, delimiter)
    finally:
        csv.field_size_limit(limit)


def _parse_delimited(text: str, path: Path, delimiter: str) -> tuple[list[str], list[list[str]], list[int]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{path} is empty", "give a CSV/TSV file with a header row, e.g. text,label") from None
    except csv.Error as err:
        raise InputError(f"{path}: the header row cannot be parsed ({err})") from None
    rows: list[list[str]] = []
    lines: list[int] = []
    width = len(header)
    previous_line = reader.line_num
    try:
        for row in reader:
            start_line = previous_line + 1
            previous_line = reader.line_num
            if not row:
                continue  # blank line
            if len(row) != width:
                raise InputError(
                    f"{path}: line {start_line} has {len(row)} fields but the header has {width}",
                    "fix the row (a stray delimiter or a missing quote?) or quote fields that contain the delimiter",
                )
            rows.append(row)
            lines.append(start_line)
    except csv.Error as err:
        raise InputError(
            f"{path}: cannot parse the row starting at line {previous_line + 1}: {err}",
            "a quote is probably left open: close it or escape quotes inside fields by doubling them",
        ) from None
    return header, rows, lines


def _read_jsonl(text: str, path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    records, lines, header = [], [], []
    # Only \n ends a record: str.splitlines() would also split on \x85 or \u2028, legal inside JSON strings.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}: line {number} is not valid JSON ({err.msg})") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}: line {number} is not a JSON object")
        for key in record:
            if key not in header:
                header.append(key)
        records.append(record)
        lines.append(number)
    if not records:
        raise InputError(f"{path} is empty", 'give one JSON object per line, e.g. {"text": ..., "label": ...}')
    rows = [[_cell(record.get(key)) for key in header] for record in records]
    return header, rows, lines


def _read_parquet(raw: bytes, path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow", "pip install pyarrow, or convert to CSV") from None
    try:
        table = pq.read_table(io.BytesIO(raw))
    except Exception as err:  # pyarrow raises several types for bad files
        raise InputError(f"{path} is not a readable Parquet file ({err})") from None
    header = list(table.column_names)
    columns = [[_cell(value) for value in table.column(name).to_pylist()] for name in header]
    rows = [list(values) for values in zip(*columns, strict=False)]
    return header, rows, list(range(1, len(rows) + 1))


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


MISSING_PRESETS = {"empty": frozenset(), "pandas": PANDAS_MISSING}


def missing_markers(option: str | None) -> frozenset[str]:
    """The label values read as missing besides the empty cell: ``empty`` (none), ``pandas``, or a comma list."""
    if option is None or str(option).strip().lower() in ("", "empty"):
        return frozenset()
    if str(option).strip().lower() == "pandas":
        return PANDAS_MISSING
    return frozenset(value.strip() for value in str(option).split(",") if value.strip())


def _label_column(name: str, values: list[str], markers: frozenset[str] = frozenset()) -> LabelColumn:
    stripped = [value.strip() for value in values]
    missing: dict[str, int] = {}
    for value in stripped:
        if not value or value in markers:
            missing[value] = missing.get(value, 0) + 1
    present = sorted({value for value in stripped if value and value not in markers})
    numeric = bool(present) and all(_NUMBER.match(value) for value in present)
    if numeric:
        present.sort(key=float)
    index = {value: code for code, value in enumerate(present)}
    codes = np.fromiter((index.get(value, -1) for value in stripped), dtype=np.int32, count=len(values))
    return LabelColumn(name=name, codes=codes, names=present, missing=missing, numeric=numeric)


def _decode_source(raw: bytes, path: Path, encoding: str) -> str:
    if not raw.strip():
        raise InputError(f"{path} is empty", "give a file with a header row, e.g. text,label, and one row per text")
    return _decode(raw, path, encoding)


def _parse(raw: bytes, path: Path, suffix: str, encoding: str, sep: str | None, notes: list[str]):
    """Header, rows and each row's first line, whatever the format."""
    if suffix == ".parquet":
        return _read_parquet(raw, path)
    text = _decode_source(raw, path, encoding)
    if suffix in (".jsonl", ".ndjson", ".json"):  # .json: JSON Lines too (an array is refused above)
        return _read_jsonl(text, path)
    delimiter = choose_delimiter(text, suffix, sep)
    default = _suffix_delimiter(text, suffix)
    if sep is None and delimiter != default:
        notes.append(
            f"{source_name(path)}: read as {DELIMITER_NAMES[delimiter]}-separated "
            f"(sniffed from the first lines; the name suggests {DELIMITER_NAMES[default]}); "
            "--sep forces one"
        )
    return _read_delimited(text, path, delimiter)


def _check_header(
    header: list[str], path: Path, text_col: str, id_col: str | None, pair_col: str | None = None
) -> list[str]:
    header = [name.strip() for name in header]
    for position, name in enumerate(header, start=1):
        if not name:
            raise InputError(f"{path}: column {position} of the header has no name", "give every column a name")
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise InputError(
            f"{path}: the header repeats column(s) {', '.join(duplicates)}", "give every column a unique name"
        )
    if text_col not in header:
        raise InputError(
            f"{path} has no text column '{text_col}'; columns found: {', '.join(header)}",
            _semicolon_hint(header) or "pass the right one with --text-col NAME",
        )
    if pair_col is not None and pair_col not in header:
        raise InputError(
            f"{path} has no text pair column '{pair_col}'; columns found: {', '.join(header)}",
            "pass the column of each row's second text with --text-pair-col NAME",
        )
    if id_col is not None and id_col not in header:
        raise InputError(
            f"{path} has no id column '{id_col}'; columns found: {', '.join(header)}",
            "pass the right one with --id-col NAME, or leave it out to number the rows",
        )
    return header


def _drop_empty(
    rows,
    lines,
    text_index: int,
    path: Path,
    text_col: str,
    skip_empty: bool,
    pair_index=None,
    pair_col: str | None = None,
):
    """Rows kept, their lines, their data row numbers (0-based, in the file) and the skipped ones.

    With a pair column, a row whose second text is empty is treated exactly like an empty text."""
    numbers = list(range(len(rows)))
    columns = [(text_index, text_col)] + ([(pair_index, pair_col)] if pair_index is not None else [])
    empty = [number for number, row in enumerate(rows) if any(not row[index].strip() for index, _ in columns)]
    if not empty:
        return rows, lines, numbers, []
    if not skip_empty:
        shown = ", ".join(f"row {row} (line {lines[row]})" for row in empty[:10])
        more = f" and {len(empty) - 10} more" if len(empty) > 10 else ""
        named = " or ".join(f"'{name}'" for _, name in columns)
        raise InputError(
            f"{path}: {len(empty)} empty or whitespace-only text(s) in column {named}: {shown}{more}",
            "fill them in, or pass --skip-empty to leave them out",
        )
    dropped = set(empty)
    keep = [index for index in numbers if index not in dropped]
    if not keep:
        raise InputError(f"{path}: every text in column '{text_col}' is empty")
    return [rows[i] for i in keep], [lines[i] for i in keep], keep, empty


def _ids(rows, lines, numbers, header, path: Path, id_col: str | None) -> list[str]:
    if id_col is None:
        return [str(number) for number in numbers]  # the data row number in the file, skipped rows counted
    id_index = header.index(id_col)
    ids = [row[id_index].strip() for row in rows]
    seen: dict[str, int] = {}
    for position, value in enumerate(ids):
        if not value:
            raise InputError(
                f"{path}: row {numbers[position]} (line {lines[position]}) has an empty id in column '{id_col}'"
            )
        if value in seen:
            raise InputError(
                f"{path}: id '{value}' appears twice in column '{id_col}' "
                f"(line {lines[seen[value]]} and line {lines[position]})",
                "ids must be unique; drop --id-col to number the rows instead",
            )
        seen[value] = position
    return ids


def _labels_and_split(rows, header, text_col, id_col, markers, pair_col=None):
    split = None
    labels: dict[str, LabelColumn] = {}
    for position, name in enumerate(header):
        if name in (text_col, id_col, pair_col):
            continue
        values = [row[position] for row in rows]
        if name == "split":
            split = [value.strip().lower() for value in values]
            continue
        labels[name] = _label_column(name, values, markers)
    return labels, split


def _label_notes(labels: dict[str, LabelColumn]) -> list[str]:
    notes = []
    for column in labels.values():
        if column.missing:
            counts = ", ".join(
                f"{value!r} {count}" if value else f"empty {count}" for value, count in column.missing.items()
            )
            notes.append(f"label '{column.name}': {column.n_missing} row(s) missing ({counts})")
        if column.looks_continuous:
            notes.append(
                f"label '{column.name}' looks continuous ({len(column.names)} distinct numbers): "
                "probing it as classes needs --bins N, or a regression probe"
            )
    return notes


def read_corpus(
    path: str | Path,
    text_col: str = "text",
    id_col: str | None = None,
    skip_empty: bool = False,
    encoding: str = "utf-8",
    sep: str | None = None,
    missing_labels: str | None = "empty",
    pair_col: str | None = None,
) -> Corpus:
    """Read and validate a corpus file; every column but text/id/split becomes a candidate label.

    Without ``id_col`` a row's id is its data row number in the file (0-based, the header not counted,
    rows left out by ``skip_empty`` counted), so ids join back to the original file.
    """
    path = Path(path)
    if not is_stdin(path) and not path.exists():
        raise InputError(f"corpus file {path} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a directory, not a corpus file")
    raw = _read_source(path)
    suffix, data = _unwrap_gzip(raw, path)
    _refuse_other_formats(data, path, suffix)
    notes: list[str] = []
    header, rows, lines = _parse(data, path, suffix, encoding, normalise_sep(sep), notes)
    header = _check_header(header, path, text_col, id_col, pair_col)
    if not rows:
        raise InputError(f"{path} has a header but no rows", "add at least one row of text")
    text_index = header.index(text_col)
    pair_index = header.index(pair_col) if pair_col is not None else None
    rows, lines, numbers, skipped = _drop_empty(
        rows, lines, text_index, path, text_col, skip_empty, pair_index, pair_col
    )
    texts = [row[text_index] for row in rows]
    if all(_NUMBER.match(value) for value in texts):
        raise InputError(
            f"{path}: text column '{text_col}' holds only numbers; columns found: {', '.join(header)}",
            "is --text-col the right column?",
        )
    ids = _ids(rows, lines, numbers, header, path, id_col)
    labels, split = _labels_and_split(rows, header, text_col, id_col, missing_markers(missing_labels), pair_col)
    return Corpus(
        pair_texts=[row[pair_index] for row in rows] if pair_col is not None else None,
        pair_col=pair_col,
        path=path,
        texts=texts,
        ids=ids,
        text_col=text_col,
        id_col=id_col,
        labels=labels,
        split=split,
        sha256=hashlib.sha256(raw).hexdigest(),  # the bytes read, never a second read of the path
        skipped_rows=skipped,
        notes=notes + _label_notes(labels),
    )

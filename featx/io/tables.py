"""A table's header, rows (every cell a string) and each row's first line, from CSV/TSV (the delimiter
sniffed from the first lines unless ``--sep`` says it), JSON Lines or Parquet."""

from __future__ import annotations

import csv
import io
import json
import math
import unicodedata
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..json_fields import shown
from ..safe_files import NESTED, loads_json
from .sources import decode_text, source_name

Table = tuple[list[str], list[list[str]], list[int]]  # header, rows, each row's first line (1-based)

DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}
SEP_ALIASES = {**{name: char for char, name in DELIMITER_NAMES.items()}, "\\t": "\t", "tsv": "\t", "csv": ","}
SNIFF_BYTES = 64 * 1024
SNIFF_ROWS = 50
# A corpus or label file has a text, an id, a split and some label columns: tens, a few hundred at most. Past
# MAX_COLUMNS it is a mistake (a one-line file read with the wrong delimiter, a matrix) or hostile, and the
# per-column work (checking names, typing each label column) would take hours; refused from the header.
MAX_COLUMNS = 10_000


def check_width(width: int, path: Path, where: str = "the header") -> None:
    """Refuse a table wider than ``MAX_COLUMNS``, before its rows are read."""
    if width > MAX_COLUMNS:
        raise InputError(
            f"{path}: {where} has {width:,} columns; featx reads at most {MAX_COLUMNS:,}",
            "keep the text, id, split and label columns only (is the delimiter right? --sep says it)",
        )


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


def _read_delimited(text: str, path: Path, delimiter: str) -> Table:
    # The csv module refuses fields over 128 KiB by default; one text may be a whole document.
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text) + 1))
    try:
        return _parse_delimited(text, path, delimiter)
    finally:
        csv.field_size_limit(limit)


def _parse_delimited(text: str, path: Path, delimiter: str) -> Table:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(
            f"{source_name(path)} is empty", "give a CSV/TSV file with a header row, e.g. text,label"
        ) from None
    except csv.Error as err:
        raise InputError(f"{path}: the header row cannot be parsed ({err})") from None
    check_width(len(header), path)
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


def _read_jsonl(text: str, path: Path) -> Table:
    records: list[dict] = []
    lines: list[int] = []
    header: list[str] = []
    known: set[str] = set()
    # Only \n ends a record: str.splitlines() would also split on \x85 or \u2028, legal inside JSON strings.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        record = _json_record(line, path, number)
        check_width(len(record), path, f"line {number}")
        for key in record:
            if key not in known:
                known.add(key)
                header.append(key)
        check_width(len(header), path, f"the records up to line {number}")
        records.append(record)
        lines.append(number)
    if not records:
        raise InputError(
            f"{source_name(path)} is empty", 'give one JSON object per line, e.g. {"text": ..., "label": ...}'
        )
    try:
        rows = [[_cell(record.get(key)) for key in header] for record in records]
    except RecursionError:
        raise InputError(f"{path}: a value is nested too deeply to read", NESTING_HINT) from None
    return header, rows, lines


NESTING_HINT = "flatten the records: a corpus cell is a text, a label or an id"
JSON_LINES_HINT = 'JSON Lines hold one object per line, e.g. {"text": "...", "label": "..."}'


class _RepeatedKey(ValueError):
    """A JSON object naming one key twice (``{"text": "a", "text": "b"}``)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    record = dict(pairs)  # in C; the loop below only where a key came twice (a million keys: 1.6 s less)
    if len(record) == len(pairs):
        return record
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _RepeatedKey(key)
        seen.add(key)
    return record


def _json_record(line: str, path: Path, number: int) -> dict:
    """One JSON Lines record; nesting deeper than Python's JSON reader follows is one line, not a traceback."""
    try:
        record = loads_json(line, object_pairs_hook=_unique_keys)
    except _RepeatedKey as err:
        raise InputError(
            f"{path}: line {number} names key {shown(str(err))} twice; JSON readers keep one of the two values",
            "give each key once per record",
        ) from None
    except json.JSONDecodeError as err:
        if err.msg == NESTED:  # loads_json's, for json's RecursionError
            raise InputError(f"{path}: line {number} is nested too deeply to read", NESTING_HINT) from None
        raise InputError(f"{path}: line {number} is not valid JSON ({err.msg})", JSON_LINES_HINT) from None
    if not isinstance(record, dict):
        raise InputError(f"{path}: line {number} is not a JSON object", JSON_LINES_HINT)
    return record


def _read_parquet(raw: bytes, path: Path) -> Table:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow", "pip install pyarrow, or convert to CSV") from None
    try:
        source = pq.ParquetFile(io.BytesIO(raw))
        check_width(len(source.schema_arrow.names), path)  # from the footer, before any column is read
        table = source.read()
    except InputError:
        raise
    except Exception as err:  # pyarrow raises several types for bad files
        raise InputError(f"{path} is not a readable Parquet file ({err})") from None
    header = list(table.column_names)
    columns = [[_cell(value) for value in table.column(name).to_pylist()] for name in header]
    rows = [list(values) for values in zip(*columns, strict=False)]
    return header, rows, list(range(1, len(rows) + 1))


class NonTextCell(str):
    """A cell whose value in the file was no text (a JSON number, boolean, object or list; Parquet bytes that
    are not UTF-8): as a label its text is fine, as a text column it is refused (``refuse_non_text``)."""

    kind: str = "value"


class DecodedCell(str):
    """A Parquet ``binary`` cell decoded as UTF-8 (a text column of them gets a note saying so)."""


def _non_text(text: str, kind: str) -> NonTextCell:
    cell = NonTextCell(text)
    cell.kind = kind
    return cell


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return DecodedCell(bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            return _non_text(repr(bytes(value))[:60], "bytes that are not UTF-8")
    kind = {bool: "a boolean", dict: "an object", list: "a list"}.get(type(value), f"a {type(value).__name__}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _non_text(str(value), kind)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return _non_text(str(int(value)), "a number")
    return _non_text(str(value), "a number")


# What a text may hold besides whitespace and still have nothing to read: control characters (``\x01``) and format
# characters (zero-width space U+200B, soft hyphen U+00AD, joiners, a stray byte order mark), which are invisible and
# which BERT-style tokenizers drop. A text of only these gives the model nothing but its special tokens.
INVISIBLE = frozenset(("Cc", "Cf", "Zs", "Zl", "Zp"))


def blank_text(text: str) -> bool:
    """Whether ``text`` is empty for a reader: nothing but whitespace, control and format characters."""
    stripped = text.strip()
    if not stripped or stripped.isprintable():  # one pass in C for every ordinary text
        return not stripped
    return all(unicodedata.category(char) in INVISIBLE for char in stripped)


def refuse_non_text(values: list[str], lines: list[int], path: Path, column: str, notes: list[str]) -> None:
    """Refuse a text column holding values that are not text (naming the rows); a note for UTF-8 bytes decoded."""
    bad = [(line, value.kind) for value, line in zip(values, lines, strict=True) if isinstance(value, NonTextCell)]
    if bad:
        shown = ", ".join(f"line {line} ({kind})" for line, kind in bad[:10])
        more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        raise InputError(
            f"{path}: text column '{column}' holds {len(bad)} value(s) that are not text: {shown}{more}",
            'store every text as a string (JSON "...", Parquet string); numbers, booleans, objects and lists '
            "are not read as text",
        )
    if any(isinstance(value, DecodedCell) for value in values):
        notes.append(f"{source_name(path)}: text column '{column}' is binary: its values were decoded as UTF-8")


def structured_note(path: Path, header: list[str], rows: list[list[str]], skip) -> str | None:
    """A note naming the columns (but ``skip``) with JSON lists or objects among their cells: a label of them is
    their text, one class per distinct list; a ``tokens`` column of lists suggests a file of tokens (word input)."""

    def structured(cell: str) -> bool:
        return isinstance(cell, NonTextCell) and cell.kind in ("a list", "an object")

    names = [
        name
        for position, name in enumerate(header)
        if name not in skip and any(structured(row[position]) for row in rows)
    ]
    if not names:
        return None
    words = (
        "; a file of tokens with word labels? --word-format jsonl reads it as word input" if "tokens" in names else ""
    )
    return (
        f"{source_name(path)}: label column(s) {', '.join(names)} hold JSON lists or objects, each stored as its "
        f"text (one class per distinct value){words}"
    )


def _decode_source(raw: bytes, path: Path, encoding: str, resave: str | None) -> str:
    if not raw.strip():
        raise InputError(
            f"{source_name(path)} is empty", "give a file with a header row, e.g. text,label, and one row per text"
        )
    return decode_text(raw, path, encoding, resave)


def parse_table(
    raw: bytes, path: Path, suffix: str, encoding: str, sep: str | None, notes: list[str], resave: str | None = None
) -> Table:
    """Header, rows and each row's first line, whatever the format (``suffix`` says it; see ``unwrap_gzip``).

    A sniffed delimiter other than the one the name suggests is said in ``notes``; ``resave``: ``decode_text``'s."""
    if suffix == ".parquet":
        return _read_parquet(raw, path)
    text = _decode_source(raw, path, encoding, resave)
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

"""Reading a labelled corpus (CSV, TSV, JSON Lines, Parquet, a SentEval task file) into a validated ``Corpus``.

The format-level reading (the bytes, gzip, decoding, the delimiter, the parsers, label-column typing) is
``featx.io``'s; this module checks what a corpus needs: the header's columns, empty texts (``--skip-empty``),
unique ids, and which columns are labels and which the split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ...io import (
    NUMBER,
    LabelColumn,
    blank_text,
    decode_text,
    is_stdin,
    label_column,
    missing_markers,
    naming_stdin,
    normalise_sep,
    odd_cells,
    parse_table,
    read_source,
    refuse_non_text,
    refuse_other_formats,
    source_name,
    structured_note,
    unwrap_gzip,
)
from ...options import spoken_value
from .column_hints import conllu_hint, text_col_hint
from .senteval import LABEL_COLUMN, check_senteval_options, is_senteval, parse_senteval, split_note

if TYPE_CHECKING:
    from .treebank import WordTable


IN_MEMORY = "<in-memory texts>"  # the corpus name of an in-memory request (featx.embed): no file is read


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
    notes: list[str] = field(default_factory=list)  # what the reader decided, for the user (delimiter, cut texts)
    # what it noticed of the label columns (missing rows, row ids, a continuous number), for the commands that
    # store or probe labels: extract prints them, predict (which reads no label to store) does not
    label_notes: list[str] = field(default_factory=list)
    words: WordTable | None = None  # word inputs (CoNLL-U...): the sentences' words
    pair_texts: list[str] | None = None  # sentence pairs: each row's second text (--text-pair-col)
    pair_col: str | None = None
    columns: dict[str, list[str]] = field(default_factory=dict)  # columns a --template names, as read
    attributes: dict = field(default_factory=dict)  # root attributes the input's preparation adds (the prompts')

    def __len__(self) -> int:
        return len(self.texts)


# --long truncate keeps the first max_length tokens of a text, so the rest is cut off before tokenising: a
# 50 MB text would otherwise be tokenised whole (gigabytes of token objects) only to keep 512 tokens. The cut is
# CHARS_PER_TOKEN characters per token of the maximum: the tokens of common vocabularies are rarely over 20
# characters, so the kept tokens of any ordinary text are exactly those of the whole text; only a text whose
# first max_length tokens average over 64 characters is tokenised differently, and the file stores the cut text,
# which is what was tokenised (its features are a plain forward pass of the stored text).
CHARS_PER_TOKEN = 64
# --long window runs the whole text in windows, so it is cut later: at WINDOW_CHARS_PER_TOKEN characters per token
# of the maximum (131,072 characters for 512 tokens: some 30,000 tokens of English, 80 windows; a long article or
# a chapter). Bounded because a windowed row's states are held whole (tokens x layers x width: 30,000 tokens of a
# 13-layer, 768-wide model take 1.2 GB) and its tokens' windows are placed with token x window arrays.
WINDOW_CHARS_PER_TOKEN = 256


def text_char_limit(max_length: int, window: bool) -> int:
    """The most characters of one text that are tokenised (see ``CHARS_PER_TOKEN``, ``WINDOW_CHARS_PER_TOKEN``)."""
    return (WINDOW_CHARS_PER_TOKEN if window else CHARS_PER_TOKEN) * int(max_length)


def cut_long_texts(corpus: Corpus, max_length: int, window: bool) -> int:
    """Cut every text (both texts of a pair) to ``text_char_limit`` in place, and say so in the corpus's notes;
    the rows cut. Texts within the limit are left exactly as read."""
    limit = text_char_limit(max_length, window)
    rows: set[int] = set()
    for texts in (corpus.texts, corpus.pair_texts or []):
        for row, text in enumerate(texts):
            if len(text) > limit:
                texts[row] = text[:limit]
                rows.add(row)
    if rows:
        per_token = WINDOW_CHARS_PER_TOKEN if window else CHARS_PER_TOKEN
        why = f"{per_token} per token of the {max_length}-token maximum" + (" with --long window" if window else "")
        corpus.notes.append(
            f"{len(rows)} row(s) had a text over {limit:,} characters, cut to that before tokenising ({why}); "
            "the file stores the cut texts"
        )
    return len(rows)


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
            text_col_hint(header),
        )
    if pair_col is not None and pair_col not in header:
        raise InputError(
            f"{path} has no text pair column '{pair_col}'; columns found: {', '.join(header)}",
            "pass the column of each row's second text with "
            + spoken_value(None, "text_pair_col", "NAME", "--text-pair-col"),
        )
    if id_col is not None and id_col not in header:
        raise InputError(
            f"{path} has no id column '{id_col}'; columns found: {', '.join(header)}",
            f"pass the right one with {spoken_value(None, 'id_col', 'NAME', '--id-col')}, or leave it out to number "
            "the rows",
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
    empty = [number for number, row in enumerate(rows) if any(blank_text(row[index]) for index, _ in columns)]
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
        raise InputError(f"{source_name(path)}: every text in column '{text_col}' is empty")
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
                f"{path}: row {numbers[position]} (line {lines[position]}) has an empty id in column '{id_col}'",
                "every row needs an id: fill it in, or drop --id-col to number the rows instead",
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
        labels[name] = label_column(name, values, markers)
    return labels, split


def _label_notes(labels: dict[str, LabelColumn]) -> list[str]:
    notes = []
    for column in labels.values():
        if column.missing:
            counts = ", ".join(
                f"{value!r} {count}" if value else f"empty {count}" for value, count in column.missing.items()
            )
            notes.append(f"label '{column.name}': {column.n_missing} row(s) missing ({counts})")
        if _looks_like_ids(column):
            notes.append(
                f"label '{column.name}' looks like row ids (a distinct whole number on every row): "
                f"pass --id-col {column.name} to name the rows by it; as a label it means nothing to probe"
            )
        elif column.looks_continuous:
            notes.append(
                f"label '{column.name}' looks continuous ({len(column.names)} distinct numbers): "
                "featx probe will fit a regression probe to it (ridge, R²) by itself; "
                "for classes instead, probe it with --task classification --bins N"
            )
        elif odd := ", ".join(f"{value!r} ({count})" for value, count in odd_cells(column.names, column.codes)):
            notes.append(f"label '{column.name}' holds numbers except {odd}: mark those missing (--missing-labels)")
    return notes


def _looks_like_ids(column: LabelColumn) -> bool:
    """A column named like an id (id, idx, pair_id, sentenceID...) holding a distinct whole number on every row."""
    name = column.name.strip().lower()
    named = name in ("id", "idx", "index") or name.endswith(("_id", "-id", " id")) or column.name.endswith("ID")
    every_row_distinct = column.n_missing == 0 and len(column.names) == len(column.codes) > 1
    return named and every_row_distinct and column.numeric and all(float(v).is_integer() for v in column.names)


def _kept_columns(rows, header: list[str], names: tuple[str, ...], path: Path) -> dict[str, list[str]]:
    """The cells of the columns a ``--template`` names, as read; a clear error for a column the file lacks."""
    missing = [name for name in names if name not in header]
    if missing:
        raise InputError(
            f"--template names column(s) {', '.join(missing)} that {path} lacks; columns found: {', '.join(header)}",
            "name columns of the corpus in the template ({text} is the --text-col column)",
        )
    return {name: [row[header.index(name)] for row in rows] for name in names}


def _refuse_non_texts(rows, lines, path: Path, columns, notes: list[str]) -> None:
    """The text (and pair) columns hold text: JSON numbers, booleans, objects, lists refused (``refuse_non_text``)."""
    for index, name in columns:
        if index is not None:
            refuse_non_text([row[index] for row in rows], lines, path, str(name), notes)


def _refuse_numbers_only(rows, path: Path, header: list[str], columns) -> None:
    """A text (or pair) column of numbers only is a wrong column name (a score, an id), not texts to encode."""
    for index, name, flag in columns:
        if index is not None and all(NUMBER.match(row[index]) for row in rows):
            what = "text column" if flag == "--text-col" else "text pair column"
            raise InputError(
                f"{path}: {what} '{name}' holds only numbers; columns found: {', '.join(header)}",
                f"is {flag} the right column?",
            )


CORPUS_HINT = "a corpus is a table of texts: CSV, TSV, JSON Lines or Parquet (or a SentEval task file)"


def _read_bytes(path: Path, max_bytes: int | None, limit_flag: str | None = None) -> tuple[bytes, str, bytes]:
    """The file's bytes as read (the fingerprint's), the suffix that says the format, and the bytes to parse."""
    if not is_stdin(path) and not path.exists():
        raise InputError(f"corpus file {path} does not exist", f"check the path; {CORPUS_HINT}")
    if path.is_dir():
        raise InputError(f"{path} is a directory, not a corpus file", f"name a file inside it; {CORPUS_HINT}")
    raw = read_source(path)
    suffix, data = unwrap_gzip(raw, path, max_bytes, limit_flag)
    refuse_other_formats(data, path, suffix)
    return raw, suffix, data


def _senteval_corpus(
    raw: bytes, data: bytes, path: Path, encoding: str, skip_empty: bool, missing: str | None, keep_cols
) -> Corpus:
    """A SentEval task file (``senteval.py``) as a corpus: text, ``label`` and split; ids are line numbers
    from 0, as a CSV of the same rows numbers them."""
    rows = parse_senteval(decode_text(data, path, encoding), path, skip_empty)
    labels = {LABEL_COLUMN: label_column(LABEL_COLUMN, rows.labels, missing_markers(missing))}
    return Corpus(
        path=path,
        texts=rows.texts,
        ids=[str(line - 1) for line in rows.lines],
        text_col="text",
        id_col=None,
        labels=labels,
        split=rows.split,
        sha256=hashlib.sha256(raw).hexdigest(),
        skipped_rows=rows.skipped,
        notes=[split_note(path, rows)],
        label_notes=_label_notes(labels),
        columns={LABEL_COLUMN: rows.labels} if LABEL_COLUMN in keep_cols else {},
    )


def _id_column(header: list[str], id_col: str | None, default: str | None, texts: tuple) -> str | None:
    """``id_col``, else ``default`` where the header has it as a column other than the texts', else None."""
    if id_col is None and default and default in header and default not in texts:
        return default
    return id_col


@contextmanager
def _treebank_hint(data: bytes) -> Iterator[None]:
    """A table's refusal of ``data`` that looks like a CoNLL-U treebank (one named ``.txt``: not a table, whatever
    the table's refusal says) hinted at ``--word-format conllu`` (``column_hints.conllu_hint``)."""
    try:
        yield
    except InputError as err:
        treebank = conllu_hint(data)
        if treebank is None:
            raise
        raise InputError(err.message, treebank) from None


@naming_stdin
def read_corpus(
    path: str | Path,
    text_col: str = "text",
    id_col: str | None = None,
    skip_empty: bool = False,
    encoding: str = "utf-8",
    sep: str | None = None,
    missing_labels: str | None = "empty",
    pair_col: str | None = None,
    max_bytes: int | None = None,
    keep_cols: tuple[str, ...] = (),
    default_id_col: str | None = None,
    limit_flag: str | None = None,
) -> Corpus:
    """Read and validate a corpus file; every column but text/id/split becomes a candidate label. Without ``id_col``
    a row's id is ``default_id_col``'s value where the table has it (featx predict: the bundle's id column), else its
    data row number (0-based, the header not counted, rows left out by ``skip_empty`` counted), which joins back to
    the file. A ``.gz`` may inflate to ``max_bytes`` (None: ``featx.io``'s limits; ``limit_flag``: extract's option)."""
    path = Path(path)
    raw, suffix, data = _read_bytes(path, max_bytes, limit_flag)
    if is_senteval(data, suffix):
        check_senteval_options(path, text_col, id_col, pair_col, sep, keep_cols)
        return _senteval_corpus(raw, data, path, encoding, skip_empty, missing_labels, keep_cols)
    notes: list[str] = []
    with _treebank_hint(data):
        header, rows, lines = parse_table(data, path, suffix, encoding, normalise_sep(sep), notes)
        id_col = _id_column(header, id_col, default_id_col, (text_col, pair_col))
        header = _check_header(header, path, text_col, id_col, pair_col)
    if not rows:
        raise InputError(f"{source_name(path)} has a header but no rows", "add at least one row of text")
    text_index = header.index(text_col)
    pair_index = header.index(pair_col) if pair_col is not None else None
    rows, lines, numbers, skipped = _drop_empty(
        rows, lines, text_index, path, text_col, skip_empty, pair_index, pair_col
    )
    texts = [row[text_index] for row in rows]
    _refuse_non_texts(rows, lines, path, [(text_index, text_col), (pair_index, pair_col)], notes)
    _refuse_numbers_only(
        rows, path, header, [(text_index, text_col, "--text-col"), (pair_index, pair_col, "--text-pair-col")]
    )
    ids = _ids(rows, lines, numbers, header, path, id_col)
    labels, split = _labels_and_split(rows, header, text_col, id_col, missing_markers(missing_labels), pair_col)
    notes += filter(None, [structured_note(path, header, rows, (text_col, id_col, pair_col, "split"))])
    return Corpus(
        columns=_kept_columns(rows, header, keep_cols, path),
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
        notes=notes,
        label_notes=_label_notes(labels),
    )

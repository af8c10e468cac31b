"""Word inputs: CoNLL-U treebanks, CoNLL-style column files and JSON Lines of tokens, read into a
``Corpus`` of sentences whose ``words`` (a ``WordTable``) carry the word-level labels.

* CoNLL-U (``.conllu``, or ``--word-format conllu``) through the ``conllu`` package: multi-word token ranges
  (``3-4``) are not words (their parts are), empty nodes (``8.1``) are skipped, ``# text`` is the row's text
  (else the words joined by spaces) and ``# sent_id`` its id. Word labels: ``upos``, ``xpos``, ``deprel``
  and one ``feats.<Feature>`` column per feature seen (``feats.Number``...); ``_`` is missing. The head
  becomes the 0-based index of the head word within the sentence (``HEAD_ROOT`` for 0, ``HEAD_UNKNOWN`` for ``_``).
* Column files (``--columns form,upos,ner``): one word per line, fields split by tabs (else whitespace),
  a blank line between sentences, ``-DOCSTART-`` lines skipped; ``form`` is required, ``_`` skips a field,
  ``head`` is read like CoNLL-U's (1-based, 0 = root).
* JSON Lines (``--word-format jsonl``, or a ``.jsonl`` file whose first object has a ``tokens`` list): one
  ``{"tokens": [...], ...}`` per sentence; a list of the same length is a word label (``head`` as above),
  a scalar a sentence label (``id``/``sent_id``, ``text`` and ``split`` are what they say).

Several files make one corpus; each sentence's split is the one named in its file's name (train, dev or
test), else the file's stem. Everything is checked here, before the model is loaded: a broken file, a
ragged label list or an empty sentence is an ``InputError`` naming the file and the line or sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...checks import parse_whole
from ...errors import InputError
from ...io import CONLLU_SUFFIXES, LabelColumn
from ...options import spoken_value
from ...safe_files import NESTED, loads_json
from ...store import HEAD_ROOT, HEAD_UNKNOWN

WORD_FORMATS = ("conllu", "columns", "jsonl")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
SPLIT_NAMES = re.compile(r"(?<![a-z])(train|dev|test)(?![a-z])")
HEAD = "head"
SENTENCE_COMMENT = re.compile(r"#\s*(sent_id|text)\s*=")  # a block with one of these is a sentence
HEAD_HINT = "HEAD is the number of the word's head in its sentence (1, 2, ...), 0 for the root, _ when unknown"


@dataclass
class Sentence:
    """One sentence as read: its words, word labels (strings, "" = missing), head indices, text and id."""

    forms: list[str]
    labels: dict[str, list[str]] = field(default_factory=dict)
    heads: list[int] | None = None  # 0-based index of each word's head in the sentence, or HEAD_ROOT/HEAD_UNKNOWN
    text: str | None = None
    sent_id: str | None = None
    sentence_labels: dict[str, str] = field(default_factory=dict)
    where: str = ""  # "file, line N" for messages
    roots: int = 0  # words whose head is given as 0 (the root)


@dataclass
class WordTable:
    """Every word of a corpus, flat: row ``s`` owns ``offsets[s]:offsets[s+1]`` (what ``store/words.py`` writes)."""

    offsets: np.ndarray  # (n_rows + 1,) int64
    forms: list[str]
    heads: np.ndarray  # (n_words,) int32
    labels: dict[str, LabelColumn]

    def sentence(self, row: int) -> list[str]:
        return self.forms[int(self.offsets[row]) : int(self.offsets[row + 1])]

    @property
    def sentences(self) -> list[list[str]]:
        return [self.sentence(row) for row in range(len(self.offsets) - 1)]


def word_format(corpus, word_format_option: str | None, columns: str | None) -> str | None:
    """The word format of an input (``conllu``, ``columns``, ``jsonl``), or None for a table of texts."""
    if word_format_option:
        return word_format_option
    suffix = Path(str(corpus)).suffix.lower()
    if suffix in CONLLU_SUFFIXES:
        return "conllu"
    if columns:
        return "columns"
    if suffix in JSONL_SUFFIXES and _first_object_has_tokens(Path(str(corpus))):
        return "jsonl"
    return None


def _first_object_has_tokens(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    first = loads_json(line)
                    return isinstance(first, dict) and isinstance(first.get("tokens"), list) and "text" not in first
    except (OSError, ValueError, RecursionError):  # not a file of tokens: the table reader says what is wrong
        return False
    return False


def parse_word_poolings(spec) -> list[str]:
    """``--word-pooling``: a comma list of first, last, mean (``all`` for the three)."""
    from ...selection import WORD_POOLINGS

    text = ",".join(spec) if isinstance(spec, (list, tuple)) else str(spec or "").strip().lower()
    names = list(WORD_POOLINGS) if text == "all" else [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in WORD_POOLINGS]
    if not names or unknown or len(set(names)) != len(names):
        raise InputError(
            f"{spoken_value(None, 'word_pooling', spec, '--word-pooling', shown=repr(spec))} is not understood",
            f"use a comma list of {', '.join(WORD_POOLINGS)} (default: all three), e.g. first,mean",
        )
    return names


def check_word_options(config) -> str | None:
    """The word format of an ``ExtractConfig`` (None for a table of texts), its word options checked."""
    fmt = word_format(config.corpus, config.word_format, config.columns) if config.corpus is not None else None
    if config.word_format is not None and config.word_format not in WORD_FORMATS:
        raise InputError(
            f"{spoken_value(config, 'word_format', fmt_ := config.word_format, shown=repr(fmt_))} is not understood",
            'use conllu, columns (with --columns) or jsonl (one {"tokens": [...]} per line)',
        )
    if fmt is None:
        if config.more_corpora:
            raise InputError(
                "several input files are read only as word inputs (CoNLL-U, --columns, JSON Lines of tokens)",
                "give one corpus table, or name the word format with --word-format",
            )
        return None
    _check_same_format(config, fmt)
    if fmt == "columns":
        parse_columns(config.columns)
    elif config.columns:
        raise InputError(f"--columns applies to column files, not to {fmt} input", "leave --columns out")
    parse_word_poolings(config.word_pooling)
    check_no_table_columns(fmt, None if config.text_col == "text" else config.text_col, config.id_col)
    if config.shards is not None or config.shard_index is not None:
        raise InputError("word inputs cannot be extracted in shards yet", "leave out --shards/--shard-index")
    return fmt


def check_no_table_columns(fmt: str, text_col: str | None, id_col: str | None) -> None:
    """Refuse ``--text-col``/``--id-col`` on a word input, which has no table columns to name: its words and
    sentence ids come from the file itself, and an option that would be ignored is a mistake to report."""
    given = {"conllu": "their '# sent_id' comments, else ", "jsonl": 'their "id" fields, else '}.get(fmt, "")
    for flag, value, what in (
        ("--text-col", text_col, "its words are the file's tokens"),
        ("--id-col", id_col, f"its sentences are named by {given}FILE-N (the file's stem, the sentence number)"),
    ):
        if value is not None:
            raise InputError(
                f"{flag} {value!r} names a column of a table of texts; this is {fmt} input: {what}",
                f"leave {flag} out",
            )


def _check_same_format(config, fmt: str) -> None:
    """Several input files without --word-format: each must look like the first (no .conllu with a .csv)."""
    if config.word_format or not config.more_corpora:
        return
    for other in config.more_corpora:
        found = word_format(other, None, config.columns) if Path(str(other)).is_file() else fmt
        if found != fmt:
            raise InputError(
                f"input files mix formats: {Path(str(config.corpus)).name} is {fmt}, "
                f"{Path(str(other)).name} is {found or 'a table of texts'}",
                "give files of one format in one extract (or name it with --word-format)",
            )


def split_of(path: Path) -> str:
    """The split a file's name gives its sentences: train, dev or test when named, else the file's stem."""
    found = SPLIT_NAMES.search(path.name.lower())
    return found.group(1) if found else path.stem


def parse_columns(spec: str | None) -> list[str]:
    names = [name.strip() for name in str(spec or "").split(",")]
    given = spoken_value(None, "columns", spec, "--columns", shown=repr(spec))  # --columns 'x', columns='x'
    if not spec or "form" not in names or any(not name for name in names):
        raise InputError(
            f"{given} must name every field of a line, one of them 'form'",
            f"e.g. {spoken_value(None, 'columns', 'form,upos,ner', '--columns')} (use _ for a field to skip)",
        )
    named = [name for name in names if name != "_"]
    if len(set(named)) != len(named):
        raise InputError(f"{given} names a field twice", "give every field its own name")
    return names


# -- CoNLL-U ---------------------------------------------------------------------------------------
def _blocks(text: str):
    """``(first line number, lines)`` of each blank-line separated block."""
    block: list[str] = []
    first = 0
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if line.strip():
            if not block:
                first = number
            block.append(line)
        elif block:
            yield first, block
            block = []
    if block:
        yield first, block


def _conllu_failure(path: Path, first: int, lines: list[str], err: Exception) -> InputError:
    """The error of a block ``conllu`` refused, naming the line it refused."""
    import conllu

    for offset, line in enumerate(lines):
        if line.startswith("#"):
            continue
        try:
            conllu.parse(line + "\n\n")
        except Exception as line_error:  # noqa: BLE001 - conllu raises ParseException and others
            return InputError(
                f"{path}, line {first + offset}: not valid CoNLL-U ({line_error})",
                "every word line has 10 tab-separated fields: ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC",
            )
    return InputError(f"{path}, line {first}: the sentence is not valid CoNLL-U ({err})")


def _conllu_sentence(path: Path, first: int, lines: list[str]) -> Sentence:
    import conllu

    bad = next(
        (offset for offset, line in enumerate(lines) if not line.startswith("#") and line.count("\t") != 9), None
    )
    if bad is not None:
        raise InputError(
            f"{path}, line {first + bad}: a CoNLL-U word line needs 10 tab-separated fields, "
            f"this one has {lines[bad].count(chr(9)) + 1}",
            "ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC, '_' for an empty field",
        )
    try:
        (tokens,) = conllu.parse("\n".join(lines) + "\n\n")
    except Exception as err:  # noqa: BLE001
        raise _conllu_failure(path, first, lines, err) from None
    token_lines = [first + offset for offset, line in enumerate(lines) if not line.startswith("#")]
    kept = [index for index, token in enumerate(tokens) if isinstance(token["id"], int)]
    words = [tokens[index] for index in kept]  # no ranges (3-4), no empty nodes (8.1)
    where = f"{path}, line {first}"
    _check_word_ids([token["id"] for token in words], [token_lines[index] for index in kept], path)
    _check_ranges_and_feats(tokens, token_lines, len(words), path)
    sentence = Sentence(
        [str(token["form"]) for token in words],
        text=tokens.metadata.get("text"),
        sent_id=tokens.metadata.get("sent_id"),
        where=where,
    )
    sentence.labels = {name: [_value(token[name]) for token in words] for name in ("upos", "xpos", "deprel")}
    for name in sorted({key for token in words for key in (token["feats"] or {})}):
        sentence.labels[f"feats.{name}"] = [_value((token["feats"] or {}).get(name)) for token in words]
    sentence.heads = [_head(tokens[index]["head"], len(words), f"{path}, line {token_lines[index]}") for index in kept]
    sentence.roots = sum(1 for token in words if str(token["head"]) == "0")
    return sentence


def _check_word_ids(ids: list[int], lines: list[int], path: Path) -> None:
    """Word ids run 1, 2, 3...; the first one out of order is named by its line (most often a word 1: the next
    sentence, with no blank line before it)."""
    for expected, (ident, line) in enumerate(zip(ids, lines, strict=True), start=1):
        if ident != expected:
            restart = ident == 1
            raise InputError(
                f"{path}, line {line}: word id {ident} where {expected} comes next"
                + (" (a new sentence with no blank line before it?)" if restart else ""),
                "end every sentence with a blank line" if restart else "number a sentence's words 1, 2, 3...",
            )


def _check_ranges_and_feats(tokens, token_lines: list[int], n_words: int, path: Path) -> None:
    """A multiword token's range lies within the sentence; FEATS is ``_`` or ``Feature=Value`` pairs."""
    for token, number in zip(tokens, token_lines, strict=False):
        ident = token["id"]
        if isinstance(ident, tuple) and ident[1] == "-" and not 1 <= ident[0] <= ident[2] <= n_words:
            raise InputError(
                f"{path}, line {number}: multiword token {ident[0]}-{ident[2]} goes beyond the sentence's "
                f"{n_words} words",
                "a range names words of its own sentence, e.g. 3-4 for words 3 and 4",
            )
        bare = [name for name, value in (token["feats"] or {}).items() if value in (None, "")]
        if bare:
            raise InputError(
                f"{path}, line {number}: FEATS '{bare[0]}' has no '=' (features are Feature=Value, split by '|')",
                "e.g. Number=Sing|Person=3, or _ for none",
            )


def tree_problem(sentence: Sentence) -> str | None:
    """What is wrong with a sentence's heads as a tree: a cycle is an error; several roots only a warning."""
    heads = sentence.heads or []
    for start in range(len(heads)):
        seen, word = set(), start
        while word >= 0 and word not in seen:
            seen.add(word)
            word = heads[word]
        if word >= 0:
            return f"the heads form a cycle through word {word + 1}"
    return None


def _value(value) -> str:
    return "" if value is None or value == "_" else str(value)


def _head(value, n_words: int, where: str) -> int:
    """A CoNLL head (1-based, 0 = root, '_' unknown) as the 0-based index in the sentence, else HEAD_ROOT/_UNKNOWN."""
    if value is None or value == "_" or value == "":
        return HEAD_UNKNOWN
    head = parse_whole(value.strip(), signed=True) if isinstance(value, str) else value if type(value) is int else None
    if head is None:
        raise InputError(f"{where}: head '{value}' is not a word number", HEAD_HINT)
    if not 0 <= head <= n_words:
        raise InputError(f"{where}: head {head} is outside the sentence of {n_words} words", HEAD_HINT)
    return head - 1 if head else HEAD_ROOT


def read_conllu(path: Path, text: str) -> list[Sentence]:
    sentences = []
    for first, lines in _blocks(text):
        if all(line.startswith("#") and not SENTENCE_COMMENT.match(line) for line in lines):
            continue  # comments between sentences (# newdoc, notes): not a sentence
        sentences.append(_conllu_sentence(path, first, lines))  # one without words: word_corpus refuses it
    return sentences


# -- column files ----------------------------------------------------------------------------------
def read_columns(path: Path, text: str, names: list[str]) -> list[Sentence]:
    sentences = []
    for first, lines in _blocks(text):
        rows = [line.split("\t") if "\t" in line else line.split() for line in lines]
        keep = [(offset, row) for offset, row in enumerate(rows) if row and row[0] != "-DOCSTART-"]
        if not keep:
            continue
        for offset, row in keep:
            if len(row) != len(names):
                raise InputError(
                    f"{path}, line {first + offset}: {len(row)} fields, --columns names {len(names)}",
                    f"--columns {','.join(names)} must name every field of a line",
                )
        where = f"{path}, line {first}"
        fields = {name: [row[i].strip() for _, row in keep] for i, name in enumerate(names) if name != "_"}
        sentence = Sentence(fields.pop("form"), where=where)
        heads = fields.pop(HEAD, None)
        sentence.heads = [_head(value, len(sentence.forms), where) for value in heads] if heads else None
        sentence.labels = {name: [_value(value) for value in values] for name, values in fields.items()}
        sentences.append(sentence)
    return sentences


# -- JSON Lines ------------------------------------------------------------------------------------
def _json_sentence(path: Path, number: int, record) -> Sentence:
    where = f"{path}, line {number}"
    tokens = record.get("tokens") if isinstance(record, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
        raise InputError(
            f'{where}: each line needs a "tokens" list of strings',
            'one sentence per line: {"tokens": ["The", "cat"], "upos": ["DET", "NOUN"]}',
        )
    sentence = Sentence(list(tokens), where=where)
    for key, value in record.items():
        if key == "tokens":
            continue
        if isinstance(value, list):
            if len(value) != len(tokens):
                raise InputError(
                    f'{where}: "{key}" has {len(value)} values for {len(tokens)} tokens',
                    "a word label gives one value per token (null where missing)",
                )
            if key == HEAD:
                sentence.heads = [_head(item, len(tokens), where) for item in value]
            else:
                sentence.labels[key] = [_value(item) for item in value]
        elif key in ("id", "sent_id"):
            sentence.sent_id = None if value is None else str(value)
        elif key == "text":
            sentence.text = None if value is None else str(value)
        else:
            sentence.sentence_labels[key] = _value(value)
    return sentence


def read_token_jsonl(path: Path, text: str) -> list[Sentence]:
    sentences = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = loads_json(line)
        except ValueError as err:
            if getattr(err, "msg", None) == NESTED:  # loads_json's, for json's RecursionError
                raise InputError(f"{path}, line {number}: nested too deeply to read", "flatten the records") from None
            raise InputError(f"{path}, line {number}: not valid JSON ({err})") from None
        sentences.append(_json_sentence(path, number, record))
    return sentences

"""SentEval probing tasks (Conneau et al. 2018): one file per task, one line per row,
``tr|va|te <TAB> label <TAB> sentence``.

A task file is read as a table of texts (``corpus.read_corpus`` hands it here): the text is the sentence,
the label column is ``label``, the split is ``train`` (tr), ``dev`` (va) or ``test`` (te), and a row's id is
its 0-based line number, so the same rows written as a CSV (``text,label,split``) give the same features.

A file is a task file by its content: its first line is a split tag (``tr``, ``va`` or ``te``), a tab, a
label, a tab and a sentence (exactly three tab-separated fields), and its name does not say another table
format (``.csv``, ``.json``, ``.jsonl``, ``.ndjson``, ``.parquet``). ``senteval_tasks`` lists the task files
of a folder (SentEval's ``data/probing``: ``bigram_shift.txt``, ``tree_depth.txt``, ...). Nothing is
downloaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from ...io import blank_text
from ...json_fields import shown

SPLIT_TAGS = {"tr": "train", "va": "dev", "te": "test"}
TASK_SUFFIX = ".txt"
LABEL_COLUMN = "label"
OTHER_TABLE_SUFFIXES = (".csv", ".json", ".jsonl", ".ndjson", ".parquet")
FIRST_LINE = re.compile(rb"(tr|va|te)\t[^\t\r\n]*\t[^\t\r\n]*\r?")
LINE_FORM = "'tr|va|te<TAB>label<TAB>sentence'"
LINE_HINT = f"each line of a SentEval task file is {LINE_FORM}; tr, va and te are the train, dev and test rows"


def is_senteval(data: bytes, suffix: str) -> bool:
    """Whether ``data`` (a file's bytes, its name ending in ``suffix``) is a SentEval task file (see above)."""
    if suffix in OTHER_TABLE_SUFFIXES:
        return False
    first = data.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    return FIRST_LINE.fullmatch(first) is not None


@dataclass
class SentEvalRows:
    """The rows of one task file, in file order: sentence, label and split of each, and its line number."""

    texts: list[str]
    labels: list[str]
    split: list[str]
    lines: list[int]  # 1-based line numbers (ids are these minus one)
    skipped: list[int]  # 0-based row numbers of empty sentences left out (``skip_empty``)


def parse_senteval(text: str, path: Path, skip_empty: bool = False) -> SentEvalRows:
    """Every line of a task file checked: three tab-separated fields, a known split tag, a sentence (an empty
    one refused, or left out with ``skip_empty``). A final newline ends the last line; any other blank line is
    refused, naming its line."""
    rows = SentEvalRows([], [], [], [], [])
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        fields = line.removesuffix("\r").split("\t")
        if len(fields) != 3:
            what = "is empty" if not line.strip() else f"has {len(fields)} tab-separated field(s), not 3"
            raise InputError(f"{path}: line {number} {what}", LINE_HINT)
        tag, label, sentence = fields
        if tag not in SPLIT_TAGS:
            raise InputError(f"{path}: line {number} has the unknown split tag {shown(tag)}", LINE_HINT)
        if blank_text(sentence):
            if not skip_empty:
                raise InputError(
                    f"{path}: line {number} has an empty sentence", "fill it in, or pass --skip-empty to leave it out"
                )
            rows.skipped.append(number - 1)
            continue
        rows.texts.append(sentence)
        rows.labels.append(label)
        rows.split.append(SPLIT_TAGS[tag])
        rows.lines.append(number)
    if not rows.texts:
        raise InputError(f"{path}: every sentence is empty", LINE_HINT)
    return rows


def check_senteval_options(
    path: Path, text_col: str, id_col: str | None, pair_col: str | None, sep: str | None, keep_cols: tuple[str, ...]
) -> None:
    """Refuse the table options a task file has no use for (its columns are fixed: text, label, split)."""
    named = [
        (flag, value)
        for flag, value, unused in (
            ("--text-col", text_col, text_col == "text"),
            ("--id-col", id_col, id_col is None),
            ("--text-pair-col", pair_col, pair_col is None),
            ("--sep", sep, sep in (None, "\t", "tab", "\\t")),
        )
        if not unused
    ]
    if named:
        flag, value = named[0]
        raise InputError(
            f"{path} is a SentEval task file ({LINE_FORM}); {flag} {value!r} names nothing in it",
            f"leave {flag} out: the sentence is the text, the row's line number its id",
        )
    other = [name for name in keep_cols if name != LABEL_COLUMN]
    if other:
        raise InputError(
            f"--template names column(s) {', '.join(other)} that the SentEval task file {path} lacks",
            "a task file has {text} (the sentence) and {label}",
        )


def split_note(path: Path, rows: SentEvalRows) -> str:
    """What the reader made of a task file, for the user."""
    counts = {name: rows.split.count(name) for name in SPLIT_TAGS.values()}
    shown = ", ".join(f"{count} {name}" for name, count in counts.items())
    return f"{path.name}: read as a SentEval task file (tr/va/te -> train/dev/test): {shown} rows"


def senteval_tasks(folder: str | Path) -> list[tuple[str, Path]]:
    """The SentEval task files of a local folder as ``(name, path)``, one corpus per task (name: the file's
    stem), sorted by name. Every ``*.txt`` file there must be a task file: an empty one, or one whose first
    line is not a SentEval line, is an ``InputError`` (so a typo never silently drops a task)."""
    folder = Path(folder)
    if not folder.exists():
        raise InputError(f"SentEval folder {folder} does not exist", "give the folder of the task files (*.txt)")
    if not folder.is_dir():
        raise InputError(
            f"{folder} is a file, not a folder of SentEval tasks",
            "give the folder of the task files; a single task file is read as a corpus as it is",
        )
    tasks = []
    for path in sorted(folder.glob(f"*{TASK_SUFFIX}")):
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
        if not head.strip():
            raise InputError(f"SentEval task file {path} is empty", f"fill it ({LINE_FORM} per line) or remove it")
        if not is_senteval(head, TASK_SUFFIX):
            raise InputError(
                f"{path} is not a SentEval task file: its line 1 is not {LINE_FORM}",
                f"move the files that are not tasks out of {folder}",
            )
        tasks.append((path.stem, path))
    if not tasks:
        raise InputError(
            f"{folder} holds no SentEval task files (*{TASK_SUFFIX})",
            "give the folder of SentEval's probing data (data/probing: bigram_shift.txt, tree_depth.txt, ...)",
        )
    return tasks

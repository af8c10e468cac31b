"""The hint of a ``--text-col`` that names no column of the corpus: the pair of text columns or the text column
a known corpus spells (SICK's ``sentence_A``, SNLI's ``premise``...), worded for the caller: ``--text-col X`` on the
command line, ``text_col='X'`` from Python (``featx.options.spoken_value``); and the hint for a CoNLL-U file read
as a table (``conllu_hint``: one named ``.txt``, say)."""

from __future__ import annotations

from ...options import on_command_line, spoken_value

# Column names of sentence-pair corpora (SICK, SNLI/MNLI, GLUE's pairs, QQP) and of one text per row, for the
# hint when --text-col names no column; the file's own spelling is what the hint shows.
PAIR_COLUMNS = (
    ("sentence_a", "sentence_b"),
    ("sentence1", "sentence2"),
    ("sentence_1", "sentence_2"),
    ("premise", "hypothesis"),
    ("text_a", "text_b"),
    ("text1", "text2"),
    ("question1", "question2"),
    ("question", "sentence"),
    ("query", "passage"),
)
TEXT_COLUMNS = ("sentence", "review", "content", "document", "body", "tweet", "utterance", "question", "comment")


def _column(value: str, pair: bool = False) -> str:
    """``--text-col VALUE`` on the command line, ``text_col='VALUE'`` to a Python caller (``spoken_value``)."""
    name = ("text_col", "text_pair_col")[pair]
    return spoken_value(None, name, value, "--" + name.replace("_", "-"))


def text_col_hint(header: list[str]) -> str:
    """What to pass when ``--text-col`` names no column: a semicolon-separated file, a known pair of text
    columns, a known text column, or just the option."""
    if len(header) == 1 and header[0].count(";") >= 1:
        return "the header looks semicolon-separated; save the file as comma- or tab-separated (.csv/.tsv)"
    spelled = {name.lower(): name for name in header}
    for first, second in PAIR_COLUMNS:
        if first in spelled and second in spelled:
            both = f"{_column(spelled[first])}{' ' if on_command_line() else ', '}{_column(spelled[second], True)}"
            return f"sentence pairs? pass {both}; for one text per row, {_column('NAME')}"
    known = [spelled[name] for name in TEXT_COLUMNS if name in spelled]
    if known:
        return f"pass the right one with {_column('NAME')} ({_column(known[0])}?)"
    return f"pass the right one with {_column('NAME')}"


__all__ = ["PAIR_COLUMNS", "TEXT_COLUMNS", "text_col_hint"]


CONLLU_LINES = 40  # the first non-blank lines looked at to tell a CoNLL-U treebank


def conllu_hint(data: bytes) -> str | None:
    """How to read ``data`` as words, when it looks like a CoNLL-U treebank (``# sent_id``/``# text =`` comment
    lines, or word lines of 10 tab-separated fields numbered from 1) that was read as a table of texts: a
    ``.txt`` or ``.csv`` suffix and no ``--word-format``. None for anything else."""
    lines = [line for line in data[:65536].decode("utf-8", "replace").splitlines() if line.strip()][:CONLLU_LINES]
    comments = any(line.startswith(("# sent_id", "# text =", "# text=")) for line in lines)
    words = any(len(fields := line.split("\t")) == 10 and fields[0] == "1" for line in lines)
    if not (comments or words):
        return None
    option = spoken_value(None, "word_format", "conllu", "--word-format")
    return f"it looks like a CoNLL-U treebank: read it as one with {option} (or name it .conllu)"

"""What ``featx predict`` reads: the corpus as ``featx extract`` reads it, with the bundle's text (and pair)
columns, its ids, or a word probe's sentences; each refusal worded for predict (its options, not extract's)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..extraction import Corpus, read_corpus
from ..options import Placeholder, on_command_line, spoken_value
from .config import PredictConfig
from .probe import Probe

ID_ERRORS = ("appears twice", "has an empty id")  # read_corpus's refusals of an id column's values


def _columns(config: PredictConfig, probe: Probe) -> tuple[str, str | None]:
    extraction = probe.extraction
    text_col = config.text_col or extraction.get("text_col") or "text"
    pair_col = None
    if extraction.get("pair_mode"):
        pair_col = config.text_pair_col or extraction.get("text_pair_col")
        if not pair_col:
            raise InputError(
                "this bundle was fitted on sentence pairs", "name the second text's column with --text-pair-col"
            )
    elif config.text_pair_col:
        raise InputError("--text-pair-col: this bundle was fitted on single texts", "leave --text-pair-col out")
    return str(text_col), pair_col


def read_input(config: PredictConfig, probe: Probe) -> tuple[Corpus, str, str | None]:
    """The corpus (read as ``featx extract`` reads it, every check first), its text and pair columns."""
    if probe.level in ("word", "arc"):
        return _read_words(config, probe), "text", None
    if config.word_format is not None or config.columns is not None:
        raise InputError(
            "--word-format and --columns apply to word probes, and this bundle predicts a label per text",
            "leave them out",
        )
    text_col, pair_col = _columns(config, probe)
    _refuse_words(config, text_col)
    return _read_table(config, probe, text_col, pair_col), text_col, pair_col


def _refuse_words(config: PredictConfig, text_col: str) -> None:
    """A word input (a CoNLL-U file, JSON Lines of tokens) given to a bundle of a sentence label: said as such,
    not as the table reader's 'line 3 has 4 fields', whose hint is to read it as words (which this bundle cannot)."""
    from ..extraction import word_format

    fmt = None if str(config.corpus) == "-" else word_format(config.corpus, None, None)
    if fmt is not None:
        raise InputError(
            f"{config.corpus} is a {fmt} file of words, and this bundle predicts a label per text",
            _TABLE_HINT.format(text_col=text_col),
        )


_TABLE_HINT = "give a table of texts (CSV, TSV, JSON Lines or Parquet) with the column '{text_col}'"


def _read_table(config: PredictConfig, probe: Probe, text_col: str, pair_col: str | None = None) -> Corpus:
    """The corpus table, read as ``featx extract`` reads it, its ids from ``--id-col``, else (without
    ``--row-ids``) from the bundle's id column when the table has it, else row numbers; an empty text is refused
    with predict's own advice (every row gets a prediction, and predict has no ``--skip-empty``), and a repeated or
    empty id of the bundle's id column with the options that choose other ids."""
    default = None if config.row_ids or config.id_col else (str(probe.extraction.get("id_col") or "") or None)
    try:
        return read_corpus(
            str(config.corpus), text_col=text_col, id_col=config.id_col, encoding=config.encoding, sep=config.sep,
            pair_col=pair_col, default_id_col=default,
        )  # fmt: skip
    except InputError as error:
        if pair_col is None and (error.hint or "").startswith("sentence pairs?"):
            hint = (  # extract's advice to read the two columns as pairs: this bundle reads one text a row
                "this bundle was fitted on single texts: name the column to read with "
                f"{spoken_value(config, 'text_col', Placeholder('NAME'))} (a bundle fitted on sentence pairs reads "
                "two columns)"
            )
        elif "looks like a CoNLL-U treebank" in (error.hint or ""):  # on stdin: its advice to read words
            hint = "it looks like a CoNLL-U treebank, and this bundle predicts a label per text: "
            hint += _TABLE_HINT.format(text_col=text_col)
        elif "--skip-empty" in (error.hint or ""):
            hint = "fill them in, or leave those rows out: predict writes one prediction per row"
        elif default is not None and any(f"{what} in column '{default}'" in error.message for what in ID_ERRORS):
            hint = (
                f"the ids come from the bundle's id column '{default}': pass --row-ids to number the rows instead, "
                "or --id-col to name another column"
            )
        else:
            raise
        raise InputError(error.message, hint) from None


def _read_words(config: PredictConfig, probe: Probe) -> Corpus:
    """A word probe's sentences: a word input (CoNLL-U, --columns, JSON Lines of tokens) as extract reads it,
    else a table of texts, each split on whitespace into its words."""
    from ..extraction import check_no_table_columns, read_word_corpus, sentences_table, word_format

    if config.text_pair_col is not None:
        raise InputError("--text-pair-col: a word probe reads one sentence per row", "leave --text-pair-col out")
    stdin = str(config.corpus) == "-"
    fmt = (config.word_format if stdin else word_format(config.corpus, config.word_format, config.columns)) or None
    if fmt is not None and stdin:
        where = "CORPUS" if on_command_line() else "corpus"
        raise InputError(f"{fmt} input is read from a file, not stdin", f"give the file's path as {where}")
    if fmt is not None:
        check_no_table_columns(fmt, config.text_col, config.id_col)
        if config.row_ids:
            raise InputError(
                f"--row-ids numbers the rows of a table of texts; this is {fmt} input, whose sentences are named by "
                "the file itself",
                "leave --row-ids out",
            )
        return read_word_corpus([Path(str(config.corpus))], fmt, config.columns, config.encoding)
    corpus = _read_table(config, probe, config.text_col or "text")
    corpus.words = sentences_table([text.split() for text in corpus.texts])
    corpus.notes.append(
        "words: each text split on whitespace (a CoNLL-U file or JSON Lines of tokens gives the words themselves)"
    )
    return corpus


__all__ = ["read_input"]

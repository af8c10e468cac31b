"""One ``Corpus`` of sentences from one or more word input files (``treebank.py`` reads each file).

Each sentence is an ordinary row (text: ``# text`` or its words joined; id: its ``sent_id``; split: the one
its file's name gives, when several files are read); its words go to ``corpus.words`` (a ``WordTable``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...io import decode_text, label_column, missing_markers
from ...options import spoken
from ...store import HEAD_UNKNOWN
from .corpus import Corpus
from .treebank import (
    Sentence,
    WordTable,
    parse_columns,
    read_columns,
    read_conllu,
    read_token_jsonl,
    split_of,
    tree_problem,
)


def _read_file(path: Path, fmt: str, columns: str | None, encoding: str) -> tuple[list[Sentence], bytes]:
    if not path.is_file():
        raise InputError(
            f"input file {path} does not exist" if not path.exists() else f"{path} is not a file",
            "give the path of a word input file (CoNLL-U, a --columns file, JSON Lines of tokens)",
        )
    raw = path.read_bytes()
    text = decode_text(raw, path, encoding).removeprefix("\ufeff")  # a byte order mark is not part of line 1
    if fmt == "conllu":
        sentences = read_conllu(path, text)
    elif fmt == "columns":
        sentences = read_columns(path, text, parse_columns(columns))
    else:
        sentences = read_token_jsonl(path, text)
    if not sentences:
        raise InputError(f"{path} holds no sentences", f"give a {fmt} file with at least one sentence")
    return sentences, raw


def _check_words(sentence: Sentence) -> None:
    if not sentence.forms:
        raise InputError(f"{sentence.where}: the sentence has no words", "leave empty sentences out of the file")
    problem = tree_problem(sentence)
    if problem:
        named = f" (sent_id {sentence.sent_id})" if sentence.sent_id else ""
        raise InputError(
            f"{sentence.where}{named}: {problem}",
            "each word's head leads to the root (0); fix the sentence's HEAD column",
        )
    for position, form in enumerate(sentence.forms, start=1):
        if not form.strip():
            raise InputError(
                f"{sentence.where}: word {position} of the sentence is empty",
                "every word needs at least one visible character",
            )


def _ids(sentences: list[Sentence], stems: list[str]) -> list[str]:
    """``sent_id`` where given, else ``<file stem>-<sentence number>``; unique over every file."""
    ids: list[str] = []
    seen: dict[str, str] = {}  # id -> where it was first seen
    numbers: dict[str, int] = {}  # file stem -> sentences so far
    for sentence, stem in zip(sentences, stems, strict=False):
        numbers[stem] = numbers.get(stem, 0) + 1
        value = sentence.sent_id.strip() if sentence.sent_id and sentence.sent_id.strip() else f"{stem}-{numbers[stem]}"
        if value in seen:
            raise InputError(
                f"sentence id '{value}' appears twice ({seen[value]} and {sentence.where})",
                'sentence ids (# sent_id, "id") must be unique over every input file',
            )
        seen[value] = sentence.where
        ids.append(value)
    return ids


def _word_table(sentences: list[Sentence], markers: frozenset[str]) -> WordTable:
    lengths = np.array([len(sentence.forms) for sentence in sentences], dtype=np.int64)
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    columns = list(dict.fromkeys(name for sentence in sentences for name in sentence.labels))
    labels = {}
    for name in columns:
        values = [value for sentence in sentences for value in sentence.labels.get(name, [""] * len(sentence.forms))]
        labels[name] = label_column(name, values, markers)
    heads = np.concatenate(
        [
            np.asarray(sentence.heads if sentence.heads is not None else [HEAD_UNKNOWN] * len(sentence.forms), np.int32)
            for sentence in sentences
        ]
    )
    forms = [form for sentence in sentences for form in sentence.forms]
    return WordTable(offsets=offsets, forms=forms, heads=heads, labels=labels)


def _refuse_repeats(paths: list[Path]) -> None:
    """One file named twice (a shell glob and its name, say) would give each of its sentences twice."""
    seen: set[Path] = set()
    for path in paths:
        resolved = path.resolve()
        if resolved in seen:
            raise InputError(f"{path} is given twice", "name each input file once")
        seen.add(resolved)


def combined_sha256(digests: list[str]) -> str:
    """The corpus digest of several input files (one file: its own sha256)."""
    return digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()


def read_word_corpus(
    paths: list[Path],
    fmt: str,
    columns: str | None = None,
    encoding: str = "utf-8",
    missing_labels: str | None = "empty",
) -> Corpus:
    """Read and check every file (before any model is loaded) into one ``Corpus`` with ``words``."""
    paths = [Path(path) for path in paths]
    _refuse_repeats(paths)
    sentences, stems, splits, digests = [], [], [], []
    for path in paths:
        read, raw = _read_file(path, fmt, columns, encoding)
        sentences += read
        stems += [path.stem] * len(read)
        splits += [split_of(path)] * len(read)
        digests.append(hashlib.sha256(raw).hexdigest())
    for sentence in sentences:
        _check_words(sentence)
    several = [sentence.sent_id or sentence.where for sentence in sentences if sentence.roots > 1]
    markers = missing_markers(missing_labels)
    sentence_columns = list(dict.fromkeys(name for sentence in sentences for name in sentence.sentence_labels))
    split = splits if len(paths) > 1 else None
    if "split" in sentence_columns:  # a JSON Lines "split" key names each sentence's split itself
        sentence_columns.remove("split")
        split = [
            sentence.sentence_labels.get("split", "").strip().lower() or fallback
            for sentence, fallback in zip(sentences, splits, strict=False)
        ]
    labels = {
        name: label_column(name, [sentence.sentence_labels.get(name, "") for sentence in sentences], markers)
        for name in sentence_columns
    }
    sha256 = combined_sha256(digests)
    corpus = Corpus(
        path=paths[0],
        texts=[sentence.text or " ".join(sentence.forms) for sentence in sentences],
        ids=_ids(sentences, stems),
        text_col="text",
        id_col="sent_id",
        labels=labels,
        split=split,
        sha256=sha256,
    )
    corpus.words = _word_table(sentences, markers)
    if several:
        corpus.notes.append(
            f"warning: {len(several)} sentence(s) have several roots (head 0), first {several[0]}: "
            "read as given (the --arcs probes leave root words out)"
        )
    if len(paths) > 1:
        counts = {name: splits.count(name) for name in dict.fromkeys(splits)}
        corpus.notes.append(
            "splits from the file names: " + ", ".join(f"{name} {n} sentences" for name, n in counts.items())
        )
    return corpus


def read_input(config) -> Corpus:
    """The corpus of an ``ExtractConfig``: a table of texts (``corpus.py``), or word input files."""
    from ..checks import is_word_input
    from .corpus import read_corpus
    from .templates import other_columns, prompted_label_note
    from .treebank import word_format

    if not is_word_input(config):
        corpus = read_corpus(
            config.corpus,
            config.text_col,
            config.id_col,
            config.skip_empty,
            config.encoding,
            config.sep,
            config.missing_labels,
            pair_col=config.text_pair_col,
            max_bytes=config.max_corpus_bytes,
            keep_cols=other_columns(config),
            limit_flag=spoken(config, "max_corpus_bytes"),
        )
        notes = (prompted_label_note(config.template, config.text_col, label) for label in corpus.labels)
        corpus.label_notes += [note for note in notes if note]
        return corpus
    fmt = word_format(config.corpus, config.word_format, config.columns)
    assert fmt is not None  # is_word_input: a word format was given or recognised
    return read_word_corpus(
        [config.corpus, *config.more_corpora],
        fmt,
        config.columns,
        config.encoding,
        config.missing_labels,
    )

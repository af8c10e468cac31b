"""``featx.deploy.predict``: a bundle's predictions for every row of a corpus, written as CSV, TSV or JSON Lines.

The corpus is read as ``featx extract`` reads it; the texts are encoded in chunks of ``commit_rows`` rows
(the encoder run only up to the probe's highest layer), each chunk's predictions appended to a partial file
beside the output whose first line is the run's key (the bundle's weights digest, the corpus's sha256 and
the options that change the output). A run stopped part-way resumes from the rows that file holds; when every
row is predicted the output is written through a temporary file and renamed into place, and the partial file
removed. A run that fails leaves no output file. ``output="-"`` writes CSV to standard output instead, at the
end, with no partial file (nothing to resume).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..extraction import Corpus
from ..io import corpus_stem
from ..options import Placeholder, keywords_of, on_command_line, spoken, spoken_value
from ..safe_files import (
    check_overwrite,
    check_writable,
    is_predictions_file,
    refuse_existing,
    same_file,
    writing,
)
from .arc_plan import SELECTOR
from .arc_predict import arc_frame, arc_index, arc_score_line, arc_truth, check_arc_input, chunk_scores, item_offsets
from .bundle import load
from .config import PredictConfig
from .partial import append, resume
from .predict_inputs import read_input
from .probe import Probe
from .table import STDOUT, check_scoring, fitted_corpus_note, output_frame, score_line, write_frame

if TYPE_CHECKING:
    from ..extraction import WordTable

PARTIAL_SUFFIX = ".partial"


@dataclass
class PredictResult:
    """What ``predict`` did: the file written, its rows, the rows resumed from a partial run, and notes."""

    path: Path
    n_rows: int
    resumed: int = 0
    score: str | None = None  # "accuracy 0.912 on 872 labelled rows" with --label
    notes: list[str] = field(default_factory=list)
    unit: str = "rows"  # what a prediction is of: rows, or words (a word probe)
    # under the score: the corpus is the one the probe was fitted on, so the score is not held out
    score_note: str | None = None
    truncated: int | None = None  # texts cut at the bundle's max_length in this run (None: a word or arc probe)
    max_length: int | None = None  # the bundle's max_length, as extract recorded it

    @property
    def to_stdout(self) -> bool:
        """Whether the predictions went to standard output (``-o -``)."""
        return str(self.path) == STDOUT

    def summary(self) -> list[str]:
        """The lines ``featx predict`` prints (to standard error when the predictions hold standard output)."""
        lines = list(self.notes)
        if self.resumed:
            lines.append(f"resumed: {self.resumed} of {self.n_rows} {self.unit} were already predicted")
        if self.score:
            lines.append(self.score)
        if self.score_note:
            lines.append(self.score_note)
        what = {"words": "word ", "arcs": "arc "}.get(self.unit, "") + (
            "prediction" if self.n_rows == 1 else "predictions"
        )
        where = "standard output" if self.to_stdout else self.path
        return lines + [f"wrote {self.n_rows} {what} to {where}{self._truncation()}"]

    def _truncation(self) -> str:
        """How many texts were cut at the bundle's maximum length, as featx extract counts them in its summary (of
        the rows predicted by this run, when it resumed)."""
        if self.truncated is None:
            return ""
        at = f" at {self.max_length} tokens" if self.max_length else ""
        counted = f", of the {self.n_rows - self.resumed} rows predicted by this run" if self.resumed else ""
        return f" ({self.truncated} truncated{at}{counted})"


def _check_options(config: PredictConfig, probe: Probe) -> None:
    if config.threshold is not None and (probe.classes is None or len(probe.classes) != 2 or not probe.head.has_proba):
        what = "a regression probe" if probe.classes is None else f"{len(probe.classes)} classes"
        if probe.classes is not None and len(probe.classes) == 2:
            what = f"a {probe.head.classifier} head without probabilities"
        raise InputError(
            f"--threshold applies to a binary probe with probabilities, and this bundle has {what}",
            "leave --threshold out" + (", or use --top-k" if probe.classes and len(probe.classes) > 2 else ""),
        )
    if config.top_k is not None and probe.classes is None:
        raise InputError("--top-k applies to class labels, and this bundle predicts values", "leave --top-k out")


OUTPUT_SUFFIXES = (".csv", ".tsv", ".jsonl")


def _output(config: PredictConfig, corpus: Path) -> Path:
    if config.output is not None:
        return Path(config.output)
    if str(corpus) == "-":
        raise InputError(
            f"reading the corpus from stdin needs {spoken_value(None, 'output', Placeholder('FILE'), '-o')} (or "
            f"{spoken_value(None, 'output', '-', '-o')} for standard output)",
            f"e.g. {_predict_call('-', 'out.csv')}",
        )
    return corpus.with_name(corpus_stem(corpus) + ".predictions.csv")


def _key(probe: Probe, corpus: Corpus, config: PredictConfig, text_col: str, pair_col: str | None) -> dict:
    """What a partial file's rows depend on: the bundle (its weights and every extraction setting), the texts
    as read (so any option that changes them, an encoding, a separator, columns, changes the key), the
    reading options themselves and the device (its dtype may change the features)."""
    weights = probe.info.get("weights_sha256") or (probe.path and str(probe.path.resolve()))
    return {
        "bundle": weights,
        "bundle_settings": _digest([probe.extraction, probe.spec.kind, list(probe.spec.layers), probe.pooling]),
        "corpus_sha256": corpus.sha256,
        "texts_sha256": _texts_digest(probe, corpus),
        "rows": len(corpus),
        "text_col": text_col,
        "pair_col": pair_col,
        "id_col": corpus.id_col,
        "reading": [config.encoding, config.sep, config.word_format, config.columns],
        "device": [config.device, bool(config.trust_remote_code)],
        "output_kind": "scores",
        **_word_key(probe, corpus),
    }


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _texts_digest(probe: Probe, corpus: Corpus) -> str:
    """A sha256 of what is predicted: the texts and second texts read, or a word probe's words."""
    digest = hashlib.sha256()
    words = _words(probe, corpus)
    parts = [corpus.texts, corpus.pair_texts or []] if words is None else [list(words.forms)]
    for part in parts:
        for text in part:
            digest.update(str(text).encode("utf-8", "surrogatepass") + b"\0")
        digest.update(b"\1")
    if words is not None:
        digest.update(np.asarray(words.offsets, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _word_key(probe: Probe, corpus: Corpus) -> dict:
    """A word or arc probe's part of the resume key: the level (and kind of arcs) and the words counted."""
    words = _words(probe, corpus)
    if words is None:
        return {}
    key = {"level": probe.level, "arcs": probe.arcs, "words": int(words.offsets[-1])}
    return key | ({"head_rows": "head, score_arc, p_head"} if probe.arcs == "head" else {})  # 3 numbers a word


def _words(probe: Probe, corpus: Corpus) -> WordTable | None:
    """The sentences' words a word probe predicts (every corpus it reads has them); None for a sentence probe."""
    if probe.level not in ("word", "arc"):
        return None
    assert corpus.words is not None, "a word probe's corpus is read with its words (predict_inputs.read_input)"
    return corpus.words


def _overrides(config: PredictConfig) -> dict[str, Any]:
    """The extraction settings a prediction takes from the user rather than the bundle."""
    overrides: dict[str, Any] = {"batch_size": config.batch_size, "device": config.device}
    if config.model is not None:  # the bundle's model in another place, checked against the bundle's sha256
        overrides["model"] = str(config.model)
    if config.trust_remote_code:  # the user's own flag, never the bundle's record
        overrides["trust_remote_code"] = True
    return overrides


def _chunk_scores(probe: Probe, texts: list, pairs: list[str] | None, config: PredictConfig, cut=None) -> np.ndarray:
    """Class probabilities (or margins, or values as one column) of one chunk of rows (a word probe: of every
    word of the chunk's sentences, ``texts`` their lists of words); ``cut`` gets whether each text was truncated."""
    X = probe.features(texts, pairs, **_overrides(config), **({} if cut is None else {"truncated": cut}))
    if probe.classes is None:
        return probe.scores_features(X)[:, None]
    return probe.predict_proba_features(X) if probe.head.has_proba else probe.scores_features(X)


def _predict_call(corpus: str, output: str) -> str:
    """``featx predict model.featx CORPUS -o predictions.csv`` on the command line, the call of
    ``featx.deploy.predict`` from Python (``CORPUS``: a corpus file)."""
    example = spoken_value(None, "output", output, "-o")
    if on_command_line():
        return f"featx predict model.featx {corpus} {example}"
    corpus = "corpus.csv" if corpus == "CORPUS" else corpus
    return f"featx.deploy.predict('model.featx', corpus={corpus!r}, {example})"


@keywords_of(PredictConfig)  # from Python, a message names the keyword given (top_k=0), the CLI the flag
def predict(config: PredictConfig | str | Path | None = None, **options: Any) -> PredictResult:
    """Predict every row of a corpus with a bundle: ``predict("m.featx", corpus="new.csv", output="p.csv")``;
    a word probe predicts every word of every sentence."""
    config = PredictConfig.build(config, **options)
    if config.bundle is None or config.corpus is None:
        raise InputError("predict needs a bundle and a corpus", _predict_call("CORPUS", "predictions.csv"))
    probe = load(config.bundle)
    _check_options(config, probe)
    corpus, text_col, pair_col = read_input(config, probe)
    if probe.level == "arc":
        check_arc_input(probe, corpus.words, config.corpus, config, corpus.notes)
        truth = arc_truth(probe, corpus.words, config.label)
    else:
        truth = check_scoring(corpus, config.label, probe)
    output = _output(config, Path(str(config.corpus)))
    to_stdout = str(output) == STDOUT
    if not to_stdout:
        refuse_existing([output], config.overwrite)
        _check_output(output, config)  # a folder, or one of this run's inputs: refused before any work
    if config.overwrite and not to_stdout:
        check_overwrite(output, "predictions file", is_predictions_file)
    partial = None if to_stdout else output.with_name(output.name + PARTIAL_SUFFIX)
    notes = list(corpus.notes)
    key = _key(probe, corpus, config, text_col, pair_col)
    words = _words(probe, corpus)
    offsets = None if words is None else _item_offsets(probe, words)
    items = len(corpus) if offsets is None else int(offsets[-1])
    width = None if probe.level == "arc" else len(probe.classes) if probe.classes is not None else 1
    done = [] if partial is None else resume(partial, key, notes, items, width)
    first = _first_row(offsets, len(done))
    if first is None:  # a word run commits whole sentences: anything else is not its file
        done, first = [], 0
    resumed = len(done)
    scores, cut = _run_chunks(probe, corpus, config, partial, key, done, first)
    frame = _frame(probe, words, corpus.ids, np.asarray(scores, dtype=np.float64), config)
    with writing(*(("standard output", "free disk space or send the output elsewhere") if to_stdout else (output,))):
        write_frame(frame, output)
        if partial is not None:
            partial.unlink(missing_ok=True)
    score = arc_score_line(probe, frame, truth, words) if probe.level == "arc" else score_line(probe, frame, truth)
    unit = "rows" if words is None else ("arcs" if probe.level == "arc" and probe.arcs != SELECTOR else "words")
    if words is not None:
        notes.append(f"{len(frame)} {unit} in {len(corpus)} sentences")
    seen = fitted_corpus_note(probe, corpus, frame, truth)
    max_length = probe.extraction.get("max_length")
    max_length = int(max_length) if isinstance(max_length, int) else None
    return PredictResult(output, len(frame), resumed, score, notes, unit, seen, cut, max_length)


def _item_offsets(probe: Probe, words: WordTable) -> np.ndarray:
    """Where each sentence's predictions start: its words, or (a relation labeller) its arcs."""
    return item_offsets(probe, words) if probe.level == "arc" else np.asarray(words.offsets)


def _frame(probe: Probe, words: WordTable | None, ids: list[str], scores: np.ndarray, config: PredictConfig):
    """The predictions table: one row per corpus row, word, or arc."""
    if probe.level == "arc":
        assert words is not None
        return arc_frame(probe, arc_index(probe, words, ids), scores, words, config.top_k, config.threshold)
    index = {"id": ids} if words is None else _word_index(words, ids)
    return output_frame(probe, index, scores, config.top_k, config.threshold)


def _check_output(output: Path, config: PredictConfig) -> None:
    """Before any row is predicted: the output is a file that is none of the inputs, in a writable folder."""
    given, named = spoken_value(None, "output", str(output), "-o"), spoken(None, "output", "-o")
    if output.is_dir():
        example = spoken_value(None, "output", "predictions.csv", "-o")
        raise InputError(f"{given} is a folder", f"{named} names the predictions file, e.g. {example}")
    folder = output.absolute().parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(
            f"{given}: its output folder {output.parent} {what}", f"create it first, or choose another {named} path"
        )
    if output.suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(
            f"{given}: featx predict writes .csv, .tsv or .jsonl (by the file's ending)",
            f"name the predictions file with one of them, e.g. "
            f"{spoken_value(None, 'output', output.with_suffix('.csv').name, '-o')}",
        )
    inputs = [Path(str(config.corpus)), Path(str(config.bundle))]
    if any(same_file(output, path) for path in inputs):
        raise InputError(f"{given} is an input of this run (its corpus)", f"write the predictions to another {named}")
    check_writable(output)


def _first_row(item_offsets: np.ndarray | None, done: int) -> int | None:
    """The row a run resumes at when ``done`` predictions are held: that row, or (a word or arc probe, whose
    predictions are its words or arcs, sentence ``s``'s from ``item_offsets[s]``) the sentence after the last whole
    one; None when ``done`` ends mid-sentence."""
    if item_offsets is None:
        return done
    offsets = np.asarray(item_offsets)
    row = int(np.searchsorted(offsets, done))
    return row if row < len(offsets) and int(offsets[row]) == done else None


def _word_index(words: WordTable, ids: list[str]) -> dict[str, list]:
    """Each word's sentence id, its position in the sentence (from 1) and its form."""
    offsets = np.asarray(words.offsets)
    counts = np.diff(offsets)
    return {
        "id": np.repeat(np.asarray(ids, dtype=object), counts).tolist(),
        "word": (np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], counts) + 1).tolist(),
        "form": list(words.forms),
    }


def _chunk(probe: Probe, corpus: Corpus, config: PredictConfig, start: int, stop: int, cut: list) -> list:
    """The score rows of rows (sentences) ``start:stop``; ``cut`` gets whether each text was truncated."""
    words = _words(probe, corpus)
    if probe.level == "arc":
        return chunk_scores(probe, words, start, stop, _overrides(config))
    if words is None:
        texts: list = corpus.texts[start:stop]
        pairs = corpus.pair_texts[start:stop] if corpus.pair_texts is not None else None
        return _chunk_scores(probe, texts, pairs, config, cut).tolist()
    return _chunk_scores(probe, [words.sentence(row) for row in range(start, stop)], None, config).tolist()


def _run_chunks(
    probe, corpus: Corpus, config: PredictConfig, partial: Path | None, key: dict, done: list, first: int
) -> tuple[list, int | None]:
    """The scores of rows ``first`` on, ``commit_rows`` rows (a word probe: sentences) a chunk, each chunk
    appended to the partial file (if any) as it is done; ``done``: the scores already held. With them, how many of
    the texts encoded were truncated (None for a word or arc probe, whose sentences run whole)."""
    from ..progress import progress_bar

    words = _words(probe, corpus)
    scores, step = list(done), int(config.commit_rows)
    cut: list[bool] = []  # each encoded text's truncation (a sentence probe's)
    unit = "rows" if words is None else "sentences"
    with progress_bar(total=len(corpus), initial=first, unit=unit, disable=not config.progress, desc="predict") as bar:
        for start in range(first, len(corpus), step):
            stop = min(start + step, len(corpus))
            chunk = _chunk(probe, corpus, config, start, stop, cut)
            if partial is not None:
                append(partial, key, chunk, fresh=start == 0)
            scores.extend(chunk)
            bar.update(stop - start)
    return scores, (None if words is not None else int(sum(cut)))


__all__ = ["PARTIAL_SUFFIX", "PredictResult", "predict"]

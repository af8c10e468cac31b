"""A corpus file gone after some of its cells were done. Its done cells stand: a cell's fingerprint takes the
corpus's bytes as its features file recorded them (``plan.recorded_corpus``), and a probe reads the features
file, not the corpus. Only an extraction not done needs the file: ``check_missing`` refuses a run (and its dry
run) before any work when one does, and ``missing_corpora`` tells ``study status`` which files are gone and
which extractions would need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .records import DONE, cell_status

if TYPE_CHECKING:
    from .config import CorpusSpec
    from .plan import StudyPlan


def missing_corpora(plan: StudyPlan) -> list[tuple[CorpusSpec, list[str]]]:
    """Each corpus of ``plan`` whose file is gone, with the keys of its extractions not done (which need it)."""
    gone: dict[str, tuple[CorpusSpec, list[str]]] = {}
    for cell in plan.extractions:
        if cell.corpus.path.is_file():
            continue
        _, needing = gone.setdefault(cell.corpus.name, (cell.corpus, []))
        if cell_status(cell.task) != DONE:
            needing.append(cell.task.key)
    return list(gone.values())


def check_missing(plan: StudyPlan) -> None:
    """Refuse the run when an extraction not done reads a corpus file that is gone, at that corpus's ``path``."""
    for corpus, needing in missing_corpora(plan):
        if needing:
            verb = "needs" if len(needing) == 1 else "need"
            raise plan.config.source.error(
                ("corpora", corpus.entry, "path"),
                f"corpus file {corpus.path} does not exist; {', '.join(needing)} {verb} it",
                "give the file back at that path (or the right path); the cells of it already done do not need it",
            )


def missing_lines(plan: StudyPlan) -> list[str]:
    """``study status``'s lines on the corpus files that are gone: what a run would still need them for."""
    lines = []
    for corpus, needing in missing_corpora(plan):
        needs = (
            f"study run needs it for {', '.join(needing)}"
            if needing
            else "every extraction of it is done (study run needs it only for an extraction not done)"
        )
        lines.append(f"corpus '{corpus.name}': its file {corpus.path} is missing; {needs}")
    return lines

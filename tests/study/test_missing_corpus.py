"""A corpus file gone after its cells were done: ``study status`` and ``study report`` work from the stored results
(status says which files are missing and which cells would need them; a failed cell stays failed, with its
error), and ``study run`` (and its dry run) refuses before any work only when an extraction of that corpus is not
done: its done cells stand, and a probe reads its features file, not the corpus."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from support.study_files import to_toml

import featx.study
from featx.cli import main
from featx.errors import InputError
from featx.extraction import file_sha256
from featx.study.records import read_state

FAILED = {"extract/tiny/bad", "extract/rand/bad", "probe/tiny/bad/label", "probe/rand/bad/label"}


@contextmanager
def moved_away(*paths: Path) -> Iterator[None]:
    """The files renamed away for the block (the session's corpora are shared: put back whatever happens)."""
    for path in paths:
        path.rename(path.with_name(path.name + ".away"))
    try:
        yield
    finally:
        for path in paths:
            path.with_name(path.name + ".away").rename(path)


@pytest.mark.slow  # the done_study fixture: a whole study (~1.8 s)
def test_status_and_report_work_from_the_stored_results_once_a_corpus_file_is_gone(done_study, study_corpora, tmp_path):
    study, result, _ = done_study
    path = tmp_path / "study.toml"
    path.write_text(to_toml(study))
    sents, bad = study_corpora["sents"], study_corpora["bad"]
    with moved_away(sents, bad):
        shown = CliRunner().invoke(main, ["study", "status", str(path)])
        assert shown.exit_code == 0, shown.output
        assert "probe/tiny/sents/label: done  " in shown.output and "10 done, 0 pending, 4 failed" in shown.output
        # a failed cell stays failed, with its recorded error (its state keeps the corpus bytes it read)
        failed = read_state(result.plan.config.output, "extract/rand/bad") or {}
        assert failed["corpus_sha256"] == file_sha256(bad.with_name("bad.csv.away"))
        lines = {line.split(": ")[0]: line for line in shown.output.splitlines()}
        assert lines["extract/rand/bad"].startswith("extract/rand/bad: failed (corpus file missing)  ")
        assert lines["extract/rand/bad"].endswith(failed["error"]) and "text" in failed["error"]
        assert lines["probe/rand/bad/label"].startswith("probe/rand/bad/label: failed  ")
        assert lines["probe/rand/bad/label"].endswith("its extraction failed (extract/rand/bad)")
        assert f"corpus 'sents': its file {sents} is missing; every extraction of it is done" in shown.output
        assert (
            f"corpus 'bad': its file {bad} is missing; study run needs it for extract/tiny/bad, extract/rand/bad"
            in shown.output
        )
        report = CliRunner().invoke(main, ["study", "report", str(path), "--no-cells"])
        assert report.exit_code == 0, report.output
        assert f"study report: {result.plan.config.output / 'report.html'}" in report.output


@pytest.mark.slow  # the done_study fixture; the run again redoes only the failing cells (~0.5 s)
def test_a_run_needs_a_gone_corpus_only_for_its_extractions_not_done(done_study, study_corpora, tiny_model):
    study, result, _ = done_study
    output = result.plan.config.output
    sents = study_corpora["sents"]
    more = {**study, "models": [*study["models"], {"name": "more", "model": str(tiny_model), "max_length": 16}]}
    with moved_away(sents):
        for check in (featx.study.run, featx.study.dry_run):
            with pytest.raises(InputError) as caught:  # before any work: nothing of the new model recorded
                check(more)
            assert f"[[corpora]] #1 path: corpus file {sents} does not exist; extract/more/sents needs it" in (
                caught.value.message
            )
            assert (
                "already done do not need it" in caught.value.hint and read_state(output, "extract/more/sents") is None
            )
        probed = featx.study.dry_run({**study, "probe": {**study["probe"], "n_bootstrap": 100}}).set_index("cell")
        assert probed.loc["extract/tiny/sents", "status"] == "done"  # its probes read the features file
        assert probed.loc["probe/tiny/sents/label", "status"] == "pending"
        lines: list[str] = []
        again = featx.study.run(study, echo=lines.append)
    assert "extract/tiny/sents: up to date" in lines and "probe/rand/sents/topic: up to date" in lines
    assert again.exit_code == 1 and set(again.failed) == FAILED  # the bad corpus's cells, failing as before
    pd.testing.assert_frame_equal(again.results, result.results)

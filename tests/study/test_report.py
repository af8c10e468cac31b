"""``featx study report``: the study's page over its results, each done cell's own report written and linked,
and rewritten only when its results are newer."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from support.study_files import to_toml

from featx.cli import main
from featx.study import write_report


@pytest.mark.slow
def test_the_study_page_links_each_cells_own_report(done_study, tmp_path):
    study, result, _ = done_study
    output = result.plan.config.output
    lines: list[str] = []
    page = write_report(study, echo=lines.append)
    assert page == output / "report.html" and page.is_file()
    html = page.read_text()
    cells = set(zip(result.results.model, result.results.corpus, result.results.label, strict=True))
    own = {f"{model}/{corpus}/{label}.report.html" for model, corpus, label in cells}
    assert own <= set(re.findall(r'href="([^"]+\.report\.html)"', html))
    assert all((output / path).is_file() for path in own) and len(lines) == len(cells)
    assert html.count("plotly.js v") <= 1  # the plotly bundle once, whatever the figures
    assert "Grouped corpora: sents by doc." in html  # [[corpora]] group: which corpora kept their groups whole
    reused = (output / "rand/sents/label.report.html").read_text()  # the lexical baseline fitted beside tiny's
    assert "fitted beside model tiny&#x27;s probe, tiny/sents/label.probe.csv; reused, not refitted" in reused
    stamps = {path: (output / path).stat().st_mtime_ns for path in own}
    again: list[str] = []
    write_report(study, echo=again.append)
    assert again == [] and stamps == {path: (output / path).stat().st_mtime_ns for path in own}
    path = tmp_path / "study.toml"
    path.write_text(to_toml(study))
    ran = CliRunner().invoke(main, ["study", "report", str(path), "--no-cells"])
    assert ran.exit_code == 0 and f"study report: {page}" in ran.output, ran.output


@pytest.mark.slow
def test_no_cells_page_is_written_through_a_link_planted_at_a_cell_folder(done_study, tmp_path):
    import shutil

    from featx.errors import StoreError

    study, result, _ = done_study
    output = tmp_path / "out"
    shutil.copytree(result.plan.config.output, output)
    for page in output.rglob("*.report.html"):
        page.unlink()
    elsewhere = tmp_path / "elsewhere"
    (output / "tiny/sents").rename(elsewhere)
    (output / "tiny/sents").symlink_to(elsewhere)
    with pytest.raises(StoreError, match="out/tiny/sents is a symbolic link"):
        write_report({**study, "study": {**study["study"], "output": str(output)}})
    assert list(output.rglob("*.report.html")) == []


@pytest.mark.slow
def test_a_cell_page_that_cannot_be_written_offers_the_commands_own_way_out(done_study, tmp_path, monkeypatch):
    """The cells' pages have no path to choose: the hint names --no-cells (cells=False), not featx report's -o."""
    import shutil

    import featx.report
    from featx.errors import StoreError

    study, result, _ = done_study
    output = tmp_path / "out"
    shutil.copytree(result.plan.config.output, output)
    for page in output.rglob("*.report.html"):
        page.unlink()

    def full_disk(results, output=None, **options):
        raise StoreError(f"cannot write {output}: No space left on device", "choose a writable path with -o")

    monkeypatch.setattr(featx.report, "write_report", full_disk)
    moved = {**study, "study": {**study["study"], "output": str(output)}}
    with pytest.raises(StoreError, match="No space left") as raised:
        write_report(moved)
    assert raised.value.hint.startswith("make ") and raised.value.hint.endswith("with cells=False")
    path = tmp_path / "study.toml"
    path.write_text(to_toml(moved))
    ran = CliRunner().invoke(main, ["study", "report", str(path)])
    assert ran.exit_code != 0 and "leave the cells' own pages out with --no-cells" in ran.output, ran.output
    assert "with -o" not in ran.output


def test_a_study_whose_probes_all_failed_says_so_not_run_it_first(tmp_path):
    """A study that ran but whose every probe failed (a group split across train and test, say) writes an empty
    results table: its report names the failed cells' place (``featx study status``), not "run the study first"."""
    from featx.errors import InputError
    from featx.study import RESULT_COLUMNS

    (tmp_path / "c.csv").write_text("text,label\na b,x\nc d,y\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.csv").write_text(",".join(RESULT_COLUMNS) + "\n")
    study = {"study": {"output": str(tmp_path / "out")}, "models": [{"name": "m"}],
             "corpora": [{"path": str(tmp_path / "c.csv")}]}  # fmt: skip
    with pytest.raises(InputError, match="no probe of the study is done") as caught:
        write_report(study)
    assert caught.value.hint.startswith("featx.study.status(study) shows each cell")  # from Python: the call
    assert "run the study first" not in caught.value.hint


@pytest.mark.parametrize("name", ["../victim/x.probe.csv", "/elsewhere/x.probe.csv"], ids=["parent", "absolute"])
def test_a_results_table_naming_a_file_outside_the_study_is_refused(tmp_path, monkeypatch, name):
    """The results table's ``results`` column names each cell's results file, relative to OUTPUT; one edited to
    lead outside (``..``) had its page written beside the file it names, an absolute one ended in a ValueError."""
    import featx.report
    from featx.errors import StoreError
    from featx.study import RESULT_COLUMNS

    (tmp_path / "c.csv").write_text("text,label\na b,x\nc d,y\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "x.probe.csv").write_text("features,label\n")
    row = {column: "" for column in RESULT_COLUMNS} | {"model": "m", "corpus": "c", "label": "label", "results": name}
    (tmp_path / "out" / "results.csv").write_text(",".join(RESULT_COLUMNS) + "\n" + ",".join(row.values()) + "\n")
    written: list = []
    monkeypatch.setattr(featx.report, "write_report", lambda results, output=None, **_: written.append(output))
    study = {"study": {"output": str(tmp_path / "out")}, "models": [{"name": "m"}],
             "corpora": [{"path": str(tmp_path / "c.csv")}]}  # fmt: skip
    with pytest.raises(StoreError, match="results table names a results file outside the study's folder") as caught:
        write_report(study)
    assert caught.value.hint.endswith("pages out with cells=False") and written == []
    assert not (tmp_path / "victim" / "x.report.html").exists()

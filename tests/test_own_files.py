"""featx.own_files: what a figure, table, page or record featx draws again is known by, and the refusal of
anything else at an output path (a user's file, a folder, a link), with nothing replaced."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from featx.errors import InputError
from featx.own_files import is_featx_figure, is_featx_page, json_of, refuse_foreign, table_with
from featx.report.figures.style import save


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """A featx figure in each format featx may write, one from plain matplotlib (as featx drew them before the
    mark), and images of another making."""
    folder = tmp_path_factory.mktemp("figures")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    ours = save(fig, folder / "ours.png", ("png", "svg", "pdf"))
    older = folder / "older.png"
    fig.savefig(older)
    plt.close(fig)
    theirs = [folder / "theirs.png", folder / "theirs.svg", folder / "theirs.pdf"]
    theirs[0].write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(64))  # a camera's, an editor's...
    theirs[1].write_text('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><title>Inkscape</title></svg>')
    theirs[2].write_bytes(b"%PDF-1.7\n" + bytes(64) + b"/Producer (LibreOffice)")
    return ours, older, theirs


def test_featx_figures_carry_the_mark_and_others_do_not(figures):
    ours, older, theirs = figures
    assert [is_featx_figure(path) for path in ours] == [True, True, True]
    assert b"featx" in ours[0].read_bytes()[:200] and is_featx_figure(older)  # drawn before the mark: matplotlib's
    assert [is_featx_figure(path) for path in theirs] == [False, False, False]
    assert b"<dc:date>" not in ours[1].read_bytes()  # an SVG still carries no date: the same figure, the same bytes


def test_tables_pages_and_records_are_known_by_their_header_title_and_command(tmp_path):
    (tmp_path / "t.csv").write_text("layer,lens_accuracy,x\n0,0.5,1\n")
    (tmp_path / "u.csv").write_text("text,label\nhello,pos\n")
    assert table_with("layer,lens_accuracy,")(tmp_path / "t.csv")
    assert not table_with("layer,lens_accuracy,")(tmp_path / "u.csv")
    (tmp_path / "p.html").write_text("<!DOCTYPE html>\n<html><head><title>featx report: x</title></head></html>")
    (tmp_path / "q.html").write_text("<!DOCTYPE html>\n<html><head><title>my notes</title></head></html>")
    assert is_featx_page(tmp_path / "p.html") and not is_featx_page(tmp_path / "q.html")
    (tmp_path / "r.json").write_text(json.dumps({"meta": {"command": "lens"}, "results": []}))
    (tmp_path / "s.json").write_text(json.dumps({"meta": {"command": "probe"}}))
    (tmp_path / "v.json").write_text("[[[")
    assert json_of("lens")(tmp_path / "r.json")
    assert not json_of("lens")(tmp_path / "s.json") and not json_of("lens")(tmp_path / "v.json")


def test_anything_but_featx_s_own_kind_is_refused_and_kept(figures, tmp_path):
    ours, _, theirs = figures
    refuse_foreign([ours[0], tmp_path / "missing.png"], "figure", is_featx_figure)  # its own, or nothing there
    (tmp_path / "folder.png").mkdir()
    (tmp_path / "link.png").symlink_to(ours[0])
    cases = {
        theirs[0]: "exists and is not a figure featx wrote: not replaced",
        tmp_path / "folder.png": "is a folder, not a figure featx wrote",
        tmp_path / "link.png": "is a symbolic link, not a figure featx wrote",
    }
    for path, message in cases.items():
        before = theirs[0].read_bytes()
        with pytest.raises(InputError, match=message) as raised:
            refuse_foreign([path], "figure", is_featx_figure)
        assert raised.value.hint.startswith("move it away, or choose another")
        assert theirs[0].read_bytes() == before
